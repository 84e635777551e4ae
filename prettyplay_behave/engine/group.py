"""A group block: the steps of a group, their traces, their pace and their recovery.

A failing group step (a red replay or a generation failure) on a normal run is diagnosed with
its group instead of healed alone. One recovery cycle: a ``diagnose`` request (the group prompt,
the traces, the page and the failed step's history) decides ``recoverable | product_defect |
incurable``; for ``recoverable`` every step from the root step through the failed one heals as
its own unit with a fresh healing counter. A repeat failure starts a fresh diagnosis while
cycles remain; cycles are capped per group prompt per test by ``healing_attempts``. A group
that stays failed passes the steering gate with its group context before it propagates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import pace_ms
from ..errors import (
    IncurableStepError,
    PrettyPlayError,
    ProviderUnavailableError,
    StepFailedError,
    failure_kind,
    rendered,
)
from ..log_events import LogEvent, record
from ..vocabulary import GroupLabel, StepStatus
from .advisor import verdict_failure
from .cycle import StepCycle, after_request, pause
from .hooks import Events
from .step import GroupStepRecord, StepRun

if TYPE_CHECKING:
    from ..llm.answers import Verdict
    from .engine import Engine
    from .state import TestState
    from .step import StepSpec


class GroupBlock:
    """One group block of one test. ``speed`` paces the steps after the first; ``delay``
    precedes the first."""

    def __init__(
        self, engine: Engine, prompt: str, speed: int | None = None, delay: float | None = None
    ) -> None:
        if not prompt or not prompt.strip():
            raise ValueError("a group needs a prompt naming its shared goal; got an empty one")
        if speed is not None and not 0 <= speed <= 100:
            raise ValueError(f"group speed must be 0 to 100, not {speed}")
        if delay is not None and delay < 0:
            raise ValueError(f"group delay must be 0 or more seconds, not {delay}")
        self.engine = engine
        self.events: Events = engine.events
        self.prompt = prompt
        self.speed = speed
        self.delay = delay
        self.traces: list[GroupStepRecord] = []
        self.members: list[StepRun] = []  # the executed steps, for the recovery row
        self._last_failed: StepRun | None = None  # of the recovery under way

    @property
    def pace_ms(self) -> int:
        """The plain wait before every step after the first (never the browser's slow_mo)."""
        return 0 if self.speed is None else pace_ms(self.speed)

    # -- the lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.events.on_group_started(prompt=self.prompt, steps=list(self.members))

    def finish(self, failed: bool) -> None:
        if failed:
            self.events.on_group_failed(prompt=self.prompt, steps=list(self.members))
        else:
            self.events.on_group_passed(prompt=self.prompt, steps=list(self.members))
        self.events.on_group_finished(prompt=self.prompt, steps=list(self.members))

    # -- a step of the group -----------------------------------------------------------------

    def perform(self, test: TestState, spec: StepSpec) -> StepRun:
        seconds = (self.delay or 0) if not self.traces else self.pace_ms / 1000
        if seconds:
            pause(test, seconds)
        url_before = test.page.url
        try:
            run = self.engine.perform(test, spec, self.prompt)
        except BaseException as failure:
            self.traces.append(
                GroupStepRecord(spec.sentence, StepStatus.FAILED, url_before, test.page.url)
            )
            failed = failure.step_run if isinstance(failure, PrettyPlayError) else None
            if not isinstance(failed, StepRun):
                raise
            self.members.append(failed)
            if not self._recoverable(test, failure):
                raise
            assert isinstance(failure, IncurableStepError)
            self._recover_booked(test, failed, failure)
            failed.outcome, failed.error = StepStatus.PASSED_AFTER_RECOVERY, ""
            return failed
        self.traces.append(GroupStepRecord(spec.sentence, run.outcome, url_before, test.page.url))
        self.members.append(run)
        return run

    def _recoverable(self, test: TestState, failure: BaseException) -> bool:
        """Strict runs only classify; a product defect is never recovered."""
        return (
            isinstance(failure, IncurableStepError)
            and not test.config.strict
            and self.engine.advisor.available
        )

    def _recover_booked(
        self, test: TestState, failed: StepRun, failure: IncurableStepError
    ) -> None:
        """Recover, booking the group's requests on the step whose failure started them."""
        try:
            with self.engine.booked(failed):
                self.recover(test, failed, failure)
        except BaseException as final:
            failed.failure, failed.error = failure_kind(final), rendered(final)
            if isinstance(final, StepFailedError):
                self.engine.keeper.keep_verdict(test, failed, final)
            raise

    # -- recovery ------------------------------------------------------------------------------

    def recover(self, test: TestState, failed: StepRun, failure: StepFailedError) -> None:
        """Recover from ``failure`` of ``failed``, or raise the final error.

        A final failure (not a product defect) passes the steering gate with the group context
        first.
        """
        try:
            self._cycles(test, failed, failure)
        except IncurableStepError as final:
            stuck = self._last_failed or failed
            if not self.engine.steer(test, stuck, final):
                raise

    def _cycles(self, test: TestState, failed: StepRun, failure: StepFailedError) -> None:
        self._last_failed = failed
        while self.engine.next_recovery_cycle(test, self.prompt):
            try:
                page = self.engine.parts.pages.now(test)
                verdict = self.engine.advisor.diagnose(test, self.prompt, self.traces, failed, page)
                failed.verdicts.append(verdict)
            except ProviderUnavailableError as down:
                raise after_request(failure, "the group's diagnosis", down) from down
            repeat = self._run_row(test, self._row(verdict, failed, failure), verdict)
            if repeat is None:
                return
            failed, failure = repeat
            self._last_failed = failed
        cap = test.config.healing_attempts
        raise failure.recast(type(failure), f"the group's recovery cycles are exhausted ({cap})")

    def _row(self, verdict: Verdict, failed: StepRun, failure: StepFailedError) -> list[StepRun]:
        """The steps to regenerate: from the root step through the failed step."""
        if verdict.label != GroupLabel.RECOVERABLE:
            raise verdict_failure(verdict, "the group cannot recover", failure)
        last = self.members.index(failed)
        root = next(
            (i for i, m in enumerate(self.members[: last + 1]) if m.sentence == verdict.root_step),
            None,
        )
        if root is None:
            outside = f"the diagnosis traces the failure to {verdict.root_step!r}, a step outside"
            raise failure.recast(
                type(failure),
                outside + " the group",
                verdict.explanation,
                verdict.recommendation,
            )
        return list(self.members[root : last + 1])

    def _run_row(
        self, test: TestState, row: list[StepRun], verdict: Verdict
    ) -> tuple[StepRun, IncurableStepError] | None:
        """Regenerate each row step on the current page, gated and written back per step.

        Returns the step that failed again and its failure, or None when the whole row healed.
        """
        for run in row:
            try:
                StepCycle(self.engine.parts, test, run).heal(verdict)
            except IncurableStepError as repeat:
                return run, repeat
            record(
                LogEvent.GROUP_ROW_RECOVERED,
                "group %r recovered step %r",
                self.prompt,
                run.sentence,
            )
        return None
