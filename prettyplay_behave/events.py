"""Hooks and log records.

A hook is any object with some of the methods of :class:`Hooks` (subclass it, or write the
methods on an object of your own); each is optional. A hook that raises is logged and never
breaks the run. A method whose name starts with ``on_`` but names no hook event
(``on_step_start``) is warned about when the hook is added, with the name it was likely meant
to be. Log records go to the ``prettyplay`` logger, each with an ``event`` name.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("prettyplay")


class Hooks:
    """The hook events, each with what it is given; a hook defines any of them."""

    def on_step_started(self, sentence: str) -> None:
        """A step is about to run."""

    def on_step_finished(self, sentence: str, outcome: str) -> None:
        """A step ended: ``passed``, ``failed`` or ``passed after recovery``."""

    def on_healing_started(self, sentence: str, category: str) -> None:
        """A step's heal begins: ``rot``, ``fixable`` or (a group's row) ``recoverable``."""

    def on_healed(self, sentence: str, explanation: str) -> None:
        """A step's new code went green, passed the gate and was written."""

    def on_group_started(self, prompt: str) -> None:
        """A group block begins."""

    def on_group_passed(self, prompt: str) -> None:
        """A group block ended green (a recovered group too)."""

    def on_group_failed(self, prompt: str) -> None:
        """A group block ended through an exception."""

    def on_group_finished(self, prompt: str) -> None:
        """A group block ended, either way; exactly once."""


HOOK_EVENTS = tuple(name for name in vars(Hooks) if name.startswith("on_"))


def record(level: int, event: str, message: str, *args: object, **fields: Any) -> None:
    """One log record with its event name (and any extra fields) attached."""
    log.log(level, message, *args, extra={"event": event, **fields})


class Events:
    """Dispatches hook calls to every registered hook object."""

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        self.hooks: list[object] = []
        for hook in hooks:
            self.add(hook)

    def add(self, hook: object) -> None:
        """Register ``hook``; warn about each ``on_`` method of it that no event calls."""
        for name in dir(hook):
            if name.startswith("on_") and name not in HOOK_EVENTS and callable(getattr(hook, name)):
                near = difflib.get_close_matches(name, HOOK_EVENTS, n=1)
                record(
                    logging.WARNING,
                    "hook_unknown",
                    "hook %s has %s, which no hook event calls%s; the events are: %s",
                    type(hook).__name__,
                    name,
                    f" (did you mean {near[0]}?)" if near else "",
                    ", ".join(HOOK_EVENTS),
                )
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
