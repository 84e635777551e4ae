"""The cache files: format, addressing, validation on load, and safe writes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import filelock
import pytest

from prettyplay_behave import cache
from prettyplay_behave.cache import CacheEntry, CacheKey, CacheStore, load_file, locate, prune
from prettyplay_behave.errors import CacheError, CodePolicyError

TEST = "shop/checkout.feature::Buy a product"
OPEN_CODE = 'def step(page) -> None:\n    page.goto("/")'


def refuse_imports(code: str) -> None:
    """A stand-in for the code policy."""
    if "import" in code:
        raise CodePolicyError("imports are not allowed", line=1)


def store(tmp_path: Path, **options: Any) -> CacheStore:
    return CacheStore(tmp_path / "cache", refuse_imports, **options)


def entry(
    sentence: str, code: str = OPEN_CODE, origin: str = "generated", **key: Any
) -> CacheEntry:
    key.setdefault("test", TEST)
    key.setdefault("kind", "step")
    return CacheEntry(CacheKey(sentence=sentence, **key), code, origin)


def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "shop" / "checkout.feature.json"


def sentences(tmp_path: Path) -> list[str]:
    tests = load_file(cache_file(tmp_path), refuse_imports)
    return [e.key.sentence for e in tests["Buy a product"]]


# --- locating ---


def test_locate_a_scenario_mirrors_its_feature_file(tmp_path: Path) -> None:
    assert locate(tmp_path, TEST) == (tmp_path / "shop/checkout.feature.json", "Buy a product")


def test_locate_keeps_a_separator_inside_the_scenario_name(tmp_path: Path) -> None:
    assert locate(tmp_path, "a.feature::x::y") == (tmp_path / "a.feature.json", "x::y")


def test_locate_a_python_test_sanitizes_its_name_but_keeps_folders(tmp_path: Path) -> None:
    assert locate(tmp_path, "flows/log in: admin?") == (
        tmp_path / "flows" / "log in_ admin_.json",
        "flows/log in: admin?",
    )
    assert locate(tmp_path, "./a//b")[0] == tmp_path / "a" / "b.json"


@pytest.mark.parametrize("name", ["../escape", "a/../../b", "../x.feature::S", "", "/", "::S"])
def test_locate_refuses_names_outside_the_cache_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(CacheError, match="test"):
        locate(tmp_path, name)


def test_path_for(tmp_path: Path) -> None:
    assert store(tmp_path).path_for(TEST) == cache_file(tmp_path)


# --- round trip and format ---


def test_round_trip(tmp_path: Path) -> None:
    written = [
        entry("open the shop"),
        entry("the basket shows", kind="expect", code="def step(page):\n    pass\n"),
        entry("fill the form", data="| name | Zoë |\n| city | Köln |", origin="healed"),
    ]
    writer = store(tmp_path)
    for e in written:
        assert writer.write(e) is True

    reader = store(tmp_path)
    for e in written:
        assert reader.lookup(e.key) == e
    assert reader.lookup(CacheKey(TEST, "step", "not stored")) is None
    assert reader.lookup(CacheKey("other.feature::S", "step", "open the shop")) is None


def test_the_file_format_is_exact(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop"))
    cache_store.write(entry("log in as", data='"""\nadmin\n"""', kind="expect", origin="steered"))
    cache_store.write(entry("open the shop", test="shop/checkout.feature::Another"))

    expected = """\
{
  "format": 1,
  "tests": {
    "Another": [
      {
        "code": [
          "def step(page) -> None:",
          "    page.goto(\\"/\\")"
        ],
        "kind": "step",
        "occurrence": 1,
        "origin": "generated",
        "sentence": "open the shop"
      }
    ],
    "Buy a product": [
      {
        "code": [
          "def step(page) -> None:",
          "    page.goto(\\"/\\")"
        ],
        "kind": "step",
        "occurrence": 1,
        "origin": "generated",
        "sentence": "open the shop"
      },
      {
        "code": [
          "def step(page) -> None:",
          "    page.goto(\\"/\\")"
        ],
        "data": [
          "\\"\\"\\"",
          "admin",
          "\\"\\"\\""
        ],
        "kind": "expect",
        "occurrence": 1,
        "origin": "steered",
        "sentence": "log in as"
      }
    ]
  }
}
"""
    assert cache_file(tmp_path).read_text(encoding="utf-8") == expected


def test_non_ascii_text_is_stored_as_is(tmp_path: Path) -> None:
    store(tmp_path).write(entry("kaufe 3 Äpfel für 2 €"))
    assert "kaufe 3 Äpfel für 2 €" in cache_file(tmp_path).read_text(encoding="utf-8")


def test_an_unchanged_entry_does_not_rewrite_the_file(tmp_path: Path) -> None:
    store(tmp_path).write(entry("open the shop"))
    before = cache_file(tmp_path).stat()

    assert store(tmp_path).write(entry("open the shop")) is False

    after = cache_file(tmp_path).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_python_test_name_has_its_own_file(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop", test="smoke/home page"))
    tests = load_file(tmp_path / "cache" / "smoke" / "home page.json", refuse_imports)
    assert list(tests) == ["smoke/home page"]
    assert store(tmp_path).lookup(CacheKey("smoke/home page", "step", "open the shop"))


# --- addressing ---


def test_replacing_an_entry_keeps_its_place_and_never_duplicates(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    for sentence in ("first", "second", "third"):
        cache_store.write(entry(sentence))

    healed = entry("second", code="def step(page):\n    page.reload()", origin="healed")
    assert cache_store.write(healed) is True

    assert sentences(tmp_path) == ["first", "second", "third"]
    assert store(tmp_path).lookup(healed.key) == healed


def test_occurrence_and_data_tell_identical_sentences_apart(tmp_path: Path) -> None:
    first = entry("click Next", code="def step(page):\n    pass  # 1")
    second = entry("click Next", occurrence=2, code="def step(page):\n    pass  # 2")
    with_data = entry("click Next", data="a table", code="def step(page):\n    pass  # data")
    cache_store = store(tmp_path)
    for e in (first, second, with_data):
        cache_store.write(e)
    # A step inserted earlier in the scenario is new; it moves no existing address.
    cache_store.write(entry("accept the cookies"))

    reader = store(tmp_path)
    assert [reader.lookup(e.key) for e in (first, second, with_data)] == [first, second, with_data]
    assert sentences(tmp_path) == ["click Next"] * 3 + ["accept the cookies"]


def test_a_write_merges_with_entries_another_run_wrote(tmp_path: Path) -> None:
    mine, theirs = store(tmp_path), store(tmp_path)
    mine.write(entry("first"))
    theirs.write(entry("second"))
    mine.write(entry("third"))

    assert sentences(tmp_path) == ["first", "second", "third"]
    assert mine.lookup(entry("second").key) == entry("second")


# --- loading ---


def test_a_file_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store(tmp_path).write(entry("open the shop"))
    calls = []

    def counting_load(*args: Any) -> Any:
        calls.append(args)
        return load_file(*args)

    monkeypatch.setattr(cache, "load_file", counting_load)
    reader = store(tmp_path)
    reader.lookup(entry("open the shop").key)
    reader.lookup(entry("missing").key)
    reader.lookup(entry("open the shop").key)
    assert len(calls) == 1


def write_raw(tmp_path: Path, content: bytes | str) -> Path:
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def document(*entries: dict[str, Any], version: Any = 1) -> str:
    return json.dumps({"format": version, "tests": {"Buy a product": list(entries)}}, indent=2)


def raw_entry(**fields: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "code": ["def step(page):", "    pass"],
        "kind": "step",
        "occurrence": 1,
        "origin": "generated",
        "sentence": "open the shop",
    }
    raw.update(fields)
    return {k: v for k, v in raw.items() if v is not None}


VALID = document(raw_entry())
CONFLICT = VALID.replace(
    '        "origin": "generated",\n',
    '<<<<<<< HEAD\n        "origin": "generated",\n=======\n'
    '        "origin": "healed",\n>>>>>>> feature\n',
)

CORRUPT = {
    "truncated": (VALID[: len(VALID) // 2], r"ends early at line \d+ \(truncated\?\)"),
    "bad syntax": (VALID.replace('"kind"', "kind", 1), "invalid JSON at line 10 column 9"),
    "empty": ("", "the file is empty"),
    "invalid UTF-8": (
        VALID.encode().replace(b"open the shop", b"open the \xff shop"),
        "not valid UTF-8 at line 13",
    ),
    "conflict markers": (CONFLICT, "merge conflict markers at line 12"),
    "unknown version": (document(raw_entry(), version=2), "unknown format version 2"),
    "missing version": ('{"tests": {}}', "'format' field is missing"),
    "not an object": ("[]", "expected a JSON object"),
    "tests not an object": ('{"format": 1, "tests": []}', "'tests' must be an object"),
    "entries not a list": ('{"format": 1, "tests": {"T": {}}}', "test 'T': expected a list"),
    "duplicate entry": (
        document(raw_entry(), raw_entry(origin="healed")),
        r"test 'Buy a product', entry 2: duplicate .*step 'open the shop', occurrence 1",
    ),
    "duplicate key": (
        VALID.replace('"kind": "step",', '"kind": "step", "kind": "expect",'),
        "the key 'kind' appears twice",
    ),
    "missing field": (document(raw_entry(origin=None)), r"entry 1: missing fields \['origin'\]"),
    "unknown field": (document(raw_entry(when="today")), r"unknown fields \['when'\]"),
    "code not lines": (document(raw_entry(code="pass")), "'code' must be a list of strings"),
    "data not lines": (document(raw_entry(data=[1])), "'data' must be a list of strings"),
    "sentence not text": (document(raw_entry(sentence=3)), "'sentence' must be a string"),
    "occurrence as text": (document(raw_entry(occurrence="1")), "'occurrence' must be a whole"),
    "occurrence zero": (document(raw_entry(occurrence=0)), "'occurrence' must be a whole"),
    "occurrence boolean": (document(raw_entry(occurrence=True)), "'occurrence' must be a whole"),
    "unknown kind": (document(raw_entry(kind="given")), "unknown kind 'given'"),
    "unknown origin": (document(raw_entry(origin="manual")), "unknown origin 'manual'"),
    "refused code": (
        document(raw_entry(), raw_entry(occurrence=2, code=["import os"])),
        r"test 'Buy a product', entry 2 \(step 'open the shop', occurrence 2\): "
        "the code is refused: line 1: imports are not allowed",
    ),
}


@pytest.mark.parametrize("content, message", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_file_is_refused_and_left_alone(
    tmp_path: Path, content: bytes | str, message: str
) -> None:
    path = write_raw(tmp_path, content)
    before = path.read_bytes()
    cache_store = store(tmp_path)

    with pytest.raises(CacheError, match=message) as raised:
        cache_store.lookup(entry("open the shop").key)
    assert str(path) in str(raised.value)

    with pytest.raises(CacheError, match="failed to load"):
        cache_store.write(entry("open the shop"))
    with pytest.raises(CacheError, match=message):
        load_file(path, refuse_imports)
    # Another run that never loaded it refuses too, under the lock.
    with pytest.raises(CacheError, match=message):
        store(tmp_path).write(entry("open the shop"))
    assert path.read_bytes() == before


def test_a_failed_load_fails_every_later_lookup(tmp_path: Path) -> None:
    write_raw(tmp_path, "{")
    cache_store = store(tmp_path)
    for _ in range(2):
        with pytest.raises(CacheError, match="truncated"):
            cache_store.lookup(entry("open the shop").key)


def test_the_valid_fixture_loads(tmp_path: Path) -> None:
    write_raw(tmp_path, VALID)
    assert store(tmp_path).lookup(entry("open the shop").key) is not None


# --- writing ---


def test_a_refused_entry_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match=r"step 'open the shop'.*imports are not allowed"):
        store(tmp_path).write(entry("open the shop", code="import os"))
    assert not cache_file(tmp_path).exists()


@pytest.mark.parametrize("field, value", [("kind", "then"), ("origin", "manual")])
def test_an_entry_of_unknown_kind_or_origin_is_not_written(
    tmp_path: Path, field: str, value: str
) -> None:
    bad = entry("x", origin=value) if field == "origin" else entry("x", kind=value)
    with pytest.raises(CacheError, match=f"unknown {field}"):
        store(tmp_path).write(bad)


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop"))
    path = cache_file(tmp_path)
    before = path.read_bytes()

    def no_space(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache.os, failing, no_space)
    with pytest.raises(CacheError, match="No space left on device") as raised:
        cache_store.write(entry("add to basket"))
    monkeypatch.undo()

    assert str(path) in str(raised.value)
    assert path.read_bytes() == before
    assert files_in(path.parent) == ["checkout.feature.json", "checkout.feature.json.lock"]
    # The failed entry was not taken into the store's copy either.
    assert cache_store.lookup(entry("add to basket").key) is None


def test_a_cache_folder_that_is_a_file_gives_a_cache_error(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("not a folder")
    with pytest.raises(CacheError, match="cannot write") as raised:
        store(tmp_path).write(entry("open the shop"))
    assert str(cache_file(tmp_path)) in str(raised.value)
    assert (tmp_path / "cache").read_text() == "not a folder"


def test_a_held_lock_times_out_with_a_cache_error(tmp_path: Path) -> None:
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    lock = f"{path}.lock"
    with (
        filelock.FileLock(lock),
        pytest.raises(CacheError, match="waiting for the lock") as raised,
    ):
        store(tmp_path, lock_timeout=0.1).write(entry("open the shop"))
    assert lock in str(raised.value)
    assert not path.exists()


# --- obsolete entries and pruning ---


def test_obsolete_lists_the_entries_nobody_used(tmp_path: Path) -> None:
    writer = store(tmp_path)
    for sentence in ("used", "stale", "rewritten"):
        writer.write(entry(sentence))
    writer.write(entry("stale", test="shop/checkout.feature::Removed scenario"))
    writer.write(entry("other file", test="search.feature::Find"))
    writer.write(entry("python test", test="smoke"))

    run = store(tmp_path)
    run.lookup(entry("used").key)
    run.lookup(entry("never stored").key)
    run.write(entry("rewritten"))

    path = cache_file(tmp_path)
    assert run.obsolete() == [
        (path, CacheKey(TEST, "step", "stale")),
        (path, CacheKey("shop/checkout.feature::Removed scenario", "step", "stale")),
    ]
    others = [tmp_path / "cache" / "search.feature.json", tmp_path / "cache" / "smoke.json"]
    assert run.obsolete(others) == [
        (others[0], CacheKey("search.feature::Find", "step", "other file")),
        (others[1], CacheKey("smoke", "step", "python test")),
    ]


def test_prune_deletes_the_given_entries(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    for sentence in ("keep", "stale", "keep too"):
        cache_store.write(entry(sentence))
    cache_store.write(entry("stale", test="shop/checkout.feature::Removed"))
    path = cache_file(tmp_path)

    stale = [key for _, key in store(tmp_path).obsolete([path]) if key.sentence == "stale"]
    assert prune(path, stale, refuse_imports) is True
    assert prune(path, stale, refuse_imports) is False

    tests = load_file(path, refuse_imports)
    assert list(tests) == ["Buy a product"]
    assert sentences(tmp_path) == ["keep", "keep too"]


def test_pruning_every_entry_deletes_the_file(tmp_path: Path) -> None:
    store(tmp_path).write(entry("stale"))
    path = cache_file(tmp_path)
    assert prune(path, [entry("stale").key], refuse_imports) is True
    assert not path.exists()


def test_prune_refuses_a_corrupt_file(tmp_path: Path) -> None:
    path = write_raw(tmp_path, CONFLICT)
    with pytest.raises(CacheError, match="merge conflict markers"):
        prune(path, [entry("open the shop").key], refuse_imports)
    assert path.read_text() == CONFLICT
