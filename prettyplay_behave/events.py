"""Hooks and log records.

A hook is any object with some of the ``on_*`` methods. A hook that raises is logged and never
breaks the run. Log records go to the ``prettyplay`` logger, each with an ``event`` name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("prettyplay")

HOOK_EVENTS = (
    "on_step_started",
    "on_step_finished",
    "on_healing_started",
    "on_healed",
    "on_group_started",
    "on_group_passed",
    "on_group_failed",
    "on_group_finished",
)


def record(level: int, event: str, message: str, *args: object, **fields: Any) -> None:
    """One log record with its event name (and any extra fields) attached."""
    log.log(level, message, *args, extra={"event": event, **fields})


class Events:
    """Dispatches hook calls to every registered hook object."""

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        self.hooks: list[object] = list(hooks)

    def add(self, hook: object) -> None:
        self.hooks.append(hook)

    def emit(self, name: str, *args: Any) -> None:
        if name not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {name!r}")
        for hook in self.hooks:
            method = getattr(hook, name, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception:
                log.exception(
                    "hook %s.%s raised; the run goes on",
                    type(hook).__name__,
                    name,
                    extra={"event": "hook_failed"},
                )
