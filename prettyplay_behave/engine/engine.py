"""The engine: runs each step of a run's tests through its cycle (:mod:`.cycle`), books its
requests, tells the hooks it started and finished, keeps what its end means (green code proven,
a red verdict kept), and opens the steering gate on a final ``IncurableStepError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import IncurableStepError, PrettyPlayError, StepFailedError, failure_kind, rendered
from ..vocabulary import Origin, StepStatus
from .cycle import Candidate, Parts, StepCycle, pause
from .keeper import Keeper
from .learnt import Learnt
from .steering import Steering, steering_allowed, stuck_step
from .step import StepRun, StepSpec

if TYPE_CHECKING:
    from ..cache import CacheStore
    from ..safety.secrets import Secrets
    from .advisor import Advisor
    from .history import Attempt
    from .hooks import Events
    from .page_state import Pages
    from .state import TestState


class Engine:
    """Runs the steps of every test of a run, with the run's cache, advisor, hooks and secrets;
    ``steering`` is the part behind the steering gate (none: the gate never opens)."""

    def __init__(
        self,
        cache: CacheStore,
        advisor: Advisor,
        events: Events,
        secrets: Secrets,
        pages: Pages,
        steering: Steering | None = None,
    ) -> None:
        learnt = Learnt()
        keeper = Keeper(cache, advisor, secrets, learnt)
        self.parts = Parts(cache, advisor, pages, events, secrets, learnt, keeper)
        self.advisor = advisor
        self.events = events
        self.keeper = keeper
        self.steering = steering

    def perform(self, test: TestState, spec: StepSpec, group: str | None = None) -> StepRun:
        """Perform one step of ``test`` (a member of ``group``, when given); its run in
        the scenario. A PrettyPlayError it raises carries that run."""
        run = StepRun(spec, test.key_for(spec), group)
        if not test.scenario and test.page.url != "about:blank":
            test.touched_elsewhere()  # a hook had the page before the first step
        self.events.on_step_started(sentence=spec.sentence, step=run, test=test)
        try:
            with self.booked(run):
                if spec.delay:
                    pause(test, spec.delay)
                self._cycle(test, run)
            run.outcome = StepStatus.PASSED
            self.keeper.went_green(test, run)
        except BaseException as exc:
            run.outcome, run.failure = StepStatus.FAILED, failure_kind(exc)
            run.error = rendered(exc)
            if isinstance(exc, PrettyPlayError) and exc.step_run is None:
                exc.step_run = run
            if isinstance(exc, StepFailedError):
                self.keeper.keep_verdict(test, run, exc)
            raise
        finally:
            test.add_step(run)
            self.events.on_step_finished(
                sentence=spec.sentence, outcome=run.outcome, step=run, test=test
            )
        return run

    def _cycle(self, test: TestState, run: StepRun) -> None:
        cycle = StepCycle(self.parts, test, run)
        try:
            cycle.perform()
        except IncurableStepError as failure:
            # a step of a recoverable group is steered once its group recovery gives up
            if cycle.in_recoverable_group or not self.steer(test, run, failure):
                raise

    @contextmanager
    def booked(self, run: StepRun) -> Iterator[None]:
        """Book on ``run`` the LLM requests and tokens of what runs inside."""
        before = self.advisor.llm.total_usage
        try:
            yield
        finally:
            usage = self.advisor.llm.total_usage
            run.requests += usage.requests - before.requests
            run.tokens += usage.total_tokens - before.total_tokens

    def next_recovery_cycle(self, test: TestState, prompt: str) -> bool:
        """Start one more recovery cycle of the group ``prompt`` in ``test``; False once the
        test's ``healing_attempts`` cycles for that prompt are spent."""
        cycles = test.config.healing_attempts
        return self.parts.learnt.next_recovery_cycle(test.name, prompt, cycles)

    def steer(self, test: TestState, run: StepRun, failure: IncurableStepError) -> bool:
        """The steering gate: True when the part behind it made the step green."""
        if self.steering is None or not steering_allowed(test.config, self.advisor.available):
            return False

        def keep(code: str, guidance: str, ran: Attempt | None) -> None:
            run.guidance = guidance  # for the report; never in the cache
            told = f"healed interactively with the engineer's guidance: {guidance}"
            StepCycle(self.parts, test, run).keep(Candidate(code, Origin.STEERED, told=told), ran)

        parts = self.parts
        stuck = stuck_step(
            test, run, failure, parts.advisor, parts.pages, parts.secrets, parts.execute, keep
        )
        return self.steering.steer(stuck)
