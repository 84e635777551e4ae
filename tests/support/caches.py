"""Reading cache files in tests: the raw entries of a feature's step library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def steps(path: Path) -> list[dict[str, Any]]:
    """The raw entries of a cache file (format 2), as the file holds them."""
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == 2, document["format"]
    return list(document["steps"])


def filled(entry: dict[str, Any]) -> str:
    """The entry's sentence with its values put back (for an entry specific to values)."""
    sentence = entry["sentence"]
    for value in entry.get("values", []):
        sentence = sentence.replace("{}", value, 1)
    return sentence


def by_sentence(path: Path) -> dict[str, dict[str, Any]]:
    """The entries that serve every scenario, by their sentence (values put back)."""
    return {filled(e): e for e in steps(path) if "scenario" not in e}
