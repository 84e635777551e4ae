"""The reports a ``report_dir`` keeps: each run's report under a name of its own, the newest
also under the report's usual name (``report.html``), and no more than ``report_history`` runs.

A run's own name is the usual name's stem, the time the run ended (UTC) and eight random hex
digits (``report-20261203-101530-1f2e3d4c.html``), so two runs in one second, or two BehaveX
workers at once, never take one name. A file is a kept report of prettyplay's only when its
name has that form and its first bytes carry the line this module reads (:data:`MARKER`, the
report's ``<meta name="prettyplay-run" ...>``) for the same stem: nothing else in the folder is
read past its first bytes, listed or deleted, whatever its name. A name that is a symbolic link,
or a file another name shares (a hard link), is neither read nor deleted; ``report_dir`` itself
is where the setting puts it. Files are written beside their name and renamed over it, so a
reader (or another worker) never sees half a report.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from html import unescape
from pathlib import Path

STAMP = "%Y%m%d-%H%M%S"
HEAD = 4096  # the marker lies in the report's first lines
MARKER = re.compile(
    r'<meta name="prettyplay-run" data-series="([^"]*)" data-ended="([^"]*)" '
    r'data-tests="(\d+)" data-failed="(\d+)">'
)


@dataclass(frozen=True)
class KeptRun:
    """One run's report: its file name in ``report_dir``, its stem (the series it belongs to),
    when the run ended and what it counted."""

    name: str
    series: str
    ended: datetime
    tests: int
    failed: int

    @property
    def passed(self) -> int:
        return self.tests - self.failed

    @property
    def shown_time(self) -> str:
        return self.ended.strftime("%Y-%m-%d %H:%M:%S UTC")


def new_run(series: str, tests: int, failed: int) -> KeptRun:
    """The run that ends now, under a name no other run takes."""
    ended = datetime.now(timezone.utc)
    name = f"{series}-{ended.strftime(STAMP)}-{secrets.token_hex(4)}.html"
    return KeptRun(name, series, ended, tests, failed)


def kept_runs(report_dir: Path, series: str) -> list[KeptRun]:
    """The runs of ``series`` whose reports ``report_dir`` keeps, newest first."""
    named = re.compile(re.escape(series) + r"-\d{8}-\d{6}-[0-9a-f]{8}\.html")
    try:
        names = [entry.name for entry in os.scandir(report_dir)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    runs = []
    for name in names:
        if not named.fullmatch(name):
            continue
        run = _read(report_dir / name)
        if run is not None and run.series == series:
            runs.append(run)
    return sorted(runs, key=lambda run: (run.ended, run.name), reverse=True)


def _read(path: Path) -> KeptRun | None:
    """The run a kept report names in its first bytes; None for anything else: a link, a file
    another name shares, no regular file, no marker."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # a symbolic link (ELOOP), gone meanwhile, unreadable
        return None
    with os.fdopen(descriptor, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
            return None
        head = file.read(HEAD).decode("utf-8", "replace")
    marked = MARKER.search(head)
    if marked is None:
        return None
    series, ended, tests, failed = marked.groups()
    try:
        when = datetime.fromisoformat(unescape(ended))
    except ValueError:
        return None
    return KeptRun(path.name, unescape(series), when, int(tests), int(failed))


def write(path: Path, text: str) -> None:
    """``text`` as the file ``path``, written beside it and renamed over it: a name that was a
    link (symbolic or hard) is replaced, never written through."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        with open(partial, "x", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    finally:
        with suppress(FileNotFoundError):
            partial.unlink()


def forget(report_dir: Path, runs: list[KeptRun]) -> None:
    """Delete the reports of ``runs`` (read by :func:`kept_runs`: prettyplay's own); one another
    worker deleted meanwhile is gone already. A name is deleted, never what a link points to."""
    for run in runs:
        path = report_dir / run.name
        if _read(path) is None:  # no longer the file that was read
            continue
        with suppress(FileNotFoundError):
            path.unlink()
