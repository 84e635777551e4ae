"""The cache (format 3): one step library per project, a Python file per step, read without
importing it and written exactly, merged under a lock, refused whole when anything in a file is
wrong; the per-feature files of formats 1 and 2 read and migrated, nothing lost."""

from __future__ import annotations

import dataclasses
import errno
import faulthandler
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import filelock
import pytest

from prettyplay_behave import cache
from prettyplay_behave.cache import (
    CacheKey,
    CacheStore,
    CacheWrite,
    RedVerdict,
    file_name,
    load_file,
    locate,
)
from prettyplay_behave.cache_diff import entry_changes
from prettyplay_behave.cli import describe
from prettyplay_behave.errors import CacheError, CodePolicyError
from prettyplay_behave.safety.step_code import check_code
from tests.support.outside import Outside

TEST = "shop/checkout.feature::Buy a product"
OPEN_CODE = 'def step(page) -> None:\n    page.goto("/")'
ADD_ANY = "def step(page, text) -> None:\n    page.get_by_text(text).click()"
ADD_TEA = 'def step(page) -> None:\n    page.get_by_text("Green Tea").click()'


def refuse_imports(code: str) -> None:
    """A stand-in for the code policy."""
    if "import" in code:
        raise CodePolicyError("imports are not allowed", line=1)


def store(tmp_path: Path, **options: Any) -> CacheStore:
    return CacheStore(tmp_path / "cache", refuse_imports, **options)


def entry(
    sentence: str, code: str = OPEN_CODE, origin: str = "generated", **key: Any
) -> CacheWrite:
    pinned = key.pop("pinned", False)
    verdict = key.pop("verdict", None)
    key.setdefault("test", TEST)
    key.setdefault("kind", "action")
    return CacheWrite(CacheKey(sentence=sentence, **key), code, origin, pinned, verdict)


def cache_file(tmp_path: Path) -> Path:
    """The old (format 1 and 2) file of the feature TEST is in."""
    return tmp_path / "cache" / "shop" / "checkout.feature.json"


def library_file(tmp_path: Path, sentence: str = "open the shop", kind: str = "action") -> Path:
    """The library file of a step (its sentence a template already)."""
    return tmp_path / "cache" / "steps" / file_name((kind, sentence, ""))


def sentences(tmp_path: Path) -> list[str]:
    return sorted(e.sentence for e in store(tmp_path).library().entries)


def found_code(reader: CacheStore, key: CacheKey) -> str | None:
    found = reader.lookup(key)
    return found.code.rstrip("\n") if found else None


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


def test_every_test_keeps_its_entries_in_the_project_library(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    assert cache_store.path_for(TEST) == tmp_path / "cache" / "steps"
    assert cache_store.path_for("other.feature::S") == tmp_path / "cache" / "steps"
    written = entry("open the shop").library_entry()
    assert cache_store.path_of(written) == library_file(tmp_path)


def test_a_step_file_is_named_by_a_slug_of_its_template_and_a_hash_of_the_step() -> None:
    name = file_name(("action", 'I add the "{}" to the cart', ""))
    assert name.startswith("action-i-add-the-to-the-cart-") and name.endswith(".py")
    assert name == file_name(("action", 'I add the "{}" to the cart', ""))  # always the same
    others = {
        file_name(("check", 'I add the "{}" to the cart', "")),
        file_name(("action", 'I add the "{}" to the cart', "| a |")),
        file_name(("action", "I add the {} to the cart", "")),  # the same slug
    }
    assert len(others | {name}) == 4
    assert file_name(("action", "カートに入れる", "")).startswith("action-")
    assert len(file_name(("action", "word " * 100, ""))) < 90


# --- round trip and format ---


# --- the library ---


def test_round_trip(tmp_path: Path) -> None:
    written = [
        entry("open the shop"),
        entry("the basket shows", kind="check", code="def step(page):\n    pass\n"),
        entry("fill the form", data="| name | Zoë |\n| city | Köln |", origin="healed"),
    ]
    writer = store(tmp_path)
    for e in written:
        assert writer.write(e) is True

    reader = store(tmp_path)
    for e in written:
        found = reader.lookup(e.key)
        assert found is not None
        assert (found.code, found.origin, found.kind) == (
            e.code.rstrip() + "\n",
            e.origin,
            e.key.kind,
        )
    assert reader.lookup(CacheKey(TEST, "action", "not stored")) is None
    # one library: another feature's step finds the entry, and no copy of it is written
    assert found_code(reader, CacheKey("other.feature::S", "action", "open the shop")) == OPEN_CODE
    assert len(list((tmp_path / "cache" / "steps").glob("*.py"))) == 3


def test_every_scenario_of_the_feature_finds_the_entry_another_wrote(tmp_path: Path) -> None:
    store(tmp_path).write(entry("open the shop"))
    reader = store(tmp_path)
    for scenario in ("Buy a product", "Renamed scenario", "A new one -- @1.2"):
        key = CacheKey(f"shop/checkout.feature::{scenario}", "action", "open the shop")
        assert found_code(reader, key) == OPEN_CODE
    assert found_code(reader, CacheKey(TEST, "check", "open the shop")) is None  # another kind


def test_code_that_takes_the_parameters_serves_every_value(tmp_path: Path) -> None:
    store(tmp_path).write(entry('I add the "Green Tea" to the cart', code=ADD_ANY))
    reader = store(tmp_path)
    for product in ("Blue Mug", "Green Tea", "Earl Grey"):
        key = CacheKey(TEST, "action", f'I add the "{product}" to the cart')
        assert found_code(reader, key) == ADD_ANY
    library = load_file(library_file(tmp_path, 'I add the "{}" to the cart'), refuse_imports)
    assert [(e.sentence, e.parameters, e.values) for e in library.entries] == [
        ('I add the "{}" to the cart', ("text",), None)
    ]


def test_code_that_spells_its_values_out_serves_only_them(tmp_path: Path) -> None:
    store(tmp_path).write(entry('I add the "Green Tea" to the cart', code=ADD_TEA))
    reader = store(tmp_path)
    assert found_code(reader, CacheKey(TEST, "action", 'I add the "Green Tea" to the cart'))
    assert reader.lookup(CacheKey(TEST, "action", 'I add the "Blue Mug" to the cart')) is None
    # a specific entry wins over the template's for its own values
    store(tmp_path).write(entry('I add the "Blue Mug" to the cart', code=ADD_ANY))
    reader = store(tmp_path)
    assert (
        found_code(reader, CacheKey(TEST, "action", 'I add the "Green Tea" to the cart')) == ADD_TEA
    )
    assert found_code(reader, CacheKey(TEST, "action", 'I add the "Mug" to the cart')) == ADD_ANY


def test_an_outline_rows_placeholders_are_its_parameters(tmp_path: Path) -> None:
    outline = "I add <item> to the list"
    code = 'def step(page, item) -> None:\n    page.fill("#new", item)'
    store(tmp_path).write(entry("I add milk to the list", code=code, outline=outline))
    reader = store(tmp_path)
    key = CacheKey(TEST, "action", "I add bread to the list", outline=outline)
    assert found_code(reader, key) == code
    # the same sentence written out in a plain scenario is no such template
    assert reader.lookup(CacheKey(TEST, "action", "I add bread to the list")) is None


def test_a_pin_serves_its_scenario_and_occurrence_and_nothing_else(tmp_path: Path) -> None:
    pinned_code = 'def step(page) -> None:\n    page.goto("/other")'
    writer = store(tmp_path)
    writer.write(entry("open the shop"))
    writer.write(entry("open the shop", code=pinned_code, occurrence=2, pinned=True))
    reader = store(tmp_path)
    assert (
        found_code(reader, CacheKey(TEST, "action", "open the shop", occurrence=2)) == pinned_code
    )
    assert found_code(reader, CacheKey(TEST, "action", "open the shop")) == OPEN_CODE
    other = "shop/checkout.feature::Another"
    assert found_code(reader, CacheKey(other, "action", "open the shop", occurrence=2)) == OPEN_CODE
    # a scenario of the same name in another feature is another scenario
    namesake = "shop/cart.feature::Buy a product"
    assert found_code(reader, CacheKey(namesake, "action", "open the shop", occurrence=2)) == (
        OPEN_CODE
    )


def test_a_red_entry_keeps_its_verdict(tmp_path: Path) -> None:
    verdict = RedVerdict("product_defect", "orders fail", "fix the payment service")
    store(tmp_path).write(entry("place the order", verdict=verdict))
    found = store(tmp_path).lookup(CacheKey(TEST, "action", "place the order"))
    assert found is not None and found.red and found.verdict == verdict
    assert (found.feature, found.scenario) == ("shop/checkout.feature", "Buy a product")
    other = "shop/checkout.feature::Another"
    assert store(tmp_path).lookup(CacheKey(other, "action", "place the order")) is None


def test_the_file_format_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache.store, "today", lambda: "2026-12-02")
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop"))
    cache_store.write(entry("log in as", data='"""\nadmin\n"""', kind="check", origin="steered"))
    cache_store.write(entry('I add the "Tea" to the cart', code=ADD_ANY))
    cache_store.write(entry("open the shop", code=ADD_TEA, pinned=True, occurrence=2))

    shop = """\
# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="open the shop",
    origin="generated",
    written="2026-12-02",
)
def step(page) -> None:
    page.goto("/")


@step(
    kind="action",
    sentence="open the shop",
    feature="shop/checkout.feature",
    scenario="Buy a product",
    occurrence=2,
    origin="generated",
    written="2026-12-02",
)
def step(page) -> None:
    page.get_by_text("Green Tea").click()
"""
    log_in = """\
# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="log in as",
    data='\"\"\"\\nadmin\\n\"\"\"',
    origin="steered",
    written="2026-12-02",
)
def step(page) -> None:
    page.goto("/")
"""
    add = library_file(tmp_path, 'I add the "{}" to the cart')
    assert "sentence='I add the \"{}\" to the cart'," in add.read_text(encoding="utf-8")
    assert library_file(tmp_path).read_text(encoding="utf-8") == shop
    log_in_file = (
        tmp_path / "cache" / "steps" / file_name(("check", "log in as", '"""\nadmin\n"""'))
    )
    assert log_in_file.read_text(encoding="utf-8") == log_in


def test_non_ascii_text_is_stored_as_is(tmp_path: Path) -> None:
    store(tmp_path).write(entry("kaufe Äpfel für 2 €"))
    written = library_file(tmp_path, "kaufe Äpfel für {} €").read_text(encoding="utf-8")
    assert 'sentence="kaufe Äpfel für {} €",' in written


def test_an_unchanged_entry_does_not_rewrite_the_file(tmp_path: Path) -> None:
    store(tmp_path).write(entry("open the shop"))
    before = library_file(tmp_path).stat()

    assert store(tmp_path).write(entry("open the shop")) is False

    after = library_file(tmp_path).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_an_entry_rewritten_with_the_same_code_keeps_its_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache.store, "today", lambda: "2026-01-01")
    store(tmp_path).write(entry("open the shop"))
    monkeypatch.setattr(cache.store, "today", lambda: "2026-12-02")
    assert store(tmp_path).write(entry("open the shop")) is False
    assert store(tmp_path).write(entry("open the shop", code=ADD_TEA)) is True
    written = load_file(library_file(tmp_path), refuse_imports).entries[0].written
    assert written == "2026-12-02"


def test_the_same_code_written_again_keeps_the_record_of_its_first_green_run(
    tmp_path: Path,
) -> None:
    first = cache.GreenRecord("2026-01-01", "/", (cache.Found("get_by_text('Shop')", text="Shop"),))
    later = cache.GreenRecord(
        "2026-12-02", "/", (cache.Found("get_by_text('Shop')", text="Shop!"),)
    )
    store(tmp_path).write(dataclasses.replace(entry("open the shop"), green=first))
    assert store(tmp_path).write(dataclasses.replace(entry("open the shop"), green=later)) is False
    assert store(tmp_path).library().entries[0].green == first


def test_a_python_test_keeps_its_entries_its_own(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop", test="smoke/home page"))
    library = load_file(library_file(tmp_path), refuse_imports)
    assert [(e.sentence, e.feature) for e in library.entries] == [
        ("open the shop", "smoke/home page")
    ]
    assert store(tmp_path).lookup(CacheKey("smoke/home page", "action", "open the shop"))
    assert store(tmp_path).lookup(CacheKey(TEST, "action", "open the shop")) is None
    # while the entries of feature files serve it
    cache_store.write(entry("log in"))
    assert store(tmp_path).lookup(CacheKey("smoke/home page", "action", "log in"))


def test_replacing_an_entry_never_duplicates_it(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    for sentence in ("first", "second", "third"):
        cache_store.write(entry(sentence))

    healed = entry("second", code="def step(page):\n    page.reload()", origin="healed")
    assert cache_store.write(healed) is True

    assert sentences(tmp_path) == ["first", "second", "third"]
    assert found_code(store(tmp_path), healed.key) == healed.code


def test_data_tells_identical_sentences_apart(tmp_path: Path) -> None:
    plain = entry("click Next", code="def step(page):\n    pass  # 1")
    with_data = entry("click Next", data="a table", code="def step(page):\n    pass  # data")
    cache_store = store(tmp_path)
    for e in (plain, with_data):
        cache_store.write(e)
    reader = store(tmp_path)
    assert [found_code(reader, e.key) for e in (plain, with_data)] == [plain.code, with_data.code]


def test_a_write_merges_with_entries_another_run_wrote(tmp_path: Path) -> None:
    mine, theirs = store(tmp_path), store(tmp_path)
    mine.library(), theirs.library()  # both loaded before either writes
    mine.write(entry("open the shop"))
    theirs.write(entry("open the shop", code=ADD_TEA, pinned=True, occurrence=2))
    mine.write(entry("open the shop", code=ADD_TEA, pinned=True, occurrence=3))

    held = load_file(library_file(tmp_path), refuse_imports).entries
    assert sorted(e.occurrence if e.scenario else 0 for e in held) == [0, 2, 3]
    assert found_code(mine, entry("open the shop", occurrence=2).key) == ADD_TEA


def test_dropping_every_entry_deletes_the_file(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("stale"))
    cache_store.write(entry("kept"))
    path = library_file(tmp_path, "stale")
    assert cache_store.drop([e for e in cache_store.library().entries if e.sentence == "stale"])
    assert not path.exists()
    assert not Path(f"{path}.lock").exists()  # no lock file left behind
    assert sentences(tmp_path) == ["kept"]


# --- format 1 ---

FORMAT_1: dict[str, Any] = {
    "format": 1,
    "tests": {
        "Buy a product": [
            {"code": ["def step(page):", "    page.goto('/')"], "kind": "step",
             "occurrence": 1, "origin": "generated", "sentence": "open the shop"},
            {"code": ["def step(page):", "    pass  # next 1"], "kind": "step",
             "occurrence": 1, "origin": "generated", "sentence": "click Next"},
            {"code": ["def step(page):", "    pass  # next 2"], "kind": "step",
             "occurrence": 2, "origin": "healed", "sentence": "click Next"},
            {"code": ["def step(page):", "    pass  # tea"], "kind": "expect",
             "occurrence": 1, "origin": "generated", "sentence": 'the cart holds "Tea"'},
        ],
        "Another -- @1.1": [
            {"code": ["def step(page):", "    page.goto('/')"], "kind": "step",
             "occurrence": 1, "origin": "generated", "sentence": "open the shop"},
            {"code": ["def step(page):", "    pass  # other"], "kind": "step",
             "occurrence": 1, "origin": "generated", "sentence": "click Next"},
        ],
    },
}  # fmt: skip


def test_a_format_1_file_is_read_and_migrated_on_the_first_write_with_nothing_lost(
    tmp_path: Path,
) -> None:
    path = write_raw(tmp_path, json.dumps(FORMAT_1))
    expected = {
        (scenario, raw["kind"], raw["sentence"], raw["occurrence"]): "\n".join(raw["code"])
        for scenario, raws in FORMAT_1["tests"].items()
        for raw in raws
    }

    def every_step_finds_its_code(reader: CacheStore) -> None:
        for (scenario, kind, sentence, occurrence), code in expected.items():
            key = CacheKey(f"shop/checkout.feature::{scenario}", kind, sentence, "", occurrence)
            assert found_code(reader, key) == code, (scenario, sentence, occurrence)

    every_step_finds_its_code(store(tmp_path))
    assert load_file(path, refuse_imports).format == 1
    store(tmp_path).write(entry("a new step"))
    assert not path.exists() and not Path(f"{path}.lock").exists()  # moved into the library
    every_step_finds_its_code(store(tmp_path))
    library = store(tmp_path).library()
    # equal code of one step is one entry; other code is pinned to its scenario and feature
    shop = [e for e in library.entries if e.sentence == "open the shop"]
    assert len(shop) == 1 and shop[0].scenario is None
    pins = sorted((e.feature, e.scenario, e.occurrence) for e in library.entries if e.scenario)
    assert pins == [
        ("shop/checkout.feature", "Another -- @1.1", 1),
        ("shop/checkout.feature", "Buy a product", 2),
    ]


def old_file(tmp_path: Path, relative: str, *entries: dict[str, Any]) -> Path:
    path = tmp_path / "cache" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document(*entries))
    return path


def test_the_files_of_several_features_become_one_library_with_nothing_lost(
    tmp_path: Path,
) -> None:
    other = ["def step(page):", "    pass  # the cart's own"]
    old_file(
        tmp_path,
        "shop/checkout.feature.json",
        raw_entry(wordings=["I open the store"]),
        raw_entry(sentence="pay", scenario="Buy", occurrence=2),
        raw_entry(sentence="log in", code=other),
    )
    old_file(
        tmp_path,
        "shop/cart.feature.json",
        raw_entry(origin="reused", wordings=["I visit the shop"]),
        raw_entry(sentence="log in", code=other),
    )
    old_file(tmp_path, "login.feature.json", raw_entry(sentence="log in"))
    old_file(tmp_path, "smoke.json", raw_entry(sentence="log in", code=other))
    before = store(tmp_path)
    keys = {
        feature: CacheKey(f"{feature}::S", "action", "log in")
        for feature in ("shop/checkout.feature", "shop/cart.feature", "login.feature")
    }
    found_before = {feature: found_code(before, key) for feature, key in keys.items()}
    assert found_before == {
        "shop/checkout.feature": "\n".join(other),
        "shop/cart.feature": "\n".join(other),
        "login.feature": "def step(page):\n    pass",
    }

    migrated = store(tmp_path).migrate()

    assert [p.name for p in migrated] == [
        "login.feature.json", "cart.feature.json", "checkout.feature.json", "smoke.json"
    ]  # fmt: skip
    assert not list((tmp_path / "cache").rglob("*.json"))
    after = store(tmp_path)
    assert {feature: found_code(after, key) for feature, key in keys.items()} == found_before
    entries = {(e.sentence, e.feature, e.scenario): e for e in after.library().entries}
    # one entry for the equal code of two features, the original's, with every wording
    shop = entries[("open the shop", "", None)]
    assert (shop.origin, shop.wordings) == ("generated", ("I visit the shop", "I open the store"))
    # the code most features have serves the project; the other, its feature only
    assert entries[("log in", "", None)].code == "\n".join(other) + "\n"
    assert entries[("log in", "login.feature", None)].code == "def step(page):\n    pass\n"
    assert entries[("log in", "smoke", None)].code == "\n".join(other) + "\n"  # a Python test's
    assert entries[("pay", "shop/checkout.feature", "Buy")].occurrence == 2
    assert len(entries) == 5


def test_a_newer_format_names_its_version_and_the_way_out(tmp_path: Path) -> None:
    write_raw(tmp_path, json.dumps({"format": 4, "steps": []}))
    with pytest.raises(CacheError, match=r"cache format 4 is newer than this prettyplay reads "
                       r"\(it reads formats 1, 2 and 3; upgrade prettyplay-behave"):  # fmt: skip
        store(tmp_path).lookup(entry("open the shop").key)
    path = write_library(tmp_path, LIBRARY.replace("(format 3)", "(format 4)"))
    with pytest.raises(CacheError, match=f"^{path}: cache format 4 is newer"):
        store(tmp_path).lookup(entry("open the shop").key)


def test_a_migration_with_a_file_that_fails_to_load_deletes_nothing(tmp_path: Path) -> None:
    good = old_file(tmp_path, "a.feature.json", raw_entry())
    bad = write_raw(tmp_path, json.dumps({"format": 7, "steps": []}))
    with pytest.raises(CacheError, match=f"^{bad}: cache format 7"):
        store(tmp_path).migrate()
    assert good.exists() and bad.exists()
    assert not (tmp_path / "cache" / "steps").exists()


# --- loading ---


def test_a_file_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store(tmp_path).write(entry("open the shop"))
    calls = []

    def counting_load(*args: Any) -> Any:
        calls.append(args)
        return load_file(*args)

    monkeypatch.setattr(cache.store, "load_file", counting_load)
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


def document(*entries: dict[str, Any], version: Any = 2) -> str:
    return json.dumps({"format": version, "steps": list(entries)}, indent=2)


def raw_entry(**fields: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "code": ["def step(page):", "    pass"],
        "kind": "action",
        "origin": "generated",
        "sentence": "open the shop",
    }
    raw.update(fields)
    return {k: v for k, v in raw.items() if v is not None}


VALID = document(raw_entry())
CONFLICT = VALID.replace(
    '      "origin": "generated",\n',
    '<<<<<<< HEAD\n      "origin": "generated",\n=======\n'
    '      "origin": "healed",\n>>>>>>> feature\n',
)

CORRUPT = {
    "truncated": (VALID[: len(VALID) // 2], r"ends early at line \d+ \(truncated\?\)"),
    "bad syntax": (VALID.replace('"kind"', "kind", 1), "invalid JSON at line 9 column 7"),
    "empty": ("", "the file is empty"),
    "invalid UTF-8": (
        VALID.encode().replace(b"open the shop", b"open the \xff shop"),
        "not valid UTF-8 at line 11",
    ),
    "conflict markers": (CONFLICT, "merge conflict markers at line 10"),
    "unknown version": (document(raw_entry(), version=0), "cache format 0 is unknown"),
    "missing version": ('{"steps": []}', "'format' field is missing"),
    "not an object": ("[]", "expected a JSON object"),
    "steps not a list": ('{"format": 2, "steps": {}}', "'steps' must be a list"),
    "format 1 tests not an object": ('{"format": 1, "tests": []}', "'tests' must be an object"),
    "format 1 entries not a list": ('{"format": 1, "tests": {"T": {}}}', "test 'T': expected"),
    "format 1 unknown kind": (
        '{"format": 1, "tests": {"T": [{"code": [], "kind": "given", "occurrence": 1, '
        '"origin": "generated", "sentence": "s"}]}}',
        "test 'T', entry 1: unknown kind 'given'",
    ),
    "duplicate entry": (
        document(raw_entry(), raw_entry(origin="healed")),
        r"entry 2: duplicate of an earlier entry \(action 'open the shop'\)",
    ),
    "duplicate key": (
        VALID.replace('"kind": "action",', '"kind": "action", "kind": "check",'),
        "the key 'kind' appears twice",
    ),
    "missing field": (document(raw_entry(origin=None)), r"entry 1: missing fields \['origin'\]"),
    "unknown field": (document(raw_entry(when="today")), r"unknown fields \['when'\]"),
    "parameters not the code's": (
        document(raw_entry(parameters=["text"])),
        r"'parameters' \['text'\] are not what its code takes after page \(\[\]\)",
    ),
    "occurrence without a scenario": (document(raw_entry(occurrence=2)), "belongs to an entry"),
    "a verdict without a scenario": (
        document(raw_entry(verdict={"label": "incurable", "explanation": "x"})),
        "a red entry .* is pinned to its 'scenario'",
    ),
    "a verdict of another label": (
        document(raw_entry(scenario="S", verdict={"label": "rot", "explanation": "x"})),
        "a red entry's label is one of",
    ),
    "code not lines": (document(raw_entry(code="pass")), "'code' must be a list of strings"),
    "data not lines": (document(raw_entry(data=[1])), "'data' must be a list of strings"),
    "sentence not text": (document(raw_entry(sentence=3)), "'sentence' must be a string"),
    "occurrence as text": (
        document(raw_entry(scenario="S", occurrence="1")),
        "'occurrence' must be a whole",
    ),
    "occurrence zero": (document(raw_entry(scenario="S", occurrence=0)), "must be a whole"),
    "occurrence boolean": (document(raw_entry(scenario="S", occurrence=True)), "must be a whole"),
    "unknown kind": (document(raw_entry(kind="given")), "unknown kind 'given'"),
    "unknown origin": (document(raw_entry(origin="manual")), "unknown origin 'manual'"),
    "values fewer than the marks": (
        document(raw_entry(sentence='pay "{}" for "{}"', values=["tea"])),
        r"entry 1 \(action 'pay \"\{\}\" for \"\{\}\"' for 'tea'\): 'values' holds 1 value, "
        r"but its sentence has 2 marks \(\{\}\)",
    ),
    "refused code": (
        document(raw_entry(), raw_entry(scenario="S", occurrence=2, code=["import os"])),
        r"entry 2 \(action 'open the shop' in 'S' #2\): "
        "the code is refused: line 1: imports are not allowed",
    ),
}


@pytest.mark.parametrize("content, message", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_old_file_is_refused_and_left_alone(
    tmp_path: Path, content: bytes | str, message: str
) -> None:
    path = write_raw(tmp_path, content)
    before = path.read_bytes()
    cache_store = store(tmp_path)

    with pytest.raises(CacheError, match=message) as raised:
        cache_store.lookup(entry("open the shop").key)
    assert str(path) in str(raised.value)
    with pytest.raises(CacheError, match=message):
        load_file(path, refuse_imports)
    with pytest.raises(CacheError, match=message):
        cache_store.migrate()
    # a write goes to the library, never into an old file (nor migrates one that fails to load)
    cache_store.write(entry("another step"))
    assert path.read_bytes() == before


LIBRARY = """\
# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="open the shop",
    origin="generated",
)
def step(page):
    pass
"""
PIN = """

@step(kind="action", sentence="open the shop", feature="a.feature", scenario="S", occurrence=2,
      origin="healed")
def step(page):
    pass  # pinned
"""


def write_library(tmp_path: Path, content: bytes | str, name: str = "") -> Path:
    path = library_file(tmp_path).with_name(name) if name else library_file(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def keyword(text: str) -> str:
    """LIBRARY with one more keyword (or other text) in its decorator."""
    return LIBRARY.replace('    origin="generated",\n', f'    origin="generated",\n    {text}\n')


CORRUPT_LIBRARY = {
    "empty": ("", "not a prettyplay step library file"),
    "no header": (LIBRARY.split("\n", 1)[1], "not a prettyplay step library file"),
    "bad syntax": (
        LIBRARY.replace("def step(page):", "def step(page)"),
        "invalid Python at line 9",
    ),
    "conflict markers": (
        LIBRARY.replace(
            '    origin="generated",\n',
            '<<<<<<< HEAD\n    origin="generated",\n=======\n    origin="healed",\n>>>>>>> b\n',
        ),
        "merge conflict markers at line 7",
    ),
    "invalid UTF-8": (
        LIBRARY.encode().replace(b"open the shop", b"open the \xff shop"),
        "not valid UTF-8 at line 6",
    ),
    "an import": (LIBRARY + "\nimport os\n", "line 12: import at the top of a library file"),
    "an assignment": (LIBRARY + "\nx = 1\n", "line 12: assign at the top"),
    "a call": (LIBRARY + "\nprint(1)\n", "line 12: expr at the top"),
    "a function without its decorator": (
        LIBRARY + "\n\ndef step(page):\n    pass\n",
        "line 13: a step function stands under exactly one @step",
    ),
    "a class": (LIBRARY + "\nclass step:\n    pass\n", "line 12: classdef at the top"),
    "async": (LIBRARY.replace("def step", "async def step"), "line 9: asyncfunctiondef"),
    "another name": (LIBRARY.replace("def step", "def stop"), "line 9: functiondef at the top"),
    "two decorators": (LIBRARY.replace("def step", "@step\ndef step"), "exactly one @step"),
    "a positional argument": (LIBRARY.replace('kind="action"', '"action"'), "keyword arguments"),
    "**keywords": (keyword("**extra,"), "keyword arguments only"),
    "another decorator": (LIBRARY.replace("@step(", "@trace("), "exactly one @step"),
    "a value that is no literal": (keyword("model=open('x'),"), "model= must be a literal"),
    "an unknown keyword": (keyword("when='today',"), "unknown keyword 'when' of @step"),
    "a repeated keyword": (keyword('origin="healed",'), "the keyword 'origin' of @step is given"),
    "a scenario without its feature": (keyword('scenario="S",'), "names its feature="),
    "an explanation without a verdict": (keyword('explanation="x",'), "belong to a red entry"),
    "a verdict without a scenario": (
        keyword('verdict="incurable", explanation="x",'),
        "a red entry .* is pinned",
    ),
    "a verdict of another label": (
        keyword('feature="a", scenario="S", verdict="rot", explanation="x",'),
        "a red entry's label is one of",
    ),
    "an occurrence as text": (keyword('feature="a", scenario="S", occurrence="2",'), "whole"),
    "values not strings": (keyword("values=(1,),"), "'values' must be a tuple of strings"),
    "an unknown kind": (LIBRARY.replace('kind="action"', 'kind="given"'), "unknown kind 'given'"),
    "an unknown origin": (
        LIBRARY.replace('origin="generated"', 'origin="manual"'),
        "line 9: unknown origin 'manual'",
    ),
    "a duplicate entry": (LIBRARY + PIN + PIN, r"line \d+: duplicate of an earlier entry"),
    "refused code": (
        LIBRARY + PIN.replace("pass  # pinned", "import os"),
        r"line 15 \(action 'open the shop' in 'S' #2 of 'a.feature'\): the code is refused: "
        "line 1: imports are not allowed",
    ),
    # what a lookup and the export read by the sentence's marks ({}) agrees with them
    "values fewer than the marks": (
        LIBRARY.replace('sentence="open the shop"', 'sentence="open {} at {}"', 1)
        + PIN.replace('sentence="open the shop"', 'sentence="open {} at {}", values=("a",)'),
        r"line 15 \(action 'open \{\} at \{\}' for 'a' in 'S' #2 of 'a.feature'\): 'values' "
        r"holds 1 value, but its sentence has 2 marks \(\{\}\)",
    ),
    "values more than the marks": (
        keyword('values=("a",),'),
        r"'values' holds 1 value, but its sentence has 0 marks",
    ),
    "parameters neither none nor one a mark": (
        LIBRARY.replace('sentence="open the shop"', 'sentence="open {} at {}"').replace(
            "def step(page):", "def step(page, place):"
        ),
        r"its code takes 1 parameter after page, but its sentence has 2 marks \(\{\}\): "
        "none, or one a mark",
    ),
    "a wording of other marks": (
        keyword('wordings=("open the {} shop",),'),
        r"the wording 'open the \{\} shop' has 1 mark, but its sentence has 0 marks",
    ),
    "an entry of another step": (
        LIBRARY + PIN.replace('sentence="open the shop"', 'sentence="close the shop"'),
        "an entry of another step .* than the file's first",
    ),
    "a deep value": (keyword("values=" + "(" * 1000 + ")" * 1000 + ","), "invalid Python|nests"),
}


@pytest.mark.parametrize("content, message", CORRUPT_LIBRARY.values(), ids=CORRUPT_LIBRARY.keys())
def test_a_corrupt_library_file_is_refused_and_left_alone(
    tmp_path: Path, content: bytes | str, message: str
) -> None:
    path = write_library(tmp_path, content)
    before = path.read_bytes()
    cache_store = store(tmp_path)

    with pytest.raises(CacheError, match=message) as raised:
        cache_store.lookup(entry("open the shop").key)
    assert str(raised.value).startswith(f"{path}: ")
    assert len(str(raised.value)) < 1_000

    with pytest.raises(CacheError, match="failed to load"):
        cache_store.write(entry("open the shop"))
    with pytest.raises(CacheError, match=message):
        load_file(path, refuse_imports)
    # Another run that never loaded it refuses too, under the lock.
    with pytest.raises(CacheError, match=message):
        store(tmp_path).write(entry("open the shop"))
    assert path.read_bytes() == before
    # the other steps of the library are not kept from their entries
    cache_store.write(entry("another step"))
    assert store(tmp_path).lookup(entry("another step").key)


def test_a_library_file_under_another_name_is_refused_naming_the_right_one(tmp_path: Path) -> None:
    path = write_library(tmp_path, LIBRARY, name="action-open-the-shop.py")
    with pytest.raises(
        CacheError, match=f"is kept in a file named '{library_file(tmp_path).name}'"
    ):
        load_file(path, refuse_imports)


def test_a_library_file_is_never_run(tmp_path: Path) -> None:
    """A planted decorator or default value that would run code if the file were imported."""
    marker = tmp_path / "ran"
    planted = LIBRARY.replace(
        'origin="generated",', f'origin="generated", model=open({str(marker)!r}, "w"),'
    )
    write_library(tmp_path, planted)
    with pytest.raises(CacheError, match="model= must be a literal"):
        store(tmp_path).lookup(entry("open the shop").key)
    assert not marker.exists()


def test_the_valid_library_fixture_loads_exactly(tmp_path: Path) -> None:
    write_library(tmp_path, LIBRARY + PIN)
    entries = store(tmp_path).library().entries
    assert [(e.code, e.origin, e.feature, e.scenario, e.occurrence) for e in entries] == [
        ("def step(page):\n    pass\n", "generated", "", None, 1),
        ("def step(page):\n    pass  # pinned\n", "healed", "a.feature", "S", 2),
    ]


def test_a_failed_load_fails_every_later_lookup(tmp_path: Path) -> None:
    write_raw(tmp_path, "{")
    cache_store = store(tmp_path)
    for _ in range(2):
        with pytest.raises(CacheError, match="truncated"):
            cache_store.lookup(entry("open the shop").key)


def test_the_valid_fixture_loads(tmp_path: Path) -> None:
    write_raw(tmp_path, VALID)
    loaded = store(tmp_path).lookup(entry("open the shop").key)
    assert loaded is not None
    assert (loaded.kind, loaded.sentence, loaded.code, loaded.origin) == (
        "action", "open the shop", "def step(page):\n    pass\n", "generated"
    )  # fmt: skip
    assert not loaded.parameters and loaded.values is None  # the code spells out no values
    assert loaded.scenario is None and loaded.verdict is None  # a library entry, green
    assert store(tmp_path).lookup(entry("close the shop").key) is None


# --- writing ---


def test_a_refused_entry_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match=r"action 'open the shop'.*imports are not allowed"):
        store(tmp_path).write(entry("open the shop", code="import os"))
    assert not cache_file(tmp_path).exists()


def test_an_entry_of_unknown_kind_or_origin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'then' is not a valid Kind"):
        entry("x", kind="then")
    with pytest.raises(CacheError, match="unknown origin"):
        store(tmp_path).write(entry("x", origin="manual"))


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop"))
    cache_store.write(entry("add to basket"))
    path = library_file(tmp_path, "add to basket")
    before = path.read_bytes()

    def no_space(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache.store.os, failing, no_space)
    with pytest.raises(CacheError, match="No space left on device") as raised:
        cache_store.write(entry("add to basket", code=ADD_TEA))
    monkeypatch.undo()

    assert str(path) in str(raised.value)
    assert path.read_bytes() == before
    shop = library_file(tmp_path).name
    assert files_in(path.parent) == sorted([path.name, shop])  # no lock among the steps
    # The failed entry was not taken into the store's copy either.
    assert found_code(cache_store, entry("add to basket").key) == OPEN_CODE


def test_a_cache_folder_that_is_a_file_gives_a_cache_error(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("not a folder")
    with pytest.raises(CacheError, match="cannot write") as raised:
        store(tmp_path).write(entry("open the shop"))
    assert str(library_file(tmp_path)) in str(raised.value)
    assert (tmp_path / "cache").read_text() == "not a folder"


def test_a_held_lock_times_out_with_a_cache_error(tmp_path: Path) -> None:
    path = library_file(tmp_path)
    path.parent.mkdir(parents=True)
    lock = str(tmp_path / "cache" / ".lock")  # one lock for the library's writes
    with (
        filelock.FileLock(lock),
        pytest.raises(CacheError, match="waiting for the lock") as raised,
    ):
        store(tmp_path, lock_timeout=0.1).write(entry("open the shop"))
    assert lock in str(raised.value)
    assert not path.exists()


# -- planted files: any structure a CacheError naming the file, text read escaped --------------

NESTED = "[" * 100_000 + "]" * 100_000
PLANTED = {
    "arrays in arrays": (NESTED, "the JSON nests too deeply to be a cache file"),
    "objects in objects": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nests too deeply"),
    "nested steps": (f'{{"format": 2, "steps": {NESTED}}}', "nests too deeply"),
    "a number past Python's digits": pytest.param(
        '{"format": ' + "9" * 5_000 + "}",
        "a value cannot be read: Exceeds the limit",
        marks=pytest.mark.skipif(
            not hasattr(sys, "get_int_max_str_digits"), reason="Python before 3.10.7: no limit"
        ),
    ),
    # parsed, but too deep or too big to print whole in the message
    "a deep format": (
        '{"format": ' + "[" * 900 + "]" * 900 + "}",
        r"cache format \[\[\[\.\.\.\]\]\]",
    ),
    "a deep occurrence": (
        document(raw_entry(scenario="S", occurrence=[[[[[[[1]]]]]]])),
        r"not \[\[\[\.\.\.\]\]\]",
    ),
    "a long unknown kind": (
        document(raw_entry(kind="k" * 100_000)),
        r"unknown kind 'k{10,200}\.\.\.",
    ),
    "many unknown fields": (
        document(raw_entry(**{f"f{n}": 1 for n in range(10_000)})),
        r"unknown fields \['f0', 'f1', 'f10', 'f100', \.\.\.\]",
    ),
}


@pytest.mark.parametrize("content, message", PLANTED.values(), ids=list(PLANTED))
def test_any_planted_structure_is_a_cache_error_naming_the_file(
    tmp_path: Path, content: str, message: str
) -> None:
    path = write_raw(tmp_path, content)
    with pytest.raises(CacheError, match=message) as raised:
        store(tmp_path).lookup(entry("open the shop").key)
    assert str(raised.value).startswith(f"{path}: ")
    assert len(str(raised.value)) < 1_000
    assert path.read_bytes() == content.encode()


HOSTILE = "a\x1b[2J\x07\x00\x9b\u202e\ud800 b\tc\nd"
SHOWN = "a\\x1b[2J\\x07\\x00\\x9b\\u202e\\ud800 b\tc\nd"


def test_the_text_an_entry_describes_itself_with_is_read_escaped(tmp_path: Path) -> None:
    verdict = {"label": "incurable", "explanation": HOSTILE, "recommendation": HOSTILE}
    fields = {"model": HOSTILE, "written": HOSTILE, "verdict": verdict}
    write_raw(tmp_path, json.dumps({"format": 2, "steps": [raw_entry(scenario="S", **fields)]}))
    found = store(tmp_path).library().entries[0]
    assert found.verdict == RedVerdict("incurable", SHOWN, SHOWN)
    assert (found.model, found.written) == (SHOWN, SHOWN)
    planted = keyword(
        f"model={HOSTILE!r}, feature='a', scenario='S', verdict='incurable', "
        f"explanation={HOSTILE!r},"
    )
    write_library(tmp_path, planted)
    (found,) = [e for e in store(tmp_path).library().entries if e.feature == "a"]
    assert found.verdict == RedVerdict("incurable", SHOWN)
    assert found.model == SHOWN
    # the red verdict the LLM gave is kept escaped too, so the file can always be written
    assert RedVerdict("incurable", HOSTILE).explanation == SHOWN


def test_the_text_a_step_is_matched_by_is_kept_as_written(tmp_path: Path) -> None:
    sentence = "open the\x1b shop"
    write_raw(tmp_path, document(raw_entry(sentence=sentence)))
    found = store(tmp_path).library().entries[0]
    assert found.sentence == sentence  # shown escaped, matched as written
    store(tmp_path).write(entry("open the\x1b shop \u202e", test="a.feature::S", pinned=True))
    back = [e for e in store(tmp_path).library().entries if e.feature]
    assert [(e.sentence, e.scenario) for e in back] == [("open the\x1b shop \u202e", "S")]


def test_a_cache_error_shows_a_hostile_file_name_escaped(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "x\x1b[2J.json"
    path.parent.mkdir()
    path.write_text("{")
    with pytest.raises(CacheError) as raised:
        load_file(path, refuse_imports)
    assert "x\\x1b[2J.json: the JSON ends early" in str(raised.value)


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_lock_file_that_reaches_another_file_is_refused_and_that_file_untouched(
    tmp_path: Path, link: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    lock = tmp_path / "cache" / ".lock"
    lock.parent.mkdir(parents=True)
    if link == "symbolic":
        lock.symlink_to(victim)
    else:
        os.link(victim, lock)
    with pytest.raises(CacheError, match=f"^{lock}: the lock file is "):
        store(tmp_path).write(entry("open the shop"))
    assert victim.read_text() == "the user's own file\n"
    assert not library_file(tmp_path).exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes: POSIX")
@pytest.mark.parametrize(
    ("planted", "refused"),
    [
        ("named pipe", "not a regular file"),
        ("link to a device", re.escape("the library file is a symbolic link (to /dev/zero)")),
    ],
)
def test_a_cache_file_that_is_no_regular_file_is_refused_without_blocking(
    tmp_path: Path, planted: str, refused: str
) -> None:
    path = library_file(tmp_path)
    path.parent.mkdir(parents=True)
    if planted == "named pipe":
        os.mkfifo(path)  # reading it would wait for a writer for ever
    else:
        path.symlink_to("/dev/zero")  # reading it would never end
    # a read that blocks is stopped here, the test failing with the stacks
    faulthandler.dump_traceback_later(30, exit=True)
    try:
        with pytest.raises(CacheError, match=f"^{path}: {refused}"):
            store(tmp_path).lookup(entry("open the shop").key)
        with pytest.raises(CacheError, match=f"failed to load: {path}: {refused}"):
            store(tmp_path).write(entry("open the shop"))  # a store that never loaded it
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_wordings_and_a_green_record_round_trip_and_a_wording_finds_its_entry() -> None:
    green = cache.GreenRecord(
        "2026-12-04", "/cart", (cache.Found('get_by_role("button", name="Add")', "button", "Add"),)
    )
    entry = cache.StepEntry(
        kind="action",
        sentence="I add the item",
        code="def step(page) -> None:\n    pass\n",
        origin="generated",
        wordings=("I put the item in the cart",),
        green=green,
    )
    path = Path(file_name(entry.step))
    back = cache.parse(path, cache.render_steps([entry]), lambda code: None)
    assert back.entries == [entry]
    found = back.find(cache.CacheKey("t", "action", "I put the item in the cart"))
    assert found == entry
    back.remove([entry])
    assert back.find(cache.CacheKey("t", "action", "I put the item in the cart")) is None


ADD = cache.Found('get_by_role("button", name="Add")', "button", "Add", tag="button")
PATTERN = cache.Found('get_by_role("button", name=re.compile("^add", 2))', "button", "Add")


@pytest.mark.parametrize(
    ("found", "url", "refusal"),
    [
        ((ADD,) * (cache.MAX_FOUND + 1), "/", "it keeps 13 locators (at most 12)"),
        ((dataclasses.replace(ADD, name="n" * 81),), "/", "found 1 name has 81 characters"),
        ((dataclasses.replace(ADD, test_id="t" * 81),), "/", "found 1 test_id has 81 characters"),
        ((ADD,), "/" + "u" * 2_000, "url has 2,001 characters (at most 2000)"),
        ((cache.Found("get_by_text(" + '"x" + ' * 70 + '"x")'),), "/",
         "found 1: a locator of 436 characters (at most 400)"),
        ((cache.Found("get_by_text(("),), "/", "is no Python expression"),
        ((cache.Found('get_by_text(re.compile("(a"))'),), "/", "not a pattern (missing )"),
        ((cache.Found('get_by_text(re.compile("a", 128))'),), "/",  # re.DEBUG prints
         "a pattern's flags are at most IGNORECASE, MULTILINE and DOTALL"),
        ((cache.Found('get_by_text(re.compile("a", flags=2))'),), "/",
         'a pattern is re.compile("..."[, flags])'),
        ((cache.Found("get_by_text(re.compile(pattern))"),), "/",
         'a pattern is re.compile("..."[, flags])'),
    ],
    ids=["locators", "name", "test id", "url", "locator", "no expression", "pattern", "flags",
         "keyword", "no literal"],
)  # fmt: skip
def test_a_green_record_past_its_bounds_is_refused_on_load_naming_the_file(
    found: tuple[cache.Found, ...], url: str, refusal: str, tmp_path: Path
) -> None:
    """A record is data from a file that a failing step's evidence reads the page with: too
    many locators, a text too long, a pattern that is no plain one is a CacheError naming the
    file and the entry, as any corrupt field is."""
    planted = dataclasses.replace(
        entry("open the shop"), green=cache.GreenRecord("2026-12-04", url, found)
    )
    store(tmp_path).write(planted)
    path = library_file(tmp_path)
    with pytest.raises(CacheError) as refused:
        load_file(path, refuse_imports)
    assert re.match(rf"{re.escape(str(path))}: line \d+: 'green' is refused: ", str(refused.value))
    assert refusal in str(refused.value), refused.value


def test_a_record_within_its_bounds_loads_a_pattern_and_all() -> None:
    green = cache.GreenRecord("2026-12-04", "/" + "u" * 1_999, (PATTERN,) * cache.MAX_FOUND)
    assert cache.record_problem(green) is None
    named = dataclasses.replace(ADD, name="n" * 80, text="t" * 80)
    assert cache.record_problem(cache.GreenRecord("2026-12-04", "/", (named,))) is None
    many = cache.GreenRecord("2026-12-04", "/", (ADD,) * 13)
    assert cache.record_problem(many) == "it keeps 13 locators (at most 12)"


def test_an_old_file_with_a_record_of_thousands_of_locators_is_refused(
    tmp_path: Path,
) -> None:
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    found = [{"locator": "get_by_text('x')", "name": "x"}] * 20_000
    step = {"kind": "action", "sentence": "open the shop", "code": OPEN_CODE.split("\n"),
            "origin": "generated", "green": {"on": "2026-12-04", "found": found}}  # fmt: skip
    path.write_text(json.dumps({"format": 2, "steps": [step]}), encoding="utf-8")
    with pytest.raises(CacheError, match=r"entry 1: 'green' is refused: it keeps 20,000 "):
        load_file(path, refuse_imports)


def test_values_and_data_read_as_python_a_reviewer_writes() -> None:
    entry = cache.StepEntry(
        kind="action",
        sentence='I log in as "{}" with the password "{}"',
        code="def step(page) -> None:\n    pass\n",
        origin="generated",
        data="| a |\n| b |",
        values=("ann", "it's"),
    )
    text = cache.render_steps([entry]).decode()
    assert '    values=("ann", "it\'s"),\n' in text
    assert '    data="| a |\\n| b |",\n' in text
    assert '    sentence=\'I log in as "{}" with the password "{}"\',\n' in text
    one = cache.render_steps([dataclasses.replace(entry, values=("ann",))]).decode()
    assert '    values=("ann",),\n' in one
    path = Path(file_name(entry.step))
    assert cache.parse(path, text.encode(), lambda code: None).entries == [entry]


def test_a_pin_of_a_python_test_leaves_its_own_shared_entry(tmp_path: Path) -> None:
    cache_store = store(tmp_path)
    cache_store.write(entry("open the shop", test="visit"))
    old = cache_store.lookup(CacheKey("visit", "action", "open the shop"))
    pin = entry("open the shop", test="visit", code=ADD_TEA, pinned=True, occurrence=2)
    assert cache_store.replace(pin, old)[0] is True
    reader = store(tmp_path)
    assert found_code(reader, CacheKey("visit", "action", "open the shop")) == OPEN_CODE
    second = CacheKey("visit", "action", "open the shop", occurrence=2)
    assert found_code(reader, second) == ADD_TEA


def wording(sentence: str, of: cache.StepEntry, code: str | None = None) -> CacheWrite:
    """The step ``sentence`` kept as another wording of the entry ``of`` (with its code)."""
    key = CacheKey(TEST, of.kind, sentence)
    return CacheWrite(key, code or of.code, "reused", wording_of=of)


def test_a_wording_write_adds_the_template_to_its_entry_and_nothing_else(tmp_path: Path) -> None:
    writer = store(tmp_path)
    writer.write(entry('the list shows "buy milk"', ADD_ANY))
    shown = writer.lookup(entry('the list shows "x"').key)
    assert shown is not None
    changed, written = writer.replace(wording('the list contains "feed the cat"', shown), None)
    assert changed and written.wordings == ('the list contains "{}"',)
    assert (written.origin, written.written, written.code) == (
        shown.origin,
        shown.written,
        shown.code,
    )
    assert sentences(tmp_path) == ['the list shows "{}"']  # no entry of its own
    reader = store(tmp_path)  # a later run finds the entry by the new wording
    assert reader.lookup(entry('the list contains "water"').key) == written
    # the same wording again changes nothing
    assert writer.replace(wording('the list contains "call Ann"', written), None) == (
        False,
        written,
    )


@pytest.mark.parametrize("meanwhile", ["changed", "gone"])
def test_a_wording_of_an_entry_another_run_changed_is_written_as_an_entry_of_its_own(
    tmp_path: Path, meanwhile: str
) -> None:
    writer = store(tmp_path)
    writer.write(entry('the list shows "buy milk"', ADD_ANY))
    read = writer.lookup(entry('the list shows "x"').key)
    assert read is not None
    other = store(tmp_path)  # another run, since this one read the entry
    if meanwhile == "changed":
        other.write(entry('the list shows "buy milk"', ADD_ANY + "\n    page.reload()"))
    else:
        other.drop([read])
    changed, written = writer.replace(wording('the list contains "water"', read), None)
    assert changed and written.sentence == 'the list contains "{}"' and not written.wordings
    assert written.origin == "reused" and written.code == read.code
    assert 'the list contains "{}"' in sentences(tmp_path)
    assert not any(e.wordings for e in store(tmp_path).library().entries)


def test_an_entry_takes_the_values_of_a_wording_its_code_fits() -> None:
    general = cache.StepEntry(
        "check", 'the list shows "{}"', ADD_ANY, "generated", parameters=("text",)
    )
    specific = cache.StepEntry("action", 'I add "{}"', ADD_TEA, "generated", values=("Green Tea",))
    assert general.takes(("water",)) and not general.takes(()) and not general.takes(("a", "b"))
    assert specific.takes(("Green Tea",)) and not specific.takes(("Blue Mug",))


def test_the_closest_entries_are_the_most_alike_above_the_floor_by_any_wording() -> None:
    def made(sentence: str, *wordings: str) -> cache.StepEntry:
        return cache.StepEntry("check", sentence, OPEN_CODE, "generated", wordings=wordings)

    shows = made('the list shows "{}"')
    holds = made("the cart is empty", 'the list should hold "{}"')
    other = made("the heading says Demo Shop")
    found = cache.closest('the list should contain "{}"', [other, shows, holds])
    assert found == [holds, shows]  # by its wording, the more alike first; the heading not near
    assert cache.closest('the list should contain "{}"', [shows], floor=0.9) == []


def test_new_code_for_a_step_found_by_a_wording_is_the_code_of_its_entry(tmp_path: Path) -> None:
    writer = store(tmp_path)
    writer.write(entry('the list shows "buy milk"', ADD_ANY))
    shown = writer.lookup(entry('the list shows "x"').key)
    assert shown is not None
    worded = writer.replace(wording('the list contains "water"', shown), None)[1]
    healed = ADD_ANY.replace("click()", "hover()")
    found = writer.lookup(entry('the list contains "milk"').key)
    assert found == worded
    changed, written = writer.replace(entry('the list contains "milk"', healed, "healed"), found)
    assert changed and (written.sentence, written.wordings) == (shown.sentence, worded.wordings)
    assert sentences(tmp_path) == ['the list shows "{}"']  # one entry still, with the new code
    for sentence in ('the list shows "x"', 'the list contains "x"'):
        assert found_code(store(tmp_path), entry(sentence).key) == healed


def test_a_review_lists_an_entry_that_gained_a_wording_and_the_listing_shows_it() -> None:
    shown = cache.StepEntry(
        "check", 'the list shows "{}"', ADD_ANY, "generated", parameters=("text",)
    )
    worded = dataclasses.replace(shown, wordings=('the list contains "{}"',))
    (change,) = entry_changes(cache.Library([shown]), cache.Library([worded]))
    assert change.what == "changed"
    assert change.headline().endswith("generated, also worded 'the list contains \"{}\"'")
    (back,) = entry_changes(cache.Library([worded]), cache.Library([shown]))
    assert back.headline().endswith("no longer worded 'the list contains \"{}\"'")
    assert describe(worded).endswith("(takes text; also 'the list contains \"{}\"')")


# -- links: nothing of the cache is listed, read, written or deleted through one ----------------


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    return Outside.made(tmp_path)


def their_library(folder: Path) -> Path:
    """A library file of another project's (a step this one also has), written in ``folder``."""
    theirs = CacheStore(folder, refuse_imports)
    theirs.write(entry("open the shop", 'def step(page) -> None:\n    page.goto("/theirs")'))
    return theirs.path_of(theirs.library().entries[0])


@pytest.mark.parametrize("planted", ["the cache folder", "the library folder"])
def test_a_cache_or_library_folder_planted_as_a_link_is_refused_before_anything_outside(
    tmp_path: Path, outside: Outside, planted: str
) -> None:
    """A pull request adds ``features/.prettyplay`` (or its ``steps``) as a link to a folder of
    the user's: no load lists it, no write or migration puts a step file, a temporary file or a
    lock there, and what is there is neither read nor served."""
    cache_dir = tmp_path / "cache"
    old_file(tmp_path, "shop/checkout.feature.json", raw_entry(sentence="pay"))  # to migrate
    if planted == "the cache folder":
        their_library(outside.folder)  # what it points to looks like a cache: theirs
        (tmp_path / "cache").rename(tmp_path / "kept")
        link = cache_dir
    else:
        their_library(outside.folder / "cache")
        link = cache_dir / "steps"
    link.symlink_to(outside.folder / ("cache/steps" if planted == "the library folder" else ""))
    outside.settle()
    refused = re.escape(f"{link}: {planted} is a symbolic link (to {os.readlink(link)}); ")
    refused += "prettyplay never follows one: delete the link"
    attempts = [
        lambda: store(tmp_path).lookup(entry("open the shop").key),
        lambda: store(tmp_path).write(entry("open the shop")),
        lambda: store(tmp_path).migrate(),
        lambda: cache.cache_files(cache_dir),
        lambda: cache.update(cache_dir, library_file(tmp_path), lambda _: None, refuse_imports),
    ]
    for attempt in attempts:
        with pytest.raises(CacheError, match=f"^{refused}$"):
            attempt()
        outside.untouched()  # after each: nothing written, listed or read there
    assert link.is_symlink()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_library_file_that_is_a_link_is_refused_unread_and_its_target_kept(
    tmp_path: Path, outside: Outside, link: str
) -> None:
    """The step's file is a link to another project's file of the same step: it is not served,
    not read, and no write goes to it, whatever store meets it first."""
    theirs = their_library(outside.folder)
    path = library_file(tmp_path)
    path.parent.mkdir(parents=True)
    if link == "symbolic":
        path.symlink_to(theirs)
        refused = re.escape(f"{path}: the library file is a symbolic link (to {theirs}); ")
        refused += "prettyplay never follows one: delete the link"
        refused_on_write = refused
    else:
        os.link(theirs, path)
        refused = re.escape(f"{path}: the library file is a hard link (another name shares ")
        refused_on_write = re.escape(f"{path}: the library file is not a file of its own (")
    outside.settle()
    loaded = store(tmp_path)
    with pytest.raises(CacheError, match=f"^{refused}"):
        loaded.lookup(entry("open the shop").key)
    with pytest.raises(CacheError, match=f"failed to load: {refused}"):
        loaded.write(entry("open the shop"))
    with pytest.raises(CacheError, match=f"^{refused_on_write}"):
        cache.update(tmp_path / "cache", path, lambda library: None, refuse_imports)
    outside.untouched()
    assert os.path.lexists(path) and not Path(f"{path}.lock").exists()


def test_a_folder_or_an_old_file_of_the_cache_that_is_a_link_is_never_followed(
    tmp_path: Path, outside: Outside
) -> None:
    """Old per-feature files are found by walking the cache folder: a folder of it that is a
    link is refused where the walk meets it, its target never listed; an old file that is a link
    is refused by name, unread, and the migration that would delete it does not start."""
    (outside.folder / "checkout.feature.json").write_text(document(raw_entry()))
    outside.settle()
    (tmp_path / "cache").mkdir()
    folder = tmp_path / "cache" / "shop"
    folder.symlink_to(outside.folder)
    refused = re.escape(f"{folder}: a folder of the cache is a symbolic link (to {outside.folder})")
    with pytest.raises(CacheError, match=f"^{refused}"):
        store(tmp_path).lookup(entry("open the shop").key)
    outside.untouched()
    folder.unlink()
    old = tmp_path / "cache" / "shop.feature.json"
    old.symlink_to(outside.folder / "checkout.feature.json")
    refused = re.escape(f"{old}: the cache file is a symbolic link (to {os.readlink(old)})")
    key = entry("open the shop", test="shop.feature::Buy").key
    with pytest.raises(CacheError, match=f"^{refused}"):
        store(tmp_path).lookup(key)
    with pytest.raises(CacheError, match=f"^{refused}"):
        store(tmp_path).migrate()
    outside.untouched()
    assert old.is_symlink()


# -- a library file in review: short lines, no port, no lock among the steps -------------------

LONG = "the order summary of the customer lists every product they chose, with its price " * 2


def test_a_library_file_keeps_every_line_within_100_characters_and_reads_back_the_same(
    tmp_path: Path,
) -> None:
    found = tuple(
        cache.Found(
            f'get_by_role("listitem").filter(has_text="product number {n} of the long list")',
            "listitem",
            f"product number {n} of the long list",
            text=LONG[:80],
            count=n + 2,
            must_find=n % 2 == 0,
        )
        for n in range(6)
    )
    green = cache.GreenRecord("2026-12-05", "/orders/summary?sort=price&page=2", found)
    verdict = RedVerdict("product_defect", LONG, LONG)
    written = dataclasses.replace(
        entry(LONG.strip(), verdict=verdict).library_entry("2026-12-05"), green=green
    )
    store(tmp_path).keep([written])
    [path] = (tmp_path / "cache" / "steps").glob("*.py")
    text = path.read_text()
    code_lines = set(OPEN_CODE.splitlines())
    long_lines = [line for line in text.splitlines() if len(line) > 100]
    assert [line for line in long_lines if line not in code_lines] == []
    [read] = load_file(path, check_code).entries
    assert read == written
    assert cache.render_steps([read]).decode() == text  # rewritten the same: no churn
    assert list(path.parent.glob("*.lock")) == []


def test_a_green_record_keeps_the_page_of_the_app_as_a_path_never_its_port() -> None:
    from prettyplay_behave.engine.evidence import green_record
    from prettyplay_behave.engine.history import Attempt
    from prettyplay_behave.vocabulary import Outcome

    found = (cache.Found('get_by_role("button", name="Add")', "button", "Add"),)

    def kept(url: str, base: str | None) -> str:
        ran = Attempt(Outcome.GREEN, "about:blank", url, OPEN_CODE, "", found=found)
        record = green_record(ran, "2026-12-05", lambda text: text, base)
        assert record is not None
        return record.url

    assert kept("http://127.0.0.1:34067/cart?x=1#top", "http://127.0.0.1:34067") == "/cart?x=1#top"
    assert kept("http://127.0.0.1:34067", "http://127.0.0.1:34067/") == "/"
    partner = "https://partner.example/pay"
    assert kept(partner, "http://127.0.0.1:34067") == partner  # another origin: as it is
    assert kept("http://127.0.0.1:34067/cart", None) == "http://127.0.0.1:34067/cart"
