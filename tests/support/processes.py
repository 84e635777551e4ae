"""Processes below a test, read from ``/proc``: waiting for them, finding and killing them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` until it is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when
    the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def parent_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def descendants(root: int) -> set[int]:
    """Every living process below ``root``."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        parent = parent_of(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def process_state(pid: int) -> str:
    fields = _stat(pid)
    return fields[0] if fields else "Z"


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def alive(pids: Iterable[int]) -> dict[int, str]:
    """Those of ``pids`` still running (zombies count as gone): pid -> command name."""
    return {pid: command_name(pid) for pid in pids if process_state(pid) != "Z"}
