"""What lies outside the project, where a planted link points: a folder holding a file of the
user's own, each set back three days so that what a command does to them shows.

A write shows in the file's content and times, a file added or deleted in the folder's listing,
and a read or a listing in the access time of the file or the folder: the file system records a
read of a file whose access time is older than a day (``relatime``, Linux's default). Where it
records none (``noatime``), :meth:`Outside.untouched` checks what it can and says so by the
``reads_seen`` of the place.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

LONG_AGO = time.time() - 3 * 86400


def _set_back(path: Path) -> None:
    os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)


def _reads_seen(folder: Path) -> bool:
    """Whether the file system under ``folder`` records reads in access times."""
    probe = folder / ".probe"
    probe.write_text("probe")
    _set_back(probe)
    probe.read_text()
    seen = os.stat(probe).st_atime > LONG_AGO + 60
    probe.unlink()
    return seen


@dataclass
class Outside:
    """A folder outside the project, holding ``file``, the user's own (``precious.txt``), and
    whatever else a test puts there before calling :meth:`settle`."""

    folder: Path
    file: Path
    reads_seen: bool
    _before: dict[str, tuple[bytes | None, int, int]] = field(default_factory=dict)

    @classmethod
    def made(cls, parent: Path, content: str = "the user's own file\n") -> Outside:
        folder = parent / "outside"
        folder.mkdir()
        reads_seen = _reads_seen(folder)
        file = folder / "precious.txt"
        file.write_text(content)
        made = cls(folder, file, reads_seen)
        made.settle()
        return made

    def settle(self) -> None:
        """Set everything here back in time and remember it as it is now."""
        paths = [self.folder, *self.folder.rglob("*")]
        contents = {path: None if path.is_dir() else path.read_bytes() for path in paths}
        for path in paths:  # after the listing and the reads above
            _set_back(path)
        self._before = {}
        for path in paths:
            found = os.stat(path)
            self._before[self._name(path)] = (contents[path], found.st_mtime_ns, found.st_atime_ns)

    def untouched(self, listed_by_behave: bool = False) -> None:
        """Nothing here was written, added, deleted, read or listed since :meth:`settle` (or
        the last check); ``listed_by_behave``: but its folders may have been listed, as behave's
        own search for feature files lists what a link in the features folder points to."""
        # the times first, of the names known (listing the folder or reading a file would
        # change them), then the listing and the contents
        times = {}
        for name in self._before:
            assert os.path.lexists(self.folder / name), f"{name}: deleted"
            found = os.stat(self.folder / name)
            times[name] = (found.st_mtime_ns, found.st_atime_ns)
        now = [self.folder, *self.folder.rglob("*")]
        assert sorted(map(self._name, now)) == sorted(self._before), "added or deleted outside"
        for name, (content, mtime, atime) in self._before.items():
            path = self.folder / name
            assert (None if path.is_dir() else path.read_bytes()) == content, f"{name}: changed"
            assert times[name][0] == mtime, f"{name}: written (its modification time changed)"
            if self.reads_seen and not (listed_by_behave and content is None):
                assert times[name][1] == atime, f"{name}: read or listed (its access time changed)"
        self.settle()  # the checks above read and listed it: as it was again, for the next one

    def _name(self, path: Path) -> str:
        return path.relative_to(self.folder).as_posix()
