"""Log lines that leave behave's formatters whole.

behave's log handler writes to stderr, its formatters to stdout. Where both reach the same
terminal, pipe or file, a log line would land in the middle of a formatter's line (the
``progress`` formatter's dots after a feature's name), and the coloured ``pretty`` formatter,
which moves the cursor up to rewrite a step's line once the step ends, would overwrite the log
lines printed meanwhile. Each formatter stream that shares the log's destination is watched:
a log line first ends the formatter's open line, and a step's line that log lines were printed
under is written again below them instead of over them.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

CURSOR_UP = re.compile(r"\x1b\[(\d+)A")


class WatchedStream:
    """A formatter's output stream that knows whether its last line is open and whether log
    lines were printed since the formatter last wrote."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.open = False  # the last text written did not end its line
        self.logged = False  # log lines were printed since the formatter's last write

    def write(self, text: str) -> Any:
        if self.logged and CURSOR_UP.fullmatch(text):
            # a rewrite of a line above the log lines would overwrite them: the line is written
            # again below them instead
            self.logged = False
            return 0
        if text:
            self.logged = False
            self.open = not text.endswith("\n")
        return self._stream.write(text)

    def before_log(self) -> None:
        """A log record is about to reach the same destination."""
        if self.open:
            self._stream.write("\n")
            self._stream.flush()
            self.open = False
        self.logged = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _KeepLinesWhole(logging.Filter):
    def __init__(self, watched: list[WatchedStream]) -> None:
        super().__init__()
        self.watched = watched

    def filter(self, record: logging.LogRecord) -> bool:
        for stream in self.watched:
            stream.before_log()
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
            handler.addFilter(_KeepLinesWhole(watched))


def _destination(stream: Any) -> tuple[int, int] | None:
    """The file a stream writes to (device and inode), or None for one without a file."""
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_dev, status.st_ino
