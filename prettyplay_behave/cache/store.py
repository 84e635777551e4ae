"""The cache on disk: locked, atomic writes of a library file, and the store a run reads the
project's step library through (loaded lazily, once).

Writes are locked (one lock for the library, ``.lock`` in the cache folder) and atomic. Nothing
of the cache is listed, read, written or deleted through a symbolic link, the cache folder's own
name included (see :mod:`.paths`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from ..errors import CacheError
from .library import CacheKey, CacheWrite, Library, StepEntry, Validate, locate
from .paths import STEPS_FOLDER, files_in, read, unlinked
from .schema import checked
from .source import SUFFIX, file_name, load_file, parse, render_steps

CACHE_FOLDER = ".prettyplay"  # beside the features, by default
LOCK_NAME = ".lock"  # in the cache folder
DEFAULT_CACHE_DIR = Path("features") / CACHE_FOLDER


def update(
    cache_dir: Path,
    path: Path,
    change: Callable[[Library], None],
    validate: Validate,
    lock_timeout: float = 30.0,
) -> tuple[bool, Library]:
    """Apply ``change`` to the entries of the library file ``path`` of ``cache_dir`` under the
    library's lock; write only when the bytes differ. Returns whether the file changed and its
    entries afterwards. A file without entries left is deleted. Nothing is written, and no
    folder made, when the way to the file or the lock goes through a link, or either is no file
    of its own."""
    import filelock  # loaded only when a file is written, never on a plain replay

    lock_path = library_lock(cache_dir)
    try:
        unlinked(cache_dir, path, file=True)
        # the lock: filelock truncates it as it opens it, which would reach a file outside the
        # cache; its floor opens lock files without following links, this holds whatever runs
        unlinked(cache_dir, lock_path, file=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(lock_path, timeout=lock_timeout):
            old = read(path) if path.exists() else None
            library = parse(path, old, validate) if old is not None else Library()
            change(library)
            if not library.entries:
                if old is None:
                    return False, library
                path.unlink()
                _fsync_folder(path.parent)
                return True, library
            new = render_steps(library.entries)
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


def library_lock(cache_dir: Path) -> Path:
    """The one lock of the library's writes, beside the library folder (none among the steps:
    writes are rare, and a lock file a step would be one more file to ignore in review)."""
    return cache_dir / LOCK_NAME


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


def library_files(cache_dir: Path) -> list[Path]:
    """The step library's files (format 3): anything but a folder, so a link, a named pipe or a
    device planted there is refused by name on load; a CacheError when the cache folder or the
    library folder is a link."""
    return files_in(cache_dir, cache_dir / STEPS_FOLDER, SUFFIX)


def old_files(cache_dir: Path) -> list[Path]:
    """The per-feature JSON files of formats 1 and 2 under the cache folder (its folders
    included, none reached through a link)."""
    return files_in(cache_dir, cache_dir, ".json", deep=True)


def cache_files(cache_dir: Path) -> list[Path]:
    """Every file of the cache: the library's, then the old formats'."""
    return [*library_files(cache_dir), *old_files(cache_dir)]


def today() -> str:
    return datetime.date.today().isoformat()


def merged(cache_dir: Path, files: Iterable[tuple[Path, Library]]) -> list[StepEntry]:
    """The entries of per-feature files (formats 1 and 2) as one project library, nothing lost:
    a pin names its feature; a test of the Python API keeps its entries its own; a step whose
    shared entries agree on their code across features is one entry (a non-``reused`` one,
    with every wording); where they differ, the code most features have (the first file's on a
    tie) serves the project, and each other code serves only its feature (``feature`` set, no
    scenario)."""
    project = Library()
    shared: dict[tuple[object, ...], list[tuple[str, StepEntry]]] = {}
    for path, library in files:
        relative = path.relative_to(cache_dir).as_posix().removesuffix(".json")
        api = not relative.endswith(".feature")
        for entry in library.entries:
            if api:  # a test of the Python API: its entries are its own, pins name the test
                project.upsert(replace(entry, feature=entry.scenario or relative))
            elif entry.scenario is not None:
                project.upsert(replace(entry, feature=relative))
            else:
                shared.setdefault(entry.identity, []).append((relative, entry))
    for group in shared.values():
        counts = Counter(entry.code for _, entry in group)
        best = max(counts, key=counts.__getitem__)
        same = [entry for _, entry in group if entry.code == best]
        chosen = next((e for e in same if e.origin != "reused"), same[0])
        wordings = dict.fromkeys(wording for entry in same for wording in entry.wordings)
        project.upsert(replace(chosen, wordings=tuple(wordings)))
        for scope, entry in group:
            if entry.code != best:
                project.upsert(replace(entry, feature=scope))
    return project.entries


def today_entry(entry: StepEntry, old: StepEntry | None) -> StepEntry:
    """``entry`` as written now: an unchanged code keeps the day it was written, its model and
    the record of its green run."""
    if old is not None and old.code == entry.code and old.written:
        # the same code keeps its day and the record of its first green run: a file changes
        # only when its code does
        kept = replace(entry, written=old.written, model=old.model or entry.model)
        return replace(kept, green=old.green or entry.green)
    return entry


class CacheStore:
    """The project's step library as one run sees it: loaded lazily, once; a write rewrites the
    file of the step it changes, under its lock, and the run's view of it."""

    def __init__(self, cache_dir: Path, validate: Validate, lock_timeout: float = 30.0) -> None:
        self.cache_dir = cache_dir
        self.library_dir = cache_dir / STEPS_FOLDER
        self._validate = validate
        self._lock_timeout = lock_timeout
        self._project: Library | None = None
        self._held: dict[Path, list[tuple[object, ...]]] = {}  # a library file's identities
        self._broken: dict[Path, CacheError] = {}
        self._old: list[Path] = []  # files of formats 1 and 2 read

    def path_for(self, test_name: str) -> Path:
        """Where the entries of ``test_name`` are: the project's library folder."""
        return self.library_dir

    def path_of(self, entry: StepEntry) -> Path:
        """The library file of ``entry``'s step."""
        return self.library_dir / file_name(entry.step)

    def lookup(self, key: CacheKey) -> StepEntry | None:
        """The entry that serves ``key``, or None; raises CacheError when a file that may hold
        it is corrupt."""
        project = self.library()
        steps = {(key.kind, key.parameters.template, key.data), (key.kind, key.sentence, key.data)}
        suspects = [self.library_dir / file_name(step) for step in steps]
        if any(path.suffix == ".json" for path in self._broken):  # the test's old file
            suspects.append(locate(self.cache_dir, key.test)[0])
        for path in suspects:
            if path in self._broken:
                raise self._broken[path]
        return project.find(key)

    def write(self, entry: CacheWrite) -> bool:
        """Keep ``entry`` in the library, replacing the one of the same identity in place; True
        if a file changed."""
        return self.keep([entry.library_entry(today())])

    def keep(self, entries: list[StepEntry], doomed: Iterable[StepEntry] = ()) -> bool:
        """Upsert ``entries`` into the library (and drop ``doomed``), each in its step's file;
        True if a file changed. An entry whose code did not change keeps the day it was written.
        The first write into a cache that still has files of formats 1 and 2 migrates them
        (unless one of them fails to load: its steps report it, the others are read as they
        are)."""
        self._migrate_first()
        kept = [checked(f"{self.path_of(e)}: a new entry", e, self._validate) for e in entries]
        files: dict[Path, tuple[list[StepEntry], list[StepEntry]]] = {}
        for entry in kept:
            files.setdefault(self.path_of(entry), ([], []))[0].append(entry)
        for entry in doomed:
            files.setdefault(self.path_of(entry), ([], []))[1].append(entry)
        changed = False
        for path, (new, gone) in files.items():
            if path in self._broken:
                raise CacheError(
                    f"refusing to overwrite a cache file that failed to load: {self._broken[path]}"
                )

            def change(library: Library, new: list[StepEntry] = new, gone=gone) -> None:
                library.remove(gone)
                for entry in new:
                    library.upsert(today_entry(entry, library.get(entry.identity)))

            did, library = update(self.cache_dir, path, change, self._validate, self._lock_timeout)
            changed |= did
            self._refresh(path, library)
        return changed

    def replace(self, keep: CacheWrite, old: StepEntry | None) -> tuple[bool, StepEntry]:
        """Keep new code for a step whose entry was ``old`` (None: it had none): whether a file
        changed, and the entry written. Code that replaces an entry of narrower reach (a pin, an
        entry specific to values) takes its place; a feature's own entry stays the feature's
        (and serves its other steps when the new code is a pin); a shared entry is only ever
        replaced by an entry of the same identity. New code for a step that found ``old`` by one
        of its wordings is that entry's code, for all its wordings; with ``wording_of``, the
        step's template becomes another wording of that entry where it still can."""
        written = keep.library_entry(today())
        if old is not None and written.scenario is None and written.sentence in old.wordings:
            written = replace(written, sentence=old.sentence, wordings=old.wordings)
        # new code of an entry serves all its wordings (and those of the narrower entry it
        # takes the place of)
        kept = self.library().get(written.identity)
        carried = [*(kept.wordings if kept else ()), *(old.wordings if old else ())]
        if old is not None and old.step != written.step:
            carried = [*(kept.wordings if kept else ())]
        wordings = tuple(
            w for w in dict.fromkeys([*written.wordings, *carried]) if w != written.sentence
        )
        if wordings != written.wordings and written.scenario is None:
            written = replace(written, wordings=wordings)
        if old is not None and old.feature and old.scenario is None and not written.feature:
            written = replace(written, feature=old.feature)
        narrower = old is not None and (old.scenario is not None or old.values is not None)
        doomed = [old] if old is not None and narrower and old.identity != written.identity else []
        if keep.wording_of is not None:
            worded = self._word(keep.wording_of, keep.key, doomed)
            if worded is not None:
                return worded, self.library().get(keep.wording_of.identity) or keep.wording_of
        changed = self.keep([written], doomed)
        return changed, self.library().get(written.identity) or written

    def _migrate_first(self) -> None:
        """The first write into a cache that still has files of formats 1 and 2 migrates them
        (unless one of them fails to load: its steps report it, the others are read as they
        are)."""
        self.library()
        if self._old and not any(path.suffix == ".json" for path in self._broken):
            self.migrate()

    def _word(self, entry: StepEntry, key: CacheKey, doomed: list[StepEntry]) -> bool | None:
        """Keep ``key``'s template as another wording of ``entry``, in its file, read again under
        the file's lock: whether a file changed; None, and nothing written, where the entry
        changed (other code) or went, or cannot hold the wording (another kind or data): the
        step then gets an entry of its own."""
        self._migrate_first()
        path = self.path_of(entry)
        if path in self._broken:
            raise CacheError(
                f"refusing to overwrite a cache file that failed to load: {self._broken[path]}"
            )
        template = key.parameters.template
        worded = [False]

        def change(library: Library) -> None:
            now = library.get(entry.identity)
            unchanged = (entry.code, key.kind, key.data)  # and can hold the wording
            if now is not None and (now.code, now.kind, now.data) == unchanged:
                if not now.says(template):
                    library.upsert(replace(now, wordings=(*now.wordings, template)))
                worded[0] = True

        changed, library = update(self.cache_dir, path, change, self._validate, self._lock_timeout)
        self._refresh(path, library)
        if not worded[0]:
            return None
        return self.keep([], doomed) or changed if doomed else changed

    def turn_green(self, key: CacheKey, red: StepEntry) -> bool:
        """A step kept red (``red``, the entry it found) went green: its pin goes where
        the shared entry has the same code, loses the verdict where the shared entry has other
        code, and where none serves the step its code becomes the step's entry (for every value,
        where it takes them). Whether a file changed."""
        shared = self.library().find(key, pins=False)
        if shared is None:
            entry = CacheWrite(key, red.code, red.origin, model=red.model, green=red.green)
            return self.keep([entry.library_entry(red.written)], [red])
        same = shared.code == red.code
        return self.keep([] if same else [replace(red, verdict=None)], [red])

    def drop(self, doomed: Iterable[StepEntry]) -> bool:
        return self.keep([], doomed)

    def library(self, path: Path | None = None) -> Library:
        """The project's library: every entry of every file that loads (a file that does not is
        reported by the steps it may hold, see :meth:`lookup`). It holds whatever ``path`` of
        the cache a caller names (``path_for``'s, a step file's)."""
        if self._project is None:
            self._load()
        assert self._project is not None
        return self._project

    def broken(self) -> dict[Path, CacheError]:
        """The files that failed to load, and why."""
        self.library()
        return dict(self._broken)

    def _load(self) -> None:
        self._broken, self._held, self._old = {}, {}, []
        old = []
        for path in old_files(self.cache_dir):
            try:
                old.append((path, load_file(path, self._validate)))
                self._old.append(path)
            except CacheError as exc:
                self._broken[path] = exc
        project = Library(merged(self.cache_dir, old))
        for path in library_files(self.cache_dir):
            try:
                library = load_file(path, self._validate)
            except CacheError as exc:
                self._broken[path] = exc
                continue
            for entry in library.entries:  # the library wins over an old file
                project.upsert(entry)
            self._held[path] = [entry.identity for entry in library.entries]
        self._project = project

    def _refresh(self, path: Path, library: Library) -> None:
        project = self.library()
        gone = [project.get(identity) for identity in self._held.pop(path, [])]
        project.remove(entry for entry in gone if entry is not None)
        for entry in library.entries:
            project.upsert(entry)
        if library.entries:
            self._held[path] = [entry.identity for entry in library.entries]

    def migrate(self) -> list[Path]:
        """Move the entries of the files of formats 1 and 2 into the library (where the library
        has an entry of the same identity, it stays), then delete those files: only once the
        library loads back serving every entry they held. The files migrated; a CacheError,
        and nothing deleted, when any of them fails to load."""
        self.library()
        for path in old_files(self.cache_dir):
            if path in self._broken:
                raise self._broken[path]
        old = [(path, load_file(path, self._validate)) for path in self._old if path.exists()]
        entries = merged(self.cache_dir, old)
        files: dict[Path, list[StepEntry]] = {}
        for entry in entries:
            files.setdefault(self.path_of(entry), []).append(entry)
        for path in files:  # refused before anything is written
            if path in self._broken:
                raise self._broken[path]
        for path, moved in files.items():

            def change(library: Library, moved: list[StepEntry] = moved) -> None:
                for entry in moved:
                    if library.get(entry.identity) is None:
                        library.upsert(entry)

            update(self.cache_dir, path, change, self._validate, self._lock_timeout)
        migrated = [path for path, _ in old]
        before = {identity for held in self._held.values() for identity in held}
        library = Library()
        for path in library_files(self.cache_dir):  # the library alone, as a run will read it
            for entry in load_file(path, self._validate).entries:
                library.upsert(entry)
        for entry in entries:
            found = library.get(entry.identity)
            if found is None or (entry.identity not in before and found != entry):
                raise CacheError(
                    f"{self.path_of(entry)}: does not hold {entry.describe()} as the old files "
                    "do after the migration; they are kept"
                )
        for path in migrated:
            unlinked(self.cache_dir, path.parent)  # a name is deleted, never what it points to
            for doomed in (path, Path(f"{path}.lock")):
                with contextlib.suppress(FileNotFoundError):
                    doomed.unlink()
            # the folders that held only old files go with them (a folder with anything else
            # in it stays, as does the cache folder)
            folder = path.parent
            while folder != self.cache_dir and self.cache_dir in folder.parents:
                try:
                    folder.rmdir()
                except OSError:
                    break
                folder = folder.parent
        self._load()
        return migrated

    def everywhere(self) -> Iterator[tuple[Path, StepEntry]]:
        """Every entry of the library, with the file of its step (files that fail to load
        skipped: the steps they may hold report them)."""
        for entry in list(self.library().entries):
            yield self.path_of(entry), entry
