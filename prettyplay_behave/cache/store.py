"""The cache on disk: locked, atomic writes of a library file, and the store a run reads its
files through (each loaded lazily, once).

Writes are locked (``<file>.lock``) and atomic; a lock file is never followed through a link.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from ..errors import CacheError
from .format import FORMAT, _checked, _read, load_file, parse, render
from .library import CacheKey, CacheWrite, Library, StepEntry, Validate, locate

CACHE_FOLDER = ".prettyplay"  # beside the features, by default
DEFAULT_CACHE_DIR = Path("features") / CACHE_FOLDER


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

    def write(self, entry: CacheWrite) -> bool:
        """Keep ``entry`` in its feature's library, replacing the one of the same identity in
        place; True if the file changed."""
        return self.replace(entry, None)[0]

    def keep(self, path: Path, entries: list[StepEntry], doomed: Iterable[StepEntry] = ()) -> bool:
        """Upsert ``entries`` into the file at ``path`` (and drop ``doomed``); True if it
        changed. An entry whose code did not change keeps the day it was written."""
        self._writable(path)
        checked = [_checked(f"{path}: a new entry", e, self._validate) for e in entries]
        gone = list(doomed)

        def change(library: Library) -> None:
            library.remove(gone)
            for entry in checked:
                old = library.get(entry.identity)
                if old is not None and old.code == entry.code and old.written:
                    # the same code keeps its day and the record of its first green run: a file
                    # changes only when its code does
                    green = old.green or entry.green
                    kept = replace(entry, written=old.written, model=old.model or entry.model)
                    entry = replace(kept, green=green)
                library.upsert(entry)

        return self._update(path, change)

    def _writable(self, path: Path) -> None:
        if path in self._broken:
            raise CacheError(
                f"refusing to overwrite a cache file that failed to load: {self._broken[path]}"
            )

    def _update(self, path: Path, change: Callable[[Library], None]) -> bool:
        changed, library = update(path, change, self._validate, self._lock_timeout)
        self._files[path] = library
        return changed

    def replace(self, keep: CacheWrite, old: StepEntry | None) -> tuple[bool, StepEntry]:
        """Keep new code for a step whose entry was ``old`` (None: it had none): whether the
        file changed, and the entry written. Code that replaces an entry of narrower reach (a
        pin, an entry specific to values) takes its place; a shared entry is only ever replaced
        by an entry of the same identity. New code shared by a step that found ``old`` by one of
        its wordings is that entry's code, for all of its wordings."""
        written = keep.library_entry(today())
        if old is not None and written.scenario is None and written.sentence in old.wordings:
            written = replace(written, sentence=old.sentence, wordings=old.wordings)
        narrower = old is not None and (old.scenario is not None or old.values is not None)
        doomed = [old] if old is not None and narrower and old.identity != written.identity else []
        path = self.path_for(keep.key.test)
        if keep.wording_of is not None:
            return self._word(path, keep.wording_of, keep.key, written, doomed)
        return self.keep(path, [written], doomed), written

    def _word(
        self,
        path: Path,
        entry: StepEntry,
        key: CacheKey,
        instead: StepEntry,
        doomed: list[StepEntry],
    ) -> tuple[bool, StepEntry]:
        """Keep ``key``'s template as another wording of ``entry``, read again under the
        file's lock: where the entry changed (other code) or went, or cannot hold the
        wording (another kind or data), ``instead`` is written, an entry of its own. Whether
        the file changed, and the entry written."""
        self._writable(path)
        instead = _checked(f"{path}: a new entry", instead, self._validate)
        template = key.parameters.template
        written = [instead]

        def change(library: Library) -> None:
            library.remove(doomed)
            now = library.get(entry.identity)
            unchanged = (entry.code, key.kind, key.data)  # and can hold the wording
            if now is not None and (now.code, now.kind, now.data) == unchanged:
                if not now.says(template):
                    now = replace(now, wordings=(*now.wordings, template))
                written[0] = now
            library.upsert(written[0])

        return self._update(path, change), written[0]

    def turn_green(self, key: CacheKey, red: StepEntry) -> bool:
        """A step remembered red (``red``, the entry it found) went green: its pin loses the
        verdict, or goes where the shared entry has the same code. Whether the file changed."""
        path = self.path_for(key.test)
        shared = self.library(path).find(key, pins=False)
        same = shared is not None and shared.code == red.code
        return self.keep(path, [] if same else [replace(red, verdict=None)], [red])

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
