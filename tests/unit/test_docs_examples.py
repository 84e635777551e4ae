"""The library files the docs show load as they are: their keywords what the format says, their
code passing the policy (a reader copies them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prettyplay_behave.cache import parse_steps
from prettyplay_behave.safety.step_code import check_code

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
PYTHON_BLOCK = re.compile(r"```python\n(# prettyplay step library .*?)```", re.DOTALL)


def libraries() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for number, block in enumerate(PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))):
            found.append((f"{page.name}#{number}", block))
    return found


@pytest.mark.parametrize(("where", "block"), libraries(), ids=[w for w, _ in libraries()])
def test_a_library_file_of_the_docs_loads(where: str, block: str) -> None:
    library = parse_steps(Path(where), block.encode(), check_code, named=False)
    assert library.entries, where


def test_the_docs_show_cache_examples() -> None:
    assert len(libraries()) >= 2
