"""The entry schema is the one place an entry's fields are named: every attribute of an entry
(but its code and what its code takes) has its row there, and each of its keywords a row in the
docs' table of a library file's keywords."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from prettyplay_behave.cache import StepEntry
from prettyplay_behave.cache.schema import FIELDS, KEYWORDS

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "cache.md"


def test_every_field_of_an_entry_has_its_row_in_the_schema() -> None:
    attributes = {f.name for f in dataclasses.fields(StepEntry)} - {"code", "parameters"}
    assert {field.attribute for field in FIELDS} == attributes
    assert len(set(KEYWORDS)) == len(KEYWORDS)


def test_every_keyword_has_its_row_in_the_docs() -> None:
    rows = re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", DOCS.read_text(encoding="utf-8"), re.M)
    documented = {name.strip("`") for row in rows for name in row.split(", ")}
    assert set(KEYWORDS) <= documented
