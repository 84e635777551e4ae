"""The cache examples the docs show load as they are: the code passes the policy and its
parameters are what the entry says (a reader copies them)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from prettyplay_behave.cache import parse
from prettyplay_behave.safety.step_code import check_code

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for number, block in enumerate(JSON_BLOCK.findall(page.read_text(encoding="utf-8"))):
            if '"def step(' in block:
                found.append((f"{page.name}#{number}", block))
    return found


@pytest.mark.parametrize(("where", "block"), examples(), ids=[w for w, _ in examples()])
def test_a_cache_example_of_the_docs_loads(where: str, block: str) -> None:
    document = json.loads(block)
    if "format" not in document:  # one entry, shown on its own
        document = {"format": 2, "steps": [document]}
    library = parse(Path(where), json.dumps(document).encode(), check_code)
    assert library.entries, where


def test_the_docs_show_cache_examples() -> None:
    assert len(examples()) >= 2
