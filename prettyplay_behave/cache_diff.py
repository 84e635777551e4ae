"""``prettyplay cache diff [REF]``: the code that changed in the step library against a git ref.

This reads the whole library on both sides with the cache module's own parser (the code policy
included; per-feature files of formats 1 and 2 read as the library they migrate to, so a
migration alone changes nothing) and prints, per step file, each entry whose code, origin or
verdict changed: where it serves, the step, its origin and a unified diff of the code; entries
added, removed and changed, in files new, deleted or changed. The files' text (code,
sentences, paths) is shown with its control characters escaped.

Exit status: 0 when nothing changed, 1 when something did, 2 when the comparison cannot be
made (not a git repository, an unknown ref, a cache folder neither side has, a cache file that
fails to load on either side).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

from colorama import Fore, Style

from .cache import STEPS_FOLDER, Library, StepEntry, cache_files, file_name, merged, parse, unlinked
from .cache.paths import read
from .cache.schema import reviewed
from .errors import CacheError, escape_controls
from .report.diffs import unified_diff
from .safety.step_code import check_code, dropped_assertions
from .vocabulary import Origin, counted

WORKING_TREE = "working tree"


class DiffError(Exception):
    """The comparison cannot be made; the message says why (exit status 2)."""


def git(top: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(top), *args], capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise DiffError("git is not installed (cache diff compares against a git ref)") from exc
    if done.returncode != 0:
        raise DiffError(done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return done.stdout


@dataclass(frozen=True)
class Repository:
    """The git work tree holding the cache folder, and the folder's path inside it."""

    top: Path
    folder: PurePosixPath

    @classmethod
    def around(cls, cache_dir: Path) -> Repository:
        try:
            unlinked(cache_dir)  # the working tree's side is read as a run reads it
        except CacheError as exc:
            raise DiffError(str(exc)) from None
        absolute = cache_dir.resolve()
        existing = next(p for p in (absolute, *absolute.parents) if p.is_dir())
        try:
            top = Path(git(existing, "rev-parse", "--show-toplevel").decode().strip()).resolve()
        except DiffError as exc:
            raise DiffError(f"{cache_dir}: not inside a git repository ({exc})") from None
        try:
            folder = PurePosixPath(absolute.relative_to(top).as_posix())
        except ValueError:
            raise DiffError(f"{cache_dir}: outside the git work tree {top}") from None
        return cls(top, folder)

    def check_ref(self, ref: str) -> None:
        try:
            git(
                self.top,
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{ref}^{{commit}}",
            )
        except DiffError:
            if ref == "HEAD" and not self.has_commits():
                raise DiffError(
                    f"the repository {self.top} has no commit yet, so there is nothing to compare "
                    "the cache with: commit the cache files once, then cache diff shows what "
                    "changed since"
                ) from None
            raise DiffError(f"unknown git ref {ref!r} (a branch, tag or commit)") from None

    def has_commits(self) -> bool:
        try:
            git(self.top, "rev-parse", "--verify", "--quiet", "HEAD")
        except DiffError:
            return False
        return True

    def files_at(self, ref: str) -> list[PurePosixPath]:
        names = git(self.top, "ls-tree", "-r", "-z", "--name-only", ref, "--", str(self.folder))
        paths = [PurePosixPath(name) for name in names.decode().split("\0") if name]
        return [path for path in paths if _cached(path, self.folder)]

    def files_here(self) -> list[PurePosixPath]:
        """The cache files of the working tree, found as a run finds them (never through a
        link)."""
        try:
            paths = cache_files(self.top / self.folder)
        except CacheError as exc:
            raise DiffError(f"{WORKING_TREE}: {exc}") from None
        relative = [PurePosixPath(path.relative_to(self.top).as_posix()) for path in paths]
        return sorted(path for path in relative if _cached(path, self.folder))

    def read(self, path: PurePosixPath) -> bytes:
        """A cache file of the working tree, read as a run reads it (a link refused unread)."""
        try:
            return read(self.top / path)
        except CacheError as exc:
            raise DiffError(f"{WORKING_TREE}: {exc}") from None

    def show(self, ref: str, path: PurePosixPath) -> bytes:
        return git(self.top, "show", f"{ref}:{path}")


def _cached(path: PurePosixPath, folder: PurePosixPath) -> bool:
    """Whether ``path`` is a file of the cache: the library's, or an old per-feature one."""
    library = path.parent == folder / STEPS_FOLDER and path.suffix == ".py"
    return library or path.suffix == ".json"


@dataclass(frozen=True)
class EntryChange:
    """One entry that differs: ``added``, ``removed`` or ``changed`` (code, origin or
    wordings)."""

    what: str
    old: StepEntry | None
    new: StepEntry | None
    replaced: StepEntry | None = None  # the entry whose code an added pin took the place of

    @property
    def entry(self) -> StepEntry:
        entry = self.new or self.old
        assert entry is not None
        return entry

    @property
    def place(self) -> str:
        """Where the entry serves: the project, a feature of its own, or the scenario it is
        pinned to."""
        entry = self.entry
        if entry.scenario is not None:
            return f"pinned to {entry.scenario} of {entry.feature}"
        return f"only {entry.feature}" if entry.feature else "library"

    def headline(self) -> str:
        data = " (with its data)" if self.entry.data else ""
        if self.old is not None and self.new is not None and self.old.origin != self.new.origin:
            origin = f"{self.old.origin} -> {self.new.origin}"
        else:
            origin = self.entry.origin
        red = f", red ({self.entry.verdict.label})" if self.entry.verdict else ""
        return f"{self.what:<8} {self.entry.describe()}{data}, {origin}{red}{self.reworded()}"

    def dropped(self) -> tuple[str, ...]:
        """The assertions of the code it replaced that its new code no longer makes."""
        before = self.old or self.replaced
        if before is None or self.new is None or self.new.red:
            return ()
        return dropped_assertions(before.code, self.new.code)

    def reworded(self) -> str:
        """The wordings the entry gained or lost: other sentences its code now serves, or no
        longer does."""
        before = self.old.wordings if self.old is not None else ()
        after = self.new.wordings if self.new is not None else ()
        gained = [w for w in after if w not in before]
        lost = [w for w in before if w not in after] if self.new is not None else []
        told = [f"also worded {w!r}" for w in gained] + [f"no longer worded {w!r}" for w in lost]
        return "".join(f", {line}" for line in told)


def entry_changes(old: Library, new: Library) -> Iterator[EntryChange]:
    """The entries of two versions of the library that differ, in the new one's order, those
    serving the whole project first."""
    before = {e.identity: e for e in old.entries}
    after = {e.identity: e for e in new.entries}
    changes = []
    for identity in [*after, *(i for i in before if i not in after)]:
        was, now = before.get(identity), after.get(identity)
        if was is None:
            assert now is not None
            changes.append(EntryChange("added", None, now, _replaced(old, now)))
        elif now is None:
            changes.append(EntryChange("removed", was, None))
        elif reviewed(was) != reviewed(now):
            changes.append(EntryChange("changed", was, now))
    yield from sorted(changes, key=lambda change: change.place != "library")


def _replaced(old: Library, added: StepEntry) -> StepEntry | None:
    """The entry an added pin (or a feature's own entry) of new code took the place of: the
    one of its step that served its scenario before."""
    rewrite = added.origin in (Origin.HEALED, Origin.RECOVERED, Origin.STEERED)
    if not rewrite or (added.scenario is None and not added.feature):
        return None
    shared = [
        e
        for e in old.entries
        if e.step == added.step and e.scenario is None and e.feature in ("", added.feature)
    ]
    own = [e for e in shared if e.feature == added.feature]
    return (own or shared)[0] if shared else None


@dataclass
class Printer:
    out: TextIO
    colour: bool
    ref: str

    def paint(self, text: str, tint: str) -> str:
        # the file's text escaped before any colour of ours is added
        text = escape_controls(text)
        return f"{tint}{text}{Style.RESET_ALL}" if self.colour and tint else text

    def file(self, path: PurePosixPath, feature: str, state: str) -> None:
        suffix = f", {state}" if state else ""
        self.out.write(self.paint(f"{feature} ({path}{suffix})", Style.BRIGHT) + "\n")

    def change(self, change: EntryChange, first_of_place: bool) -> None:
        if first_of_place:
            self.out.write(f"  {self.paint(change.place, '')}\n")
        self.out.write(f"    {self.paint(change.headline(), '')}\n")
        dropped = change.dropped()
        if dropped:
            told = f"assertions dropped: {'; '.join(dropped)}"
            self.out.write(f"      {self.paint(told, Fore.RED)}\n")
        old = change.old.code if change.old else ""
        new = change.new.code if change.new else ""
        for line in unified_diff(old, new, self.ref, WORKING_TREE):
            tint = {"+": Fore.GREEN, "-": Fore.RED, "@": Fore.CYAN}.get(line[:1], "")
            if line.startswith(("--- ", "+++ ")):
                tint = Style.DIM
            self.out.write("      " + self.paint(line, tint) + "\n")


def load(path: PurePosixPath, raw: bytes, side: str) -> Library:
    try:
        return parse(Path(path), raw, check_code)
    except CacheError as exc:
        raise DiffError(f"{side}: {exc}") from None


def project(repo: Repository, files: dict[PurePosixPath, bytes], side: str) -> Library:
    """The library one side holds: its library files over its old files migrated."""
    folder = Path(repo.folder)
    old = [(Path(p), load(p, raw, side)) for p, raw in files.items() if p.suffix == ".json"]
    library = Library(merged(folder, old))
    for path, raw in files.items():
        if path.suffix == ".py":
            for entry in load(path, raw, side).entries:
                library.upsert(entry)
    return library


def diff(cache_dir: Path, ref: str, out: TextIO | None = None) -> int:
    """Print the entries whose code changed against ``ref``; the exit status (see the module)."""
    out = out or sys.stdout
    repo = Repository.around(cache_dir)
    repo.check_ref(ref)
    at_ref, here = repo.files_at(ref), repo.files_here()
    if not at_ref and not here and not (repo.top / repo.folder).is_dir():
        raise DiffError(f"{cache_dir}: no such folder, neither in the working tree nor at {ref}")
    old_raw = {path: repo.show(ref, path) for path in at_ref}
    new_raw = {path: repo.read(path) for path in here}
    printer = Printer(out, colour=out.isatty(), ref=ref)
    counts = {"added": 0, "removed": 0, "changed": 0}
    files: dict[PurePosixPath, list[EntryChange]] = {}
    if old_raw != new_raw:
        old, new = project(repo, old_raw, ref), project(repo, new_raw, WORKING_TREE)
        for change in entry_changes(old, new):
            path = repo.folder / STEPS_FOLDER / file_name(change.entry.step)
            files.setdefault(path, []).append(change)
    for path, changes in sorted(files.items()):
        state = "new file" if path not in old_raw else "deleted" if path not in new_raw else ""
        printer.file(path, changes[0].entry.describe_step(), state)
        for number, change in enumerate(changes):
            counts[change.what] += 1
            printer.change(change, number == 0 or changes[number - 1].place != change.place)
    total = sum(counts.values())
    listed = ", ".join(f"{n} {what}" for what, n in counts.items())
    differ = "differs" if total == 1 else "differ"
    where = f"from {ref} in {counted(len(files), 'file')}"
    out.write(f"{counted(total, 'entry')} {differ} {where} ({listed})\n")
    return 1 if total else 0
