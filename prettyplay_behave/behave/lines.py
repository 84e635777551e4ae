"""Log lines that leave behave's formatters whole.

behave's log handler writes to stderr, its formatters to stdout. Where both reach the same
terminal, pipe or file, a log line would land in the middle of a formatter's line (the
``progress`` formatter's dots after a feature's name), and the coloured ``pretty`` formatter,
which moves the cursor up to rewrite a step's line once the step ends, would overwrite the log
lines printed meanwhile. Each formatter stream that shares the log's destination is watched:
a log line first ends the formatter's open line, and a rewrite of an earlier line reaches past
the log lines printed since and comes back below them.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

CURSOR_UP = re.compile(r"\x1b\[(\d+)A")


class WatchedStream:
    """A formatter's output stream that knows whether its last line is open and how many log
    lines were printed under it since the formatter last wrote."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.open = False  # the last text written did not end its line
        self.logged = 0  # log lines printed since the formatter's last write
        self._below = 0  # log lines a rewrite went above: the cursor comes back below them

    def write(self, text: str) -> Any:
        up = CURSOR_UP.fullmatch(text)
        if up:  # a rewrite of an earlier line: reach past the log lines printed under it
            self._below, self.logged = self.logged, 0
            return self._stream.write(f"\x1b[{int(up[1]) + self._below}A")
        if text:
            self.logged = 0
            self.open = not text.endswith("\n")
        if self._below and "\n" in text:  # the rewritten line ends: back below the log lines
            head, _, tail = text.partition("\n")
            text = f"{head}\n\x1b[{self._below}B{tail}"
            self._below = 0
        return self._stream.write(text)

    def before_log(self, lines: int) -> None:
        """A log record of ``lines`` lines is about to reach the same destination."""
        if self.open:
            self._stream.write("\n")
            self._stream.flush()
            self.open = False
        self.logged += lines

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _KeepLinesWhole(logging.Filter):
    def __init__(self, handler: logging.Handler, watched: list[WatchedStream]) -> None:
        super().__init__()
        self.handler, self.watched = handler, watched

    def filter(self, record: logging.LogRecord) -> bool:
        lines = self.handler.format(record).count("\n") + 1
        for stream in self.watched:
            stream.before_log(lines)
        return True


def keep_log_lines_whole(context: Any) -> None:
    """Watch the streams of the run's formatters that share a destination with a log handler
    of the root logger (as behave's ``setup_logging`` installs it)."""
    formatters = getattr(getattr(context, "_runner", None), "formatters", None) or []
    for handler in logging.getLogger().handlers:
        destination = _destination(getattr(handler, "stream", None))
        if destination is None:
            continue
        watched = []
        for formatter in formatters:
            stream = getattr(formatter, "stream", None)
            if isinstance(stream, WatchedStream):
                watched.append(stream)
            elif stream is not None and _destination(stream) == destination:
                formatter.stream = WatchedStream(stream)
                opener: Any = getattr(formatter, "stream_opener", None)
                if getattr(opener, "stream", None) is stream:  # behave checks they are one
                    opener.stream = formatter.stream
                watched.append(formatter.stream)
        if watched:
            handler.addFilter(_KeepLinesWhole(handler, watched))


def _destination(stream: Any) -> tuple[int, int] | None:
    """The file a stream writes to (device and inode), or None for one without a file."""
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_dev, status.st_ino
