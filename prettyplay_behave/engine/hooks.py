"""Hooks: the events of the step cycle a project may listen to, each defined once, typed.

A hook is any object with some of the methods of :class:`Hooks` (subclass it, or write the
methods on an object of your own); each is optional. A method takes, by name, any of the
values its event gives: the plain ones (``sentence``, ``outcome``, ``explanation``, ...) and the
objects behind them (``step``, the step's :class:`~.step.StepRun` with its code, origin
and history; ``test``, the :class:`~.state.TestState` with its page and config; ``verdict``;
``group``). So ``def on_step_finished(self, sentence, outcome)`` and ``def
on_step_finished(self, step, test)`` both work; ``**values`` takes them all, and ``*args`` the
text values in their order (``sentence, outcome``).

A hook is checked when it is added, as pytest-bdd's hook specs are: a method that asks for a
value its event does not give, or takes them by position only, is a ``TypeError`` naming the
hook, the method and what the event gives; a method whose name starts with ``on_`` but names no
event (``on_step_start``) is warned about, with the name it was likely meant to be. A hook that
raises while it runs is logged and never breaks the run.

The engine calls an event as the method of :class:`Events` it is (``events.on_healed(...)``),
so a type checker checks the event's name and values at every call.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..log_events import LogEvent, record

if TYPE_CHECKING:
    from ..llm.answers import Verdict
    from .state import TestState
    from .step import StepRun


class Hooks:
    """The hook events, each with what it gives; a hook defines any of them, taking any of its
    values by name."""

    def on_step_started(self, sentence: str, step: StepRun, test: TestState) -> None:
        """A step is about to run."""

    def on_step_finished(self, sentence: str, outcome: str, step: StepRun, test: TestState) -> None:
        """A step ended: ``passed``, ``failed`` or ``passed after recovery``."""

    def on_healing_started(
        self, sentence: str, category: str, step: StepRun, test: TestState, verdict: Verdict
    ) -> None:
        """A step's heal begins: ``rot``, ``fixable`` or (a group's row) ``recoverable``."""

    def on_healed(
        self,
        sentence: str,
        explanation: str,
        step: StepRun,
        test: TestState,
        verdict: Verdict | None,
    ) -> None:
        """A step's new code went green, passed the gate and was written. ``verdict`` is the
        classification or diagnosis that started the heal (None for a steered step, and for
        code that healed the same step or locator earlier in the run)."""

    def on_group_started(self, prompt: str, steps: list[StepRun]) -> None:
        """A group block begins. ``steps`` are the group's steps that ran (here none yet)."""

    def on_group_passed(self, prompt: str, steps: list[StepRun]) -> None:
        """A group block ended green (a recovered group too)."""

    def on_group_failed(self, prompt: str, steps: list[StepRun]) -> None:
        """A group block ended through an exception."""

    def on_group_finished(self, prompt: str, steps: list[StepRun]) -> None:
        """A group block ended, either way; exactly once."""


HOOK_EVENTS = tuple(name for name in vars(Hooks) if name.startswith("on_"))


def _gives(event: str) -> tuple[str, ...]:
    """The values an event gives, in the order of its spec."""
    return tuple(inspect.signature(getattr(Hooks, event)).parameters)[1:]


GIVES = {event: _gives(event) for event in HOOK_EVENTS}
# what a method with ``*args`` gets, by position: the event's text values (a hook that wants
# only the words of an event takes these)
TEXTS = {
    event: tuple(
        name
        for name, parameter in inspect.signature(getattr(Hooks, event)).parameters.items()
        if parameter.annotation == "str"
    )
    for event in HOOK_EVENTS
}


@dataclass(frozen=True)
class Plan:
    """How a hook method is called: its text values by position (``*args``), every value by
    name (``**values``), or the values it names."""

    by_position: bool = False
    names: tuple[str, ...] | None = None  # None: every value

    def call(self, method: Callable[..., Any], event: str, values: dict[str, Any]) -> None:
        if self.by_position:
            method(*(values[name] for name in TEXTS[event]))
        elif self.names is None:
            method(**values)
        else:
            method(**{name: values[name] for name in self.names})


def plan_of(hook: object, event: str, method: Callable[..., Any]) -> Plan:
    """How ``method`` takes ``event``'s values; a TypeError naming what is wrong."""
    gives = GIVES[event]
    where = f"hook {type(hook).__name__}.{event}"
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return Plan(by_position=True)  # a builtin or C callable: nothing to read
    if any(parameter.kind is parameter.VAR_POSITIONAL for parameter in parameters):
        return Plan(by_position=True)
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        return Plan()
    named: list[str] = []
    for parameter in parameters:
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"{where} takes {parameter.name!r} by position only; hook methods take their "
                f"values by name, of: {', '.join(gives)}"
            )
        if parameter.name in gives:
            named.append(parameter.name)
        elif parameter.default is parameter.empty:  # one with a default is the hook's own
            raise TypeError(
                f"{where} asks for {parameter.name!r}, which the event does not give; it gives: "
                f"{', '.join(gives)}"
            )
    return Plan(names=tuple(named))


class Events(Hooks):
    """Calls every registered hook. Each event is a method of this class (its signature that of
    :class:`Hooks`), called with its values by name."""

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        self.hooks: list[object] = []
        self._plans: dict[tuple[int, str], Plan] = {}
        for hook in hooks:
            self.add(hook)

    def add(self, hook: object) -> None:
        """Register ``hook``: check every event method it has, warn about each ``on_`` method
        of it that no event calls."""
        for name in dir(hook):
            method = getattr(hook, name, None)
            if not name.startswith("on_") or not callable(method):
                continue
            if name in HOOK_EVENTS:
                self._plans[(id(hook), name)] = plan_of(hook, name, method)
                continue
            near = difflib.get_close_matches(name, HOOK_EVENTS, n=1)
            record(
                LogEvent.HOOK_UNKNOWN,
                "hook %s has %s, which no hook event calls%s; the events are: %s",
                type(hook).__name__,
                name,
                f" (did you mean {near[0]}?)" if near else "",
                ", ".join(HOOK_EVENTS),
            )
        self.hooks.append(hook)

    def _emit(self, event: str, values: dict[str, Any]) -> None:
        for hook in self.hooks:
            method = getattr(hook, event, None)
            if method is None:
                continue
            try:
                key = (id(hook), event)
                if key not in self._plans:  # a method the hook makes on demand (__getattr__)
                    self._plans[key] = plan_of(hook, event, method)
                self._plans[key].call(method, event, values)
            except Exception:
                record(
                    LogEvent.HOOK_FAILED,
                    "hook %s.%s raised; the run goes on",
                    type(hook).__name__,
                    event,
                    exc_info=True,
                )


def _dispatcher(event: str) -> Callable[..., None]:
    def emit(self: Events, **values: Any) -> None:  # by name only, as the engine calls them
        self._emit(event, values)

    emit.__name__ = event
    emit.__doc__ = getattr(Hooks, event).__doc__
    return emit


for _event in HOOK_EVENTS:
    setattr(Events, _event, _dispatcher(_event))
