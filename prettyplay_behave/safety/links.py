"""Links among the project's files: nothing is read, written or deleted through a link that
leaves the project (a link is what a pull request can plant as easily as a file).

Two rules, each written once here:

- :func:`first_link`: the folders prettyplay keeps its own files in (the cache folder, an
  export's folder) hold no symbolic link on the way to a file it uses, their own names
  included: the caller refuses the path, naming the link and where it points;
- :func:`leaves`: a name in a folder of the user's (the files of uploads, the features an export
  copies) may pass through links as long as what it reaches, links followed, stays inside that
  folder (followed the same way).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def first_link(root: Path, path: Path) -> Path | None:
    """The first of ``root`` itself and each name below it on the way to ``path`` (which lies
    in ``root``, or is it) that is a symbolic link, or None. A name that is not there yet is no
    link, nor is anything below it. The folders above ``root`` are not looked at: they are where
    the caller was told to work."""
    parts = path.relative_to(root).parts
    if ".." in parts:
        raise ValueError(f"{path} names a folder above {root}")
    for depth in range(len(parts) + 1):  # root itself, then each name below it
        here = root.joinpath(*parts[:depth])
        try:
            if stat.S_ISLNK(os.lstat(here).st_mode):
                return here
        except (FileNotFoundError, NotADirectoryError):
            return None
    return None


def points_to(link: Path) -> str:
    """Where a symbolic link points, as it is written (for a message)."""
    try:
        return os.readlink(link)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def not_its_own(path: Path) -> bool:
    """Whether ``path`` is no file of its own: a file that another name shares (a hard link:
    writing it changes the other name's file too) or no regular file. A name not there is
    neither."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not stat.S_ISREG(found.st_mode) or found.st_nlink > 1


def leaves(root: Path, path: Path) -> bool:
    """Whether ``path``, its links followed, lies outside ``root`` (its links followed too):
    the rule of upload names in the files folder and of what an export copies."""
    top, reached = root.resolve(), path.resolve()
    return reached != top and top not in reached.parents
