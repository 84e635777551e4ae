"""The per-feature JSON files of formats 1 and 2, read only to be migrated into the library
(format 3, :mod:`.source`): each entry's fields become the keywords a library file holds them
in, read and checked by the one schema (:mod:`.schema`).

Format 2 is a feature's step library as JSON; format 1 an entry per scenario and occurrence.
Whatever the bytes hold, a read raises a CacheError naming the file, never another exception.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..address import scenario_test
from ..errors import CacheError
from .library import (
    CONFLICT_MARKERS,
    CacheKey,
    CacheWrite,
    Library,
    StepEntry,
    Validate,
    _quoted,
    unknown_format,
)
from .paths import decode
from .schema import checked, entry_from, read_field

_V1_FIELDS = {"code", "data", "kind", "occurrence", "origin", "sentence"}
_FIELDS = {
    "code",
    "data",
    "green",
    "kind",
    "model",
    "occurrence",
    "origin",
    "parameters",
    "scenario",
    "sentence",
    "values",
    "verdict",
    "wordings",
    "written",
}


def parse_json(path: Path, raw: bytes, validate: Validate) -> Library:
    """Parse and check the bytes of a per-feature file (format 1 or 2)."""
    text = decode(path, raw)
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and the like, which are no lines.
    for number, line_text in enumerate(text.split("\n"), start=1):
        if line_text.startswith(CONFLICT_MARKERS):
            raise CacheError(
                f"{path}: merge conflict markers at line {number}; resolve the conflict "
                "(or delete the file to generate its entries again)"
            )
    if not text.strip():
        raise CacheError(f"{path}: the file is empty")
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        if not text[exc.pos :].strip():
            raise CacheError(
                f"{path}: the JSON ends early at line {exc.lineno} (truncated?)"
            ) from exc
        raise CacheError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except _DuplicateKeyError as exc:
        raise CacheError(
            f"{path}: the key {_quoted(exc.args[0])} appears twice in one object"
        ) from exc
    except RecursionError:
        # json's parser recurses per level; a file of arrays in arrays runs out of stack.
        raise CacheError(f"{path}: the JSON nests too deeply to be a cache file") from None
    except ValueError as exc:  # a number past the digits Python converts (sys.int_info)
        raise CacheError(f"{path}: a value cannot be read: {exc}") from None
    return _parse_document(path, document, validate)


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys silently; a bad merge can produce them.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _parse_document(path: Path, document: Any, validate: Validate) -> Library:
    if not isinstance(document, dict):
        raise CacheError(f"{path}: expected a JSON object at the top")
    if "format" not in document:
        raise CacheError(f"{path}: the 'format' field is missing")
    version = document["format"]
    if type(version) is not int or version not in (1, 2):
        raise unknown_format(path, version)
    if version == 1:
        return Library(_parse_v1(path, document, validate), format=1)
    unknown = set(document) - {"format", "steps"}
    if unknown:
        raise CacheError(f"{path}: unknown top-level fields {_quoted(sorted(unknown))}")
    steps = document.get("steps")
    if not isinstance(steps, list):
        raise CacheError(f"{path}: 'steps' must be a list of entries")
    library = Library()
    seen: set[tuple[object, ...]] = set()
    for index, raw in enumerate(steps, start=1):
        where = f"{path}: entry {index}"
        entry = parse_entry(where, raw, validate)
        if entry.identity in seen:
            raise CacheError(f"{where}: duplicate of an earlier entry ({entry.describe()})")
        seen.add(entry.identity)
        library.upsert(entry)
    return library


def _texts(where: str, raw: dict[str, Any], name: str) -> tuple[str, ...]:
    value = raw.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CacheError(f"{where}: {name!r} must be a list of strings")
    return tuple(value)


def parse_entry(where: str, raw: Any, validate: Validate) -> StepEntry:
    """An entry of format 2 (a JSON object), read as the library file's keywords, checked."""
    if not isinstance(raw, dict):
        raise CacheError(f"{where}: expected an object")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise CacheError(f"{where}: unknown fields {_quoted(unknown)}")
    missing = sorted({"code", "kind", "origin", "sentence"} - set(raw))
    if missing:
        raise CacheError(f"{where}: missing fields {missing}")
    given: dict[str, Any] = {}
    for name, value in raw.items():
        if name in ("code", "parameters"):
            continue
        if name == "data":
            given[name] = "\n".join(_texts(where, raw, name))
        elif name in ("values", "wordings"):
            given[name] = _texts(where, raw, name)
        elif name == "verdict":
            given |= _verdict(where, value)
        else:
            given[name] = value
    if "scenario" in given:  # a pin names its feature by the file it is in (see ``merged``)
        given["feature"] = ""
    code = "\n".join(_texts(where, raw, "code"))
    entry = entry_from(where, given, code, validate)
    if "parameters" in raw and _texts(where, raw, "parameters") != entry.parameters:
        raise CacheError(
            f"{where} ({entry.describe()}): 'parameters' {raw['parameters']} are not what "
            f"its code takes after page ({list(entry.parameters)})"
        )
    return entry


def _verdict(where: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) - {"label", "explanation", "recommendation"}:
        raise CacheError(f"{where}: 'verdict' must hold label, explanation and recommendation")
    given = {"verdict": raw.get("label"), "explanation": raw.get("explanation")}
    if "recommendation" in raw:
        given["recommendation"] = raw["recommendation"]
    return {name: value for name, value in given.items() if value is not None}


def _parse_v1(path: Path, document: dict[str, Any], validate: Validate) -> list[StepEntry]:
    """A format-1 file (an entry per scenario and occurrence) as the library it migrates to:
    equal code of one step is one entry; other code of it is pinned to its scenario."""
    unknown = set(document) - {"format", "tests"}
    if unknown:
        raise CacheError(f"{path}: unknown top-level fields {_quoted(sorted(unknown))}")
    tests = document.get("tests")
    if not isinstance(tests, dict):
        raise CacheError(f"{path}: 'tests' must be an object of test name -> list of entries")
    library = Library()
    for scenario, raw_entries in tests.items():
        if not isinstance(raw_entries, list):
            raise CacheError(f"{path}: test {_quoted(scenario)}: expected a list of entries")
        seen: set[tuple[str, str, str, int]] = set()
        for index, raw in enumerate(raw_entries, start=1):
            where = f"{path}: test {_quoted(scenario)}, entry {index}"
            key, code, origin = _parse_v1_entry(where, raw)
            if (key.kind, key.sentence, key.data, key.occurrence) in seen:
                raise CacheError(
                    f"{where}: duplicate of an earlier entry ({key.kind} {key.sentence!r}, "
                    f"occurrence {key.occurrence})"
                )
            seen.add((key.kind, key.sentence, key.data, key.occurrence))
            shared = CacheWrite(key, code, origin).library_entry()
            found = library.find(key)
            if found is not None and found.code == shared.code:
                continue
            entry = shared if found is None else replace(shared, scenario=scenario)
            library.upsert(checked(where, entry, validate))
    return library.entries


def _parse_v1_entry(where: str, raw: Any) -> tuple[CacheKey, str, str]:
    if not isinstance(raw, dict):
        raise CacheError(f"{where}: expected an object")
    missing = sorted(_V1_FIELDS - {"data"} - set(raw))
    if missing:
        raise CacheError(f"{where}: missing fields {missing}")
    unknown = sorted(set(raw) - _V1_FIELDS)
    if unknown:
        raise CacheError(f"{where}: unknown fields {_quoted(unknown)}")
    occurrence = raw["occurrence"]
    if type(occurrence) is not int or occurrence < 1:
        raise CacheError(
            f"{where}: 'occurrence' must be a whole number from 1, not {_quoted(occurrence)}"
        )
    key = CacheKey(
        scenario_test("", ""),  # a scenario of a feature (named by the file); its key finds no pin
        read_field("kind", where, raw),
        read_field("sentence", where, raw),
        "\n".join(_texts(where, raw, "data")),
        occurrence,
    )
    code = "\n".join(_texts(where, raw, "code"))
    return key, code, read_field("origin", where, raw)
