"""Corrupt per-feature cache files (format 2, as a project that has not migrated has them), each
read by a real behave run: a CacheError naming the file (and the line where there is one), and
every file byte-identical afterwards."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import BehaveProject
from tests.support.shop_steps import OPEN_SHOP

FEATURE = """\
Feature: {name}
  Scenario: Visit
    Given I open the shop
"""


def lines_of(raw: bytes) -> list[bytes]:
    return raw.splitlines(keepends=True)


def truncated(raw: bytes) -> tuple[bytes, str]:
    cut = b"".join(lines_of(raw)[:6])
    line = cut.count(b"\n") + 1
    return cut, f"the JSON ends early at line {line} (truncated?)"


def invalid_utf8(raw: bytes) -> tuple[bytes, str]:
    broken = raw.replace(b"I open the shop", b"I open the \xffshop")
    line = broken[: broken.index(b"\xff")].count(b"\n") + 1
    return broken, f"not valid UTF-8 at line {line}"


def conflict_markers(raw: bytes) -> tuple[bytes, str]:
    lines = lines_of(raw)
    ours = b"".join(lines[5:7])
    theirs = ours.replace(b'page.goto(\\"/\\")', b'page.goto(\\"/home\\")')
    merged = [*lines[:5], b"<<<<<<< HEAD\n", ours, b"=======\n", theirs, b">>>>>>> theirs\n"]
    return b"".join([*merged, *lines[7:]]), (
        "merge conflict markers at line 6; resolve the conflict (or delete the file to generate "
        "its entries again)"
    )


def unknown_format(raw: bytes) -> tuple[bytes, str]:
    document = json.loads(raw)
    document["format"] = 4
    return json.dumps(document, indent=2).encode(), (
        "cache format 4 is newer than this prettyplay reads (it reads formats 1, 2 and 3; upgrade "
        "prettyplay-behave to read this file)"
    )


def duplicate_entry(raw: bytes) -> tuple[bytes, str]:
    document = json.loads(raw)
    document["steps"] *= 2
    return json.dumps(document, indent=2).encode(), (
        "entry 2: duplicate of an earlier entry (action 'I open the shop')"
    )


def duplicate_key(raw: bytes) -> tuple[bytes, str]:
    text = raw.decode().replace('"kind": "action",', '"kind": "action",\n      "kind": "check",')
    return text.encode(), "the key 'kind' appears twice in one object"


CORRUPTIONS: dict[str, Callable[[bytes], tuple[bytes, str]]] = {
    "truncated": truncated,
    "invalid-utf8": invalid_utf8,
    "conflict": conflict_markers,
    "format": unknown_format,
    "duplicate-entry": duplicate_entry,
    "duplicate-key": duplicate_key,
}


def format_2(code: str) -> bytes:
    """A feature's file of format 2 with one entry, as prettyplay wrote them."""
    entry = {"code": code.rstrip("\n").split("\n"), "kind": "action", "origin": "generated",
             "sentence": "I open the shop"}  # fmt: skip
    document = {"format": 2, "steps": [entry]}
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def every_file(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_every_corrupt_cache_file_is_named_and_left_untouched(project: BehaveProject, shop) -> None:
    messages = {}
    for name, corrupt in CORRUPTIONS.items():
        project.write(f"features/{name}.feature", FEATURE.format(name=name))
        content, messages[name] = corrupt(format_2(OPEN_SHOP))
        path = project.cache_dir / f"{name}.feature.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    before = every_file(project.cache_dir)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", timeout=120)
    assert result.returncode == 1, result
    assert "0 scenarios passed, 0 failed, 6 error, 0 skipped" in result.output, result
    for name, message in messages.items():
        path = project.cache_dir.resolve() / f"{name}.feature.json"
        assert f"CacheError: {path}: {message}\n" in result.output, (name, result)
    # the run's end could not list the obsolete entries, and says why
    assert "obsolete entries unknown: " in result.output
    # nothing was written, renamed or added: not even the list of obsolete entries
    assert every_file(project.cache_dir) == before
