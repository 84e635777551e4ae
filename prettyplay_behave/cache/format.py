"""The per-feature JSON files of formats 1 and 2: read, checked and migrated (the library of
format 3 is :mod:`.source`), and what both formats' readers share: decoding, an entry's fields.

Format 2 is a feature's step library as JSON; format 1 an entry per scenario and occurrence.
Whatever the bytes hold, a read raises a CacheError naming the file, never another exception.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..address import scenario_test
from ..errors import CacheError, CodePolicyError, escape_controls
from ..parameters import MARK
from ..safety.step_code import step_code
from ..vocabulary import Kind, counted
from .library import (
    FORMAT,
    ORIGINS,
    RED_LABELS,
    CacheKey,
    CacheWrite,
    Found,
    GreenRecord,
    Library,
    RedVerdict,
    StepEntry,
    Validate,
    _quoted,
    record_problem,
)
from .paths import link_error, role

READS = (1, 2, 3)  # the formats a file may be in

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
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def read(path: Path) -> bytes:
    """The bytes of the file at ``path``; a CacheError when it is no regular file (a named pipe
    or a device planted in its place would block or never end) or no file of its own: a
    symbolic link, never followed, or a hard link (another name shares its file)."""
    if not _NO_FOLLOW and os.path.islink(path):  # a system that cannot open without following
        raise link_error(path)
    try:
        # O_NONBLOCK: opening a named pipe returns at once, so it can be refused; O_NOFOLLOW:
        # opening a link fails, whatever was there when it was listed
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NO_FOLLOW)
    except OSError as exc:
        if os.path.islink(path):
            raise link_error(path) from None
        raise CacheError(f"{path}: cannot read: {exc}") from exc
    with open(fd, "rb") as handle:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise CacheError(f"{path}: not a regular file (a named pipe, a device or a socket)")
        if found.st_nlink > 1:
            raise CacheError(
                f"{path}: {role(path)} is a hard link (another name shares its file); "
                "prettyplay never reads one: delete it"
            )
        try:
            return handle.read()
        except OSError as exc:
            raise CacheError(f"{path}: cannot read: {exc}") from exc


def decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CacheError(f"{path}: not valid UTF-8 at line {line}") from exc


def unknown_format(path: Path, version: object, library: bool = False) -> CacheError:
    """The error of a file in a format this prettyplay does not read in a file of its kind (a
    library file is of format 3, a JSON file of 1 or 2)."""
    if type(version) is int and version > FORMAT:
        return CacheError(
            f"{path}: cache format {version} is newer than this prettyplay reads (it reads "
            f"formats {', '.join(map(str, READS[:-1]))} and {READS[-1]}; upgrade "
            "prettyplay-behave to read this file)"
        )
    here = f"format {FORMAT} in a library file" if library else "formats 1 and 2 in a JSON file"
    return CacheError(f"{path}: cache format {_quoted(version)} is unknown (it reads {here})")


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


def _text(where: str, raw: dict[str, Any], name: str, required: bool = True) -> str:
    if name not in raw:
        if required:
            raise CacheError(f"{where}: missing field {name!r}")
        return ""
    if not isinstance(raw[name], str):
        raise CacheError(f"{where}: {name!r} must be a string")
    return str(raw[name])


def _kind(where: str, text: str) -> str:
    try:
        return str(Kind(text))
    except ValueError:
        kinds = ", ".join(str(kind) for kind in Kind)
        raise CacheError(
            f"{where}: unknown kind {_quoted(text)} (expected one of {kinds})"
        ) from None


def _origin(where: str, text: str) -> str:
    if text not in ORIGINS:
        raise CacheError(f"{where}: unknown origin {_quoted(text)} (expected one of {ORIGINS})")
    return text


def _checked(where: str, entry: StepEntry, validate: Validate) -> StepEntry:
    _origin(where, entry.origin)
    try:
        validate(entry.code)
    except CodePolicyError as exc:
        raise CacheError(f"{where} ({entry.describe()}): the code is refused: {exc}") from exc
    names = step_code(entry.code).parameters
    if names != entry.parameters:
        raise CacheError(
            f"{where} ({entry.describe()}): 'parameters' {list(entry.parameters)} are not what "
            f"its code takes after page ({list(names)})"
        )
    problem = _unmarked(entry)
    if problem:
        raise CacheError(f"{where} ({entry.describe()}): {problem}")
    return entry


def _unmarked(entry: StepEntry) -> str:
    """What of an entry disagrees with the marks (``{}``) of its sentence, which a lookup and
    the export read it by: a value a mark, code that takes no parameter or one a mark, and
    every wording as many marks. '' when nothing does."""
    marks = entry.sentence.count(MARK)
    spelled = f"its sentence has {counted(marks, 'mark')} ({MARK})"
    if entry.values is not None and len(entry.values) != marks:
        return f"'values' holds {counted(len(entry.values), 'value')}, but {spelled}"
    if len(entry.parameters) not in (0, marks):
        taken = counted(len(entry.parameters), "parameter")
        return f"its code takes {taken} after page, but {spelled}: none, or one a mark"
    for wording in entry.wordings:
        if wording.count(MARK) != marks:
            has = counted(wording.count(MARK), "mark")
            return f"the wording {_quoted(wording)} has {has}, but {spelled}"
    return ""


def parse_entry(where: str, raw: Any, validate: Validate, library: bool = False) -> StepEntry:
    """An entry from its fields (a JSON object of format 2; a library's keywords translated to
    them, where ``feature`` may be set too), checked."""
    if not isinstance(raw, dict):
        raise CacheError(f"{where}: expected an object")
    unknown = sorted(set(raw) - _FIELDS - ({"feature"} if library else set()))
    if unknown:
        raise CacheError(f"{where}: unknown fields {_quoted(unknown)}")
    missing = sorted({"code", "kind", "origin", "sentence"} - set(raw))
    if missing:
        raise CacheError(f"{where}: missing fields {missing}")
    values = _texts(where, raw, "values") if "values" in raw else None
    scenario = _text(where, raw, "scenario") if "scenario" in raw else None
    occurrence = raw.get("occurrence", 1)
    if type(occurrence) is not int or occurrence < 1:
        raise CacheError(
            f"{where}: 'occurrence' must be a whole number from 1, not {_quoted(occurrence)}"
        )
    if "occurrence" in raw and scenario is None:
        raise CacheError(f"{where}: 'occurrence' belongs to an entry pinned to a 'scenario'")
    verdict = _verdict(where, raw["verdict"]) if "verdict" in raw else None
    if verdict is not None and scenario is None:
        raise CacheError(f"{where}: a red entry ('verdict') is pinned to its 'scenario'")
    entry = StepEntry(
        kind=_kind(where, _text(where, raw, "kind")),
        sentence=_text(where, raw, "sentence"),
        code="\n".join(_texts(where, raw, "code")),
        origin=_origin(where, _text(where, raw, "origin")),
        data="\n".join(_texts(where, raw, "data")),
        parameters=_texts(where, raw, "parameters"),
        values=values,
        scenario=scenario,
        occurrence=occurrence,
        model=escape_controls(_text(where, raw, "model", required=False)),
        written=escape_controls(_text(where, raw, "written", required=False)),
        verdict=verdict,
        wordings=_texts(where, raw, "wordings"),
        green=_green(where, raw["green"]) if "green" in raw else None,
        feature=_text(where, raw, "feature", required=False),
    )
    return _checked(where, entry, validate)


_FOUND_FIELDS = ("locator", "role", "name", "test_id", "text", "tag")


def _green(where: str, raw: Any) -> GreenRecord:
    if not isinstance(raw, dict) or set(raw) - {"on", "url", "found"}:
        raise CacheError(f"{where}: 'green' must hold on, url and found")
    found = raw.get("found", [])
    if not isinstance(found, list):
        raise CacheError(f"{where}: 'green' 'found' must be a list of objects")
    elements = []
    for item in found:
        if not isinstance(item, dict) or set(item) - set(_FOUND_FIELDS):
            raise CacheError(f"{where}: 'green' 'found' items hold only {list(_FOUND_FIELDS)}")
        elements.append(
            Found(*(_text(where, item, name, name == "locator") for name in _FOUND_FIELDS))
        )
    green = GreenRecord(_text(where, raw, "on"), _text(where, raw, "url", False), tuple(elements))
    problem = record_problem(green)
    if problem:
        raise CacheError(f"{where}: 'green' is refused: {problem}")
    return green


def _verdict(where: str, raw: Any) -> RedVerdict:
    if not isinstance(raw, dict) or set(raw) - {"label", "explanation", "recommendation"}:
        raise CacheError(f"{where}: 'verdict' must hold label, explanation and recommendation")
    label = _text(where, raw, "label")
    if label not in RED_LABELS:
        raise CacheError(
            f"{where}: a red entry's label is one of {RED_LABELS}, not {_quoted(label)}"
        )
    return RedVerdict(
        label, _text(where, raw, "explanation"), _text(where, raw, "recommendation", False)
    )


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
            library.upsert(_checked(where, entry, validate))
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
        _kind(where, _text(where, raw, "kind")),
        _text(where, raw, "sentence"),
        "\n".join(_texts(where, raw, "data")),
        occurrence,
    )
    code = "\n".join(_texts(where, raw, "code"))
    return key, code, _origin(where, _text(where, raw, "origin"))
