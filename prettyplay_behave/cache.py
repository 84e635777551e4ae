"""The cache files: a step library per feature, replayed without an LLM.

One JSON file per feature file mirrors its path under the cache folder
(``<cache_dir>/shop/checkout.feature.json``); a test of the Python API, whose name has no
``::``, has ``<cache_dir>/<name>.json``. A file (format 2) is the feature's **step library**: an
entry per step (kind, sentence template, data), shared by every scenario of the feature that
has the step. A sentence's quoted strings, numbers and Outline placeholders are its parameters
(:mod:`..parameters`): the template ``I add the "{}" to the cart`` is one entry for every
product, its code taking the product as a parameter. An entry may be narrower:

- **specific to values** (``values``): its code spells the values out, so it serves only them;
- **pinned to a scenario** (``scenario``, ``occurrence``): the same sentence needs other code
  in that scenario (its occurrence-th step with that sentence), or the step was judged red there;
- **red** (``verdict``): judged ``product_defect`` or ``incurable``; a replay that is still red
  fails with the stored verdict, with no LLM request, and a green one turns the entry green.

::

    {
      "format": 2,
      "steps": [
        {
          "code": [
            "def step(page, text) -> None:",
            "    page.get_by_role('listitem').filter(has_text=text).get_by_role('button').click()"
          ],
          "kind": "action",
          "model": "gpt-4.1-mini",
          "origin": "generated",
          "parameters": ["text"],
          "sentence": "I add the \\"{}\\" to the cart",
          "written": "2026-12-02"
        }
      ]
    }

A step finds its entry in this order: its scenario's pin, an entry specific to its values, the
template's entry, and an entry of its sentence as written (a format-1 entry of an Outline row).
Format 1 (an entry per scenario and occurrence) is read as before and rewritten as format 2 on
the first write or by ``prettyplay cache migrate``, nothing lost: equal code of the same step
becomes one entry, other code a pin of its scenario. Writes are locked (``<file>.lock``) and
atomic; every load checks the syntax, the format, each entry's shape and its code.

A file is input nobody vouches for (it comes in with a pull request): whatever it holds, a load
raises a CacheError naming the file, never another exception (JSON nested past any stack, a
value too big or too deep to print in the message), and a named pipe or a device in its place is
refused unread. The text an entry only describes itself with (a red verdict's explanation and
recommendation, ``model``, ``written``) is read with its control characters escaped, so no
output shows them raw; the text a step is matched by (sentence, data, values, scenario) is kept
as written and escaped where it is shown. A lock file is never followed through a symbolic link
(nor opened when another name shares its file): such a lock is refused with a CacheError naming
it, and the file it points to is untouched.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import reprlib
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import CacheError, CodePolicyError, escape_controls
from .parameters import Parameters, parameterize
from .safety.step_code import step_code
from .vocabulary import Kind, Origin

FORMAT = 2
READS = (1, 2)
CACHE_FOLDER = ".prettyplay"  # beside the features, by default
DEFAULT_CACHE_DIR = Path("features") / CACHE_FOLDER
ORIGINS = tuple(str(origin) for origin in Origin if origin.stored)
RED_LABELS = ("product_defect", "incurable")
SEPARATOR = "::"

_V1_FIELDS = {"code", "data", "kind", "occurrence", "origin", "sentence"}
_FIELDS = {
    "code",
    "data",
    "kind",
    "model",
    "occurrence",
    "origin",
    "parameters",
    "scenario",
    "sentence",
    "values",
    "verdict",
    "written",
}
_CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")
# Characters Windows (or a shell) refuses in file names; `/` is kept as the folder separator.
_HOSTILE = re.compile(r'[<>:"\\|?*\x00-\x1f]')

Validate = Callable[[str], None]

# What a message quotes of a value the file holds: a few levels and items, whatever its size.
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxdict, _QUOTE.maxstring = 2, 4, 4, 200


def _quoted(value: object) -> str:
    return _QUOTE.repr(value)


@dataclass(frozen=True)
class CacheKey:
    """The address of one step of one test: its test, kind, sentence (as the step has it, values
    filled in), data, occurrence (identical steps earlier in the test) and, for an Outline row,
    the Outline step it was made from."""

    test: str
    kind: str
    sentence: str
    data: str = ""
    occurrence: int = 1
    outline: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", str(Kind(self.kind)))

    @cached_property
    def parameters(self) -> Parameters:
        return parameterize(self.sentence, self.outline)

    @property
    def scenario(self) -> str:
        """The test's key in its cache file: the scenario name, or the test's own name."""
        return self.test.partition(SEPARATOR)[2] if SEPARATOR in self.test else self.test


@dataclass(frozen=True)
class RedVerdict:
    """The verdict a red entry remembers."""

    label: str
    explanation: str
    recommendation: str = ""

    def __post_init__(self) -> None:
        # the LLM's words, or a planted file's: kept (and shown) with control characters escaped
        for name in ("explanation", "recommendation"):
            object.__setattr__(self, name, escape_controls(getattr(self, name)))


@dataclass(frozen=True)
class StepEntry:
    """One entry of a feature's step library."""

    kind: str
    sentence: str  # the template, ``{}`` for each parameter
    code: str
    origin: str
    data: str = ""
    parameters: tuple[str, ...] = ()  # what the code takes after ``page``
    values: tuple[str, ...] | None = None  # only these values, when set
    scenario: str | None = None  # pinned to this scenario, when set
    occurrence: int = 1  # the scenario's occurrence of the step it is pinned to
    model: str = ""
    written: str = ""  # the day its code was written
    verdict: RedVerdict | None = None

    def __post_init__(self) -> None:
        # One canonical form: the file stores lines, so code always ends in exactly one newline.
        object.__setattr__(self, "code", self.code.rstrip("\n") + "\n")

    @property
    def identity(self) -> tuple[object, ...]:
        """What two entries of one library may not share."""
        pin = (self.scenario, self.occurrence) if self.scenario is not None else (None, 0)
        return (self.kind, self.sentence, self.data, self.values, *pin)

    @property
    def red(self) -> bool:
        return self.verdict is not None

    def describe(self) -> str:
        parts = [f"{self.kind} {_quoted(self.sentence)}"]
        if self.values is not None:
            parts.append(f"for {', '.join(map(repr, self.values))}")
        if self.scenario is not None:
            occurrence = f" #{self.occurrence}" if self.occurrence > 1 else ""
            parts.append(f"in {_quoted(self.scenario)}{occurrence}")
        return " ".join(parts)


@dataclass(frozen=True)
class CacheEntry:
    """Code to keep for the step at ``key``: a library entry, specific to the step's values when
    the code spells them out, or pinned to the step's scenario (``pinned``), red with a
    ``verdict``."""

    key: CacheKey
    code: str
    origin: str  # an Origin's value; checked when the entry is written
    pinned: bool = False
    verdict: RedVerdict | None = None
    model: str = ""

    def library_entry(self, written: str = "") -> StepEntry:
        key, parameters = self.key, self.key.parameters
        code = step_code(self.code)
        names, uses_all = code.parameters, code.uses_all_parameters
        general = bool(names) and uses_all and len(names) == len(parameters.values)
        return StepEntry(
            kind=key.kind,
            sentence=parameters.template,
            code=self.code,
            origin=self.origin,
            data=key.data,
            parameters=names,
            values=None if general or not parameters.values else parameters.values,
            scenario=key.scenario if self.pinned or self.verdict else None,
            occurrence=key.occurrence,
            model=self.model,
            written=written,
            verdict=self.verdict,
        )


class Library:
    """The entries of one cache file, and the format it was read in; indexed by their place
    (kind, data, sentence) so that a lookup costs the same in a file of ten entries or ten
    thousand."""

    def __init__(self, entries: Iterable[StepEntry] = (), format: int = FORMAT) -> None:
        self.format = format
        self._entries: dict[tuple[object, ...], StepEntry] = {}
        self._places: dict[tuple[str, str, str], dict[tuple[object, ...], StepEntry]] = {}
        for entry in entries:
            self.upsert(entry)

    @property
    def entries(self) -> list[StepEntry]:
        """In the order they were added; a replaced entry keeps its place."""
        return list(self._entries.values())

    def find(self, key: CacheKey, pins: bool = True) -> StepEntry | None:
        """The entry that serves ``key``, in the order the module tells (``pins=False``: the
        entry it would find without its scenario's pin)."""
        parameters, scenario = key.parameters, key.scenario
        templated = self._at(key.kind, key.data, parameters.template)
        literal = [e for e in self._at(key.kind, key.data, key.sentence) if not e.parameters]

        def fits(entry: StepEntry, values: tuple[str, ...]) -> bool:
            if entry.values is not None:
                return entry.values == values
            return len(entry.parameters) in (0, len(values)) if values else not entry.parameters

        def pinned(entry: StepEntry) -> bool:
            return entry.scenario == scenario and entry.occurrence == key.occurrence

        for candidates, values in ((templated, parameters.values), (literal, ())):
            for entry in candidates:
                if pins and pinned(entry) and fits(entry, values):
                    return entry
        for candidates, values in ((templated, parameters.values), (literal, ())):
            shared = [e for e in candidates if e.scenario is None and fits(e, values)]
            specific = [e for e in shared if e.values is not None]
            if specific or shared:
                return (specific or shared)[0]
        return None

    def get(self, identity: tuple[object, ...]) -> StepEntry | None:
        return self._entries.get(identity)

    def _at(self, kind: str, data: str, sentence: str) -> list[StepEntry]:
        return list(self._places.get((kind, data, sentence), {}).values())

    def upsert(self, entry: StepEntry) -> None:
        """Add ``entry``, or replace the one of its identity in place."""
        self._entries[entry.identity] = entry
        self._places.setdefault((entry.kind, entry.data, entry.sentence), {})[entry.identity] = (
            entry
        )

    def remove(self, doomed: Iterable[StepEntry]) -> None:
        for entry in doomed:
            if self._entries.pop(entry.identity, None) is not None:
                del self._places[(entry.kind, entry.data, entry.sentence)][entry.identity]


def locate(cache_dir: Path, test_name: str) -> tuple[Path, str]:
    """The cache file of a test and the test's key inside it (its scenario)."""
    if SEPARATOR in test_name:
        feature, _, test_key = test_name.partition(SEPARATOR)
        parts = _path_parts(test_name, feature)
    else:
        test_key = test_name
        parts = _path_parts(test_name, _HOSTILE.sub("_", test_name))
    parts[-1] += ".json"
    return cache_dir.joinpath(*parts), test_key


def _path_parts(test_name: str, path: str) -> list[str]:
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise CacheError(f"test {test_name!r}: its cache file would lie outside the cache folder")
    if not parts:
        raise CacheError(f"test {test_name!r}: no cache file name can be made from it")
    return parts


def feature_of(cache_dir: Path, path: Path) -> str:
    """The feature file a cache file belongs to, relative to the features folder ("" for a
    test of the Python API)."""
    try:
        stem = path.relative_to(cache_dir).as_posix().removesuffix(".json")
    except ValueError:
        return ""
    return stem if stem.endswith(".feature") else ""


# --- reading ---


def load_file(path: Path, validate: Validate) -> Library:
    """Parse and check a cache file. Raises CacheError naming the file (and the line or entry)
    when anything is wrong; the file is never modified."""
    return parse(path, _read(path), validate)


def _read(path: Path) -> bytes:
    """The bytes of the file at ``path``; a CacheError when it is no regular file (a named pipe
    or a device planted in its place would block or never end)."""
    try:
        # O_NONBLOCK: opening a named pipe returns at once, so it can be refused
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise CacheError(f"{path}: cannot read: {exc}") from exc
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CacheError(f"{path}: not a regular file (a named pipe, a device or a socket)")
        try:
            return handle.read()
        except OSError as exc:
            raise CacheError(f"{path}: cannot read: {exc}") from exc


def parse(path: Path, raw: bytes, validate: Validate) -> Library:
    """Parse and check the bytes of a cache file, as :func:`load_file` does with the file's own:
    e.g. the file as a git commit holds it. ``path`` only names it in errors."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CacheError(f"{path}: not valid UTF-8 at line {line}") from exc
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and the like, which are no lines.
    for number, line_text in enumerate(text.split("\n"), start=1):
        if line_text.startswith(_CONFLICT_MARKERS):
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
    if type(version) is not int or version not in READS:
        newer = type(version) is int and version > FORMAT
        raise CacheError(
            f"{path}: cache format {_quoted(version)} "
            + ("is newer than this prettyplay reads" if newer else "is unknown")
            + f" (it reads formats {' and '.join(map(str, READS))}"
            + ("; upgrade prettyplay-behave to read this file)" if newer else ")")
        )
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
        entry = _parse_entry(where, raw, validate)
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
    return entry


def _parse_entry(where: str, raw: Any, validate: Validate) -> StepEntry:
    if not isinstance(raw, dict):
        raise CacheError(f"{where}: expected an object")
    unknown = sorted(set(raw) - _FIELDS)
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
    )
    return _checked(where, entry, validate)


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
            shared = CacheEntry(key, code, origin).library_entry()
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
        "_",
        _kind(where, _text(where, raw, "kind")),
        _text(where, raw, "sentence"),
        "\n".join(_texts(where, raw, "data")),
        occurrence,
    )
    code = "\n".join(_texts(where, raw, "code"))
    return key, code, _origin(where, _text(where, raw, "origin"))


# --- writing ---


def render(library: Library) -> bytes:
    """The file's bytes: entries in one stable order, sorted keys, two-space indent."""
    ordered = sorted(library.entries, key=_order)
    document = {"format": FORMAT, "steps": [_entry_json(e) for e in ordered]}
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _order(entry: StepEntry) -> tuple[object, ...]:
    pin = (entry.scenario is not None, entry.scenario or "", entry.occurrence)
    return (
        entry.sentence,
        entry.kind,
        entry.data,
        entry.values is not None,
        entry.values or (),
        *pin,
    )


def _entry_json(entry: StepEntry) -> dict[str, Any]:
    raw: dict[str, Any] = {
        # one line per list item; the final newline of the code is implied
        "code": entry.code.rstrip("\n").split("\n"),
        "kind": entry.kind,
        "origin": entry.origin,
        "sentence": entry.sentence,
    }
    optional: dict[str, Any] = {
        "data": entry.data.split("\n") if entry.data else None,
        "parameters": list(entry.parameters) or None,
        "values": list(entry.values) if entry.values is not None else None,
        "scenario": entry.scenario,
        "occurrence": entry.occurrence if entry.scenario is not None else None,
        "model": entry.model or None,
        "written": entry.written or None,
        "verdict": ({k: v for k, v in vars(entry.verdict).items() if v} if entry.verdict else None),
    }
    raw.update({name: value for name, value in optional.items() if value is not None})
    return raw


def update(
    path: Path,
    change: Callable[[Library], None],
    validate: Validate,
    lock_timeout: float = 30.0,
) -> tuple[bool, Library]:
    """Apply ``change`` to the file's library under its lock; write only when the bytes differ
    (a format-1 file is written as format 2). Returns whether the file changed and its library
    afterwards. A file without entries left is deleted."""
    import filelock  # loaded only when a file is written, never on a plain replay

    lock_path = Path(f"{path}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _refuse_shared(lock_path)
        with filelock.FileLock(lock_path, timeout=lock_timeout):
            old = _read(path) if path.exists() else None
            library = parse(path, old, validate) if old is not None else Library()
            change(library)
            if not library.entries:
                if old is None:
                    return False, library
                path.unlink()
                _fsync_folder(path.parent)
                return True, library
            new = render(library)
            library.format = FORMAT
            if new == old:
                return False, library
            _replace(path, new)
            return True, library
    except filelock.Timeout as exc:
        raise CacheError(
            f"{path}: gave up after {lock_timeout}s waiting for the lock {lock_path} "
            "(another run is writing; if none is, the lock is stale)"
        ) from exc
    except OSError as exc:
        raise CacheError(f"{path}: cannot write: {exc}") from exc


def _refuse_shared(lock_path: Path) -> None:
    """Refuse a lock file that is a symbolic link or shares its file with another name: opening
    it to lock (filelock truncates it) would reach a file outside the cache. The dependency's
    floor opens lock files without following links; this check holds whatever version runs."""
    try:
        found = os.lstat(lock_path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(found.st_mode):
        raise CacheError(
            f"{lock_path}: the lock file is a symbolic link (to {os.readlink(lock_path)}); "
            "prettyplay never follows one: delete the link"
        )
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
        raise CacheError(
            f"{lock_path}: the lock file is not a file of its own (a hard link or not a regular "
            "file); prettyplay never opens one: delete it"
        )


def _replace(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` atomically: a temp file in the same folder, then a rename."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        # os.open with 0o666 lets the umask decide, as for any file the user creates.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    # Makes the rename durable; Windows cannot open a folder for this.
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cache_files(cache_dir: Path) -> list[Path]:
    return sorted(path for path in cache_dir.rglob("*.json") if path.is_file())


def today() -> str:
    return datetime.date.today().isoformat()


# --- the store ---


class CacheStore:
    """The cache as one run sees it: files load lazily, once."""

    def __init__(self, cache_dir: Path, validate: Validate, lock_timeout: float = 30.0) -> None:
        self.cache_dir = cache_dir
        self._validate = validate
        self._lock_timeout = lock_timeout
        self._files: dict[Path, Library] = {}
        self._broken: dict[Path, CacheError] = {}

    def path_for(self, test_name: str) -> Path:
        """The cache file holding the entries of ``test_name``."""
        return locate(self.cache_dir, test_name)[0]

    def lookup(self, key: CacheKey) -> StepEntry | None:
        """The entry that serves ``key``, or None; raises CacheError when its file is corrupt."""
        return self.library(self.path_for(key.test)).find(key)

    def write(self, entry: CacheEntry) -> bool:
        """Keep ``entry`` in its feature's library, replacing the one of the same identity in
        place; True if the file changed."""
        stored = entry.library_entry(today())
        return self.keep(self.path_for(entry.key.test), [stored])

    def keep(self, path: Path, entries: list[StepEntry], doomed: Iterable[StepEntry] = ()) -> bool:
        """Upsert ``entries`` into the file at ``path`` (and drop ``doomed``); True if it
        changed. An entry whose code did not change keeps the day it was written."""
        if path in self._broken:
            raise CacheError(
                f"refusing to overwrite a cache file that failed to load: {self._broken[path]}"
            )
        checked = [_checked(f"{path}: a new entry", e, self._validate) for e in entries]
        gone = list(doomed)

        def change(library: Library) -> None:
            library.remove(gone)
            for entry in checked:
                old = library.get(entry.identity)
                if old is not None and old.code == entry.code and old.written:
                    entry = replace(entry, written=old.written, model=old.model or entry.model)
                library.upsert(entry)

        changed, library = update(path, change, self._validate, self._lock_timeout)
        self._files[path] = library
        return changed

    def drop(self, path: Path, doomed: Iterable[StepEntry]) -> bool:
        return self.keep(path, [], doomed)

    def library(self, path: Path) -> Library:
        if path in self._broken:
            raise self._broken[path]
        if path not in self._files:
            try:
                self._files[path] = load_file(path, self._validate) if path.exists() else Library()
            except CacheError as exc:
                self._broken[path] = exc
                raise
        return self._files[path]

    def everywhere(self) -> Iterator[tuple[Path, StepEntry]]:
        """Every entry of every cache file in the folder (files that fail to load skipped: their
        own steps report them)."""
        for path in cache_files(self.cache_dir):
            with contextlib.suppress(CacheError):
                for entry in self.library(path).entries:
                    yield path, entry
