"""Every purpose of an LLM request is defined once, and what follows from it agrees."""

from __future__ import annotations

from pathlib import Path

import pytest

from prettyplay_behave.llm.answers import UnparseableAnswer
from prettyplay_behave.llm.purposes import Purpose, Unreadable, docs_row
from prettyplay_behave.resources import templates_folder

ROOT = Path(__file__).resolve().parent.parent.parent


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
