"""The page every attempt of a step starts on: the page as it was before the step's first
attempt (docs/step-cycle.md, "The generation loop").

An attempt that changed the page leaves it changed for the next one. So before each attempt the
page is compared with the one the step started on; where it differs, a fresh browser context
with the scenario's earlier steps replayed brings it back, and the next request says so. A page
handed in, or one a step or hook outside prettyplay used, cannot be rebuilt: the request says
that instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..log_events import LogEvent, record
from ..vocabulary import Outcome, StepStatus

if TYPE_CHECKING:
    from ..browser.snapshot import PageState
    from .history import Attempt
    from .page_state import Pages
    from .state import TestState
    from .step import StepSpec

# how the engine executes a step's code on the test's page (Parts.execute): the test, the step,
# the code, and whether it runs at once (a replay) or on a settled page (a candidate)
Execute = Callable[["TestState", "StepSpec", str, bool], "Attempt"]


class CleanPage:
    """The start page of one step and what the next request is told of the page it gets."""

    def __init__(
        self, test: TestState, pages: Pages, execute: Execute, dirty: bool = False
    ) -> None:
        self.test = test
        self.pages = pages
        self.execute = execute
        self.start: PageState | None = None  # the page before the step's first attempt
        self.dirty = dirty  # an execution of this step changed the page since
        self.restored = ""  # what the next code request is told of the page it starts on

    def mark_start(self) -> None:
        """The page now is where the step starts (before code that must not leave a change)."""
        self.start = self.pages.now(self.test)

    def get(self) -> PageState:
        """The page an attempt starts on, brought back where an earlier execution changed it."""
        state = self.pages.now(self.test)
        self.restored = ""
        if self.start is None and not self.dirty:
            self.start = state
            return state
        self.dirty = False
        if self.start is not None and _same_page(state, self.start):
            return state
        if not self.test.renewable:
            why = (
                "the page was handed in"
                if self.test.renew is None
                else "a step or hook outside prettyplay used the page"
            )
            self.restored = (
                f"an earlier attempt of this step changed the page, and it cannot be brought back "
                f"({why}): the page below is as that attempt left it"
            )
            return state
        self.restored = restore(self.test, self.execute)
        state = self.pages.now(self.test)
        self.start = self.start or state
        return state


def restore(test: TestState, execute: Execute) -> str:
    """The page as it was before the step under way: a fresh context, the scenario's earlier
    steps replayed from the code that ran for them. What the next request is told of it."""
    started = time.monotonic()
    assert test.renew is not None
    test.renew(test)
    earlier = [e for e in test.scenario if e.code and e.outcome is not StepStatus.FAILED]
    for step_run in earlier:
        attempt = execute(test, step_run.spec, step_run.code, True)
        if attempt.outcome is not Outcome.GREEN:
            record(
                LogEvent.PAGE_NOT_RESTORED,
                "the clean page could not be rebuilt: the earlier step %r went red when "
                "replayed (%s)",
                step_run.sentence,
                attempt.headline,
            )
            return (
                "an earlier attempt of this step changed the page; on a fresh page the earlier "
                f"step {step_run.sentence!r} went red when replayed ({attempt.headline}), so the "
                "page below is where that replay stopped"
            )
    record(
        LogEvent.PAGE_RESTORED,
        "a clean page: a fresh context, the earlier steps replayed (%d) in %.0f ms",
        len(earlier),
        (time.monotonic() - started) * 1000,
    )
    steps = f"{len(earlier)} earlier step{'' if len(earlier) == 1 else 's'} replayed"
    return (
        "an earlier attempt of this step changed the page, so the page was brought back to "
        f"where this step started: a fresh browser context, {steps}"
    )


def _same_page(state: PageState, other: PageState) -> bool:
    return (state.url, state.title, state.snapshot) == (other.url, other.title, other.snapshot)
