"""The cache files: generated step code, stored beside the features and replayed without an LLM.

One JSON file per feature file mirrors its path under the cache folder: the test
``shop/checkout.feature::Buy a product`` lives in ``<cache_dir>/shop/checkout.feature.json``
under the test key ``Buy a product``. A test name without ``::`` (the Python API) lives in
``<cache_dir>/<name>.json`` under the test key ``<name>``. An entry is addressed by its test,
step kind, sentence, data and occurrence, so inserting other steps never moves it::

    {
      "format": 1,
      "tests": {
        "Buy a product": [
          {
            "code": [
              "def step(page) -> None:",
              "    page.goto('/')"
            ],
            "kind": "step",
            "occurrence": 1,
            "origin": "generated",
            "sentence": "open the shop"
          }
        ]
      }
    }

Writes are locked (``<file>.lock``) and atomic; every load checks the syntax, the format
version, each entry's shape and its code.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CacheError, CodePolicyError
from .vocabulary import Kind, Origin

FORMAT = 1
CACHE_FOLDER = ".prettyplay"  # beside the features, by default
DEFAULT_CACHE_DIR = Path("features") / CACHE_FOLDER
# In the cache folder, written by a full run: the entries no step used (JSON, no .json ending,
# so no scan of cache files takes it for one).
OBSOLETE_FILE = ".obsolete-entries"
KINDS = tuple(str(kind) for kind in Kind)
ORIGINS = tuple(str(origin) for origin in Origin if origin.stored)
SEPARATOR = "::"

_FIELDS = {"code", "data", "kind", "occurrence", "origin", "sentence"}
_CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")
# Characters Windows (or a shell) refuses in file names; `/` is kept as the folder separator.
_HOSTILE = re.compile(r'[<>:"\\|?*\x00-\x1f]')

Validate = Callable[[str], None]


@dataclass(frozen=True)
class CacheKey:
    """The address of an entry; ``occurrence`` counts identical steps earlier in the test."""

    test: str
    kind: str
    sentence: str
    data: str = ""
    occurrence: int = 1


@dataclass(frozen=True)
class CacheEntry:
    """One step's stored code and how it came to be."""

    key: CacheKey
    code: str
    origin: str  # an Origin's value; checked when the entry is written

    def __post_init__(self) -> None:
        # One canonical form: the file stores lines, so code always ends in exactly one newline.
        object.__setattr__(self, "code", self.code.rstrip("\n") + "\n")


Tests = dict[str, list[CacheEntry]]


def locate(cache_dir: Path, test_name: str) -> tuple[Path, str]:
    """The cache file of a test and the test's key inside it."""
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


def _test_key(test_name: str) -> str:
    return test_name.partition(SEPARATOR)[2] if SEPARATOR in test_name else test_name


def _test_prefix(cache_dir: Path, path: Path) -> str:
    """What turns a test key of ``path`` back into a full test name (the inverse of locate)."""
    try:
        stem = path.relative_to(cache_dir).as_posix().removesuffix(".json")
    except ValueError:
        return ""
    return stem + SEPARATOR if stem.endswith(".feature") else ""


def _slot(key: CacheKey) -> tuple[str, str, str, int]:
    """The address of an entry within its test."""
    return key.kind, key.sentence, key.data, key.occurrence


# --- reading ---


def load_file(path: Path, validate: Validate, test_prefix: str = "") -> Tests:
    """Parse and check a cache file: its entries by test key.

    Each entry's ``key.test`` is ``test_prefix`` + the test key. Raises CacheError naming the
    file (and the line or entry) when anything is wrong; the file is never modified.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CacheError(f"{path}: cannot read: {exc}") from exc
    return _parse(path, raw, validate, test_prefix)


def parse(path: Path, raw: bytes, validate: Validate, test_prefix: str = "") -> Tests:
    """Parse and check the bytes of a cache file, as :func:`load_file` does with the file's own:
    e.g. the file as a git commit holds it. ``path`` only names it in errors."""
    return _parse(path, raw, validate, test_prefix)


def _parse(path: Path, raw: bytes, validate: Validate, test_prefix: str) -> Tests:
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
        raise CacheError(f"{path}: the key {exc.args[0]!r} appears twice in one object") from exc
    return _parse_document(path, document, validate, test_prefix)


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


def _parse_document(path: Path, document: Any, validate: Validate, test_prefix: str) -> Tests:
    if not isinstance(document, dict):
        raise CacheError(f"{path}: expected a JSON object at the top")
    if "format" not in document:
        raise CacheError(f"{path}: the 'format' field is missing")
    version = document["format"]
    if type(version) is not int or version != FORMAT:
        raise CacheError(
            f"{path}: unknown format version {version!r} (this prettyplay reads format {FORMAT})"
        )
    unknown = set(document) - {"format", "tests"}
    if unknown:
        raise CacheError(f"{path}: unknown top-level fields {sorted(unknown)}")
    tests = document.get("tests")
    if not isinstance(tests, dict):
        raise CacheError(f"{path}: 'tests' must be an object of test name -> list of entries")

    result: Tests = {}
    for test_key, raw_entries in tests.items():
        if not isinstance(raw_entries, list):
            raise CacheError(f"{path}: test {test_key!r}: expected a list of entries")
        entries: list[CacheEntry] = []
        seen: set[tuple[str, str, str, int]] = set()
        for index, raw_entry in enumerate(raw_entries, start=1):
            where = f"{path}: test {test_key!r}, entry {index}"
            entry = _parse_entry(where, raw_entry, test_prefix + test_key, validate)
            if _slot(entry.key) in seen:
                raise CacheError(f"{where}: duplicate of an earlier entry {_describe(entry.key)}")
            seen.add(_slot(entry.key))
            entries.append(entry)
        result[test_key] = entries
    return result


def _parse_entry(where: str, raw: Any, test_name: str, validate: Validate) -> CacheEntry:
    if not isinstance(raw, dict):
        raise CacheError(f"{where}: expected an object")
    missing = sorted(_FIELDS - {"data"} - set(raw))
    if missing:
        raise CacheError(f"{where}: missing fields {missing}")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise CacheError(f"{where}: unknown fields {unknown}")
    for field in ("code", "data"):
        lines = raw.get(field, [])
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise CacheError(f"{where}: {field!r} must be a list of strings")
    for field in ("kind", "origin", "sentence"):
        if not isinstance(raw[field], str):
            raise CacheError(f"{where}: {field!r} must be a string")
    occurrence = raw["occurrence"]
    if type(occurrence) is not int or occurrence < 1:
        raise CacheError(f"{where}: 'occurrence' must be a whole number from 1, not {occurrence!r}")
    if raw["kind"] not in KINDS:
        raise CacheError(f"{where}: unknown kind {raw['kind']!r} (expected one of {KINDS})")
    if raw["origin"] not in ORIGINS:
        raise CacheError(f"{where}: unknown origin {raw['origin']!r} (expected one of {ORIGINS})")

    key = CacheKey(
        test_name, Kind(raw["kind"]), raw["sentence"], "\n".join(raw.get("data", [])), occurrence
    )
    code = "\n".join(raw["code"])
    try:
        validate(code)
    except CodePolicyError as exc:
        raise CacheError(f"{where} {_describe(key)}: the code is refused: {exc}") from exc
    return CacheEntry(key, code, Origin(raw["origin"]))


def _describe(key: CacheKey) -> str:
    return f"({key.kind} {key.sentence!r}, occurrence {key.occurrence})"


# --- writing ---


def _render(tests: Tests) -> bytes:
    document = {
        "format": FORMAT,
        "tests": {
            key: [_entry_json(e) for e in entries] for key, entries in tests.items() if entries
        },
    }
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _entry_json(entry: CacheEntry) -> dict[str, Any]:
    raw: dict[str, Any] = {
        # one line per list item; the final newline of the code is implied
        "code": entry.code.rstrip("\n").split("\n"),
        "kind": entry.key.kind,
        "occurrence": entry.key.occurrence,
        "origin": entry.origin,
        "sentence": entry.key.sentence,
    }
    if entry.key.data:
        raw["data"] = entry.key.data.split("\n")
    return raw


def _update(
    path: Path,
    change: Callable[[Tests], None],
    validate: Validate,
    lock_timeout: float,
    test_prefix: str = "",
) -> tuple[bool, Tests]:
    """Apply ``change`` to the file's entries under its lock; write only when the bytes differ.

    Returns whether the file changed and its entries afterwards. A file without entries left is
    deleted.
    """
    import filelock  # loaded only when a file is written, never on a plain replay

    lock_path = Path(f"{path}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(lock_path, timeout=lock_timeout):
            old = path.read_bytes() if path.exists() else None
            tests = _parse(path, old, validate, test_prefix) if old is not None else {}
            change(tests)
            if not any(tests.values()):
                if old is None:
                    return False, tests
                path.unlink()
                _fsync_folder(path.parent)
                return True, tests
            new = _render(tests)
            if new == old:
                return False, tests
            _replace(path, new)
            return True, tests
    except filelock.Timeout as exc:
        raise CacheError(
            f"{path}: gave up after {lock_timeout}s waiting for the lock {lock_path} "
            "(another run is writing; if none is, the lock is stale)"
        ) from exc
    except OSError as exc:
        raise CacheError(f"{path}: cannot write: {exc}") from exc


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


def prune(
    path: Path, keys: Iterable[CacheKey], validate: Validate, lock_timeout: float = 30.0
) -> bool:
    """Delete the entries at ``keys`` from the cache file ``path``; True when the file changed."""
    doomed = {(_test_key(key.test), _slot(key)) for key in keys}

    def remove(tests: Tests) -> None:
        for test_key, entries in tests.items():
            entries[:] = [e for e in entries if (test_key, _slot(e.key)) not in doomed]

    return _update(path, remove, validate, lock_timeout)[0]


# --- the store ---


class CacheStore:
    """The cache as one run sees it: files load lazily, once, and usage is recorded."""

    def __init__(self, cache_dir: Path, validate: Validate, lock_timeout: float = 30.0) -> None:
        self.cache_dir = cache_dir
        self._validate = validate
        self._lock_timeout = lock_timeout
        self._files: dict[Path, Tests] = {}
        self._broken: dict[Path, CacheError] = {}
        self._used: set[tuple[Path, str, tuple[str, str, str, int]]] = set()

    def path_for(self, test_name: str) -> Path:
        """The cache file holding the entries of ``test_name``."""
        return locate(self.cache_dir, test_name)[0]

    def lookup(self, key: CacheKey) -> CacheEntry | None:
        """The stored entry at ``key``, or None; raises CacheError when its file is corrupt."""
        path, test_key = locate(self.cache_dir, key.test)
        for entry in self._load(path).get(test_key, []):
            if _slot(entry.key) == _slot(key):
                self._used.add((path, test_key, _slot(key)))
                return CacheEntry(key, entry.code, entry.origin)
        return None

    def write(self, entry: CacheEntry) -> bool:
        """Store ``entry``, replacing the one at its address in place; True if the file changed."""
        path, test_key = locate(self.cache_dir, entry.key.test)
        if path in self._broken:
            raise CacheError(
                f"refusing to overwrite a cache file that failed to load: {self._broken[path]}"
            )
        prefix = _test_prefix(self.cache_dir, path)
        # The same checks as a load, so the file is never given an entry it would refuse.
        checked = _parse_entry(
            f"{path}: test {test_key!r}", _entry_json(entry), prefix + test_key, self._validate
        )

        def upsert(tests: Tests) -> None:
            entries = tests.setdefault(test_key, [])
            for index, old in enumerate(entries):
                if _slot(old.key) == _slot(checked.key):
                    entries[index] = checked
                    return
            entries.append(checked)

        changed, tests = _update(path, upsert, self._validate, self._lock_timeout, prefix)
        self._files[path] = tests
        self._used.add((path, test_key, _slot(entry.key)))
        return changed

    def obsolete(self, files: Iterable[Path] | None = None) -> list[tuple[Path, CacheKey]]:
        """Entries of the loaded (or given) files that no lookup or write used in this run."""
        unused = []
        for path in list(self._files) if files is None else files:
            for test_key, entries in self._load(path).items():
                unused += [
                    (path, e.key)
                    for e in entries
                    if (path, test_key, _slot(e.key)) not in self._used
                ]
        return unused

    def _load(self, path: Path) -> Tests:
        if path in self._broken:
            raise self._broken[path]
        if path not in self._files:
            try:
                self._files[path] = (
                    load_file(path, self._validate, _test_prefix(self.cache_dir, path))
                    if path.exists()
                    else {}
                )
            except CacheError as exc:
                self._broken[path] = exc
                raise
        return self._files[path]
