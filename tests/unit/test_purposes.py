"""Every purpose of an LLM request is defined once, and what follows from it agrees."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from prettyplay_behave.llm.answers import UnparseableAnswer
from prettyplay_behave.llm.purposes import Purpose, Unreadable, docs_row
from prettyplay_behave.resources import templates_folder

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "prettyplay_behave"


def test_the_docs_table_of_purposes_is_made_from_their_definitions() -> None:
    docs = (ROOT / "docs" / "llm-providers.md").read_text(encoding="utf-8")
    for purpose in Purpose:
        assert docs_row(purpose) in docs, purpose
    assert docs.count("| `") >= len(Purpose)


@pytest.mark.parametrize("purpose", list(Purpose), ids=str)
def test_each_purpose_has_its_template_and_reads_nothing_from_garbage(purpose: Purpose) -> None:
    template = Path(templates_folder()) / purpose.template
    source = template.read_text(encoding="utf-8")
    assert "{% block system %}" in source and "{% block user %}" in source
    with pytest.raises(UnparseableAnswer):
        purpose.read("no answer here")
    assert (purpose.schema is None) == (purpose.unreadable is Unreadable.RECORDED)
    assert bool(purpose.degraded_event) == (purpose.unreadable is Unreadable.INCURABLE)


def test_no_module_but_the_definition_tells_purposes_apart() -> None:
    """Nothing compares a purpose with one by name or keys a table by one, but purposes.py:
    what a purpose does is read from its definition."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "purposes.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named = [
                part
                for part in _parts(node)
                if isinstance(part, ast.Attribute)
                and isinstance(part.value, ast.Name)
                and part.value.id == "Purpose"
                and part.attr.isupper()
            ]
            if named:
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    assert found == []


def _parts(node: ast.AST) -> list[ast.AST]:
    """The operands of a comparison and the keys of a dict literal."""
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Dict):
        return [key for key in node.keys if key is not None]
    return []
