"""The cache's paths, and the one check of each before it is listed, read, written or deleted.

The cache is the project's: its folder and everything in it. prettyplay never goes through a
symbolic link there, the cache folder's own name included: a planted link (a pull request adds
one as easily as a file) would have a run, ``migrate`` or ``prune`` write step files and
temporary files, read files or delete lock files wherever it points. A link in the way is
refused with a CacheError naming it and where it points, before anything is opened; the folders
above the cache folder are where the settings put it, and are not looked at. A file prettyplay
writes beside others (a lock) or reads (a library file, an old JSON file) is also refused when it
is no file of its own: another name shares it (a hard link) or it is no regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import CacheError
from ..safety.links import first_link, not_its_own, points_to

STEPS_FOLDER = "steps"  # under the cache folder: the library


def role(path: Path, cache_dir: Path | None = None) -> str:
    """What ``path`` is to the cache, for a message."""
    if cache_dir is not None and path == cache_dir:
        return "the cache folder"
    if cache_dir is not None and path == cache_dir / STEPS_FOLDER:
        return "the library folder"
    if path.name.endswith(".lock"):
        return "the lock file"
    if path.suffix == ".py":
        return "the library file"
    return "the cache file" if path.suffix == ".json" else "a folder of the cache"


def link_error(link: Path, cache_dir: Path | None = None) -> CacheError:
    return CacheError(
        f"{link}: {role(link, cache_dir)} is a symbolic link (to {points_to(link)}); prettyplay "
        "never follows one: delete the link"
    )


def unlinked(cache_dir: Path, path: Path | None = None, file: bool = False) -> Path:
    """``path`` (the cache folder itself by default) as prettyplay may use it: a CacheError
    when the cache folder, a folder of the cache on the way to ``path``, or ``path`` itself is a
    symbolic link, or when ``path`` is a ``file`` that is not a file of its own (a hard link,
    or no regular file). Every path of the cache is checked here."""
    path = cache_dir if path is None else path
    link = first_link(cache_dir, path)
    if link is not None:
        raise link_error(link, cache_dir)
    if file and not_its_own(path):
        raise CacheError(
            f"{path}: {role(path, cache_dir)} is not a file of its own (a hard link or not a "
            "regular file); prettyplay never opens one: delete it"
        )
    return path


def files_in(cache_dir: Path, folder: Path, suffix: str, deep: bool = False) -> list[Path]:
    """The names ending in ``suffix`` in ``folder`` of the cache (``deep``: and in the folders
    in it), in order, but folders; none when it is not there. A name that is a link is listed
    (reading it refuses it by name, unread); a link to a folder is refused here, wherever it is
    met, and never followed."""
    unlinked(cache_dir, folder)
    if not folder.is_dir():
        return []
    return sorted(_walk(cache_dir, folder, suffix, deep))


def _walk(cache_dir: Path, folder: Path, suffix: str, deep: bool) -> list[Path]:
    found = []
    try:
        with os.scandir(folder) as entries:
            listed = [(folder / entry.name, entry) for entry in entries]
    except OSError as exc:
        raise CacheError(f"{folder}: cannot list the folder: {exc}") from exc
    for path, entry in listed:
        if entry.is_symlink() and path.is_dir():  # what it points to: no folder of the cache
            raise link_error(path, cache_dir)
        if entry.is_dir(follow_symlinks=False):
            if deep:
                found += _walk(cache_dir, path, suffix, deep)
        elif entry.name.endswith(suffix):
            found.append(path)
    return found


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
