"""The authoring surface: a test (``PrettyPlay``) with steps, checks and groups.

::

    with PrettyPlay("login-flow", config=PrettyConfig(base_url="http://localhost:8000")) as t:
        t.step("open the login page")
        t.expect("the page greets Ann", tries=2)
        with t.group("fill and submit the order form", speed=30, delay=2) as g:
            g.step("fill the email field")
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING

from .config import PrettyConfig
from .engine.executor import failure_label
from .engine.recovery import GroupRecovery
from .engine.step import ACTION, CHECK, ScenarioEntry, StepSpec, Trace
from .errors import IncurableStepError
from .report.artifacts import folder_name
from .runtime import Runtime

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from .engine.executor import TestRun


class PrettyPlay:
    """One test. ``name`` is its cache namespace; without a ``page`` it owns a browser."""

    def __init__(
        self,
        name: str,
        config: PrettyConfig | None = None,
        page: Page | None = None,
        *,
        runtime: Runtime | None = None,
    ) -> None:
        if not name.strip():
            raise ValueError("a test needs a name: it is the cache namespace")
        self.name = name
        self.config = config or (runtime.config if runtime else PrettyConfig())
        self._owns_runtime = runtime is None
        self.runtime = runtime or Runtime(self.config)
        if self._owns_runtime:  # a test on its own writes a report of its own
            self.runtime.report_name = f"report-{folder_name(name)}.html"
        self._page = page
        self._run: TestRun | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def run(self) -> TestRun:
        if self._run is None:
            self._run = self.runtime.open_test(self.name, self.config, self._page)
        return self._run

    @property
    def page(self) -> Page:
        return self.run.page

    def close(self) -> None:
        if self._run is not None:
            self.runtime.finish_test(self._run)
            self._run = None
        if self._owns_runtime:
            self.runtime.close()

    def __enter__(self) -> PrettyPlay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- steps ---------------------------------------------------------------------------------

    def step(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> ScenarioEntry:
        """An action, performed on the live page."""
        return self._do(StepSpec(ACTION, sentence, data, tries, delay), None)

    def expect(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> ScenarioEntry:
        """A check, asserted on the live page."""
        return self._do(StepSpec(CHECK, sentence, data, tries, delay), None)

    def group(self, prompt: str, speed: int | None = None, delay: float | None = None) -> Group:
        """A block of steps with a shared goal (``prompt``) that heals as a unit."""
        return Group(self, prompt, speed, delay)

    def _do(self, spec: StepSpec, group: str | None) -> ScenarioEntry:
        return self.runtime.executor.run(self.run, spec, group)


class Group:
    """A group block. ``speed`` paces the steps after the first; ``delay`` precedes the first."""

    def __init__(self, test: PrettyPlay, prompt: str, speed: int | None, delay: float | None):
        if not prompt or not prompt.strip():
            raise ValueError("a group needs a prompt naming its shared goal; got an empty one")
        if speed is not None and not 0 <= speed <= 100:
            raise ValueError(f"group speed must be 0 to 100, not {speed}")
        if delay is not None and delay < 0:
            raise ValueError(f"group delay must be 0 or more seconds, not {delay}")
        self.test = test
        self.prompt = prompt
        self.speed = speed
        self.delay = delay
        self.traces: list[Trace] = []
        self._members: list[ScenarioEntry] = []  # the executed steps, for the recovery row
        self._steps_run = 0

    @property
    def pace_ms(self) -> int:
        """The plain wait before every step after the first (never the browser's slow_mo)."""
        return 0 if self.speed is None else int((100 - self.speed) * 30)

    def __enter__(self) -> Group:
        self.test.runtime.events.emit("on_group_started", self.prompt)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        events = self.test.runtime.events
        events.emit("on_group_failed" if exc is not None else "on_group_passed", self.prompt)
        events.emit("on_group_finished", self.prompt)

    def step(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> ScenarioEntry:
        """An action inside the group."""
        return self._do(StepSpec(ACTION, sentence, data, tries, delay))

    def expect(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> ScenarioEntry:
        """A check inside the group."""
        return self._do(StepSpec(CHECK, sentence, data, tries, delay))

    def _do(self, spec: StepSpec) -> ScenarioEntry:
        pause = (self.delay or 0) if self._steps_run == 0 else self.pace_ms / 1000
        if pause:
            time.sleep(pause)
        self._steps_run += 1
        run = self.test.run
        url_before = run.page.url
        try:
            entry = self.test._do(spec, self.prompt)
        except BaseException as failure:
            self.traces.append(Trace(spec.sentence, "failed", url_before, run.page.url))
            failed = run.scenario[-1] if run.scenario and run.scenario[-1].spec is spec else None
            if failed is None:
                raise
            self._members.append(failed)
            if not self._recoverable(failure):
                raise
            assert isinstance(failure, IncurableStepError)
            runtime = self.test.runtime
            recovery = GroupRecovery(runtime.executor, run, self.prompt, self.traces, self._members)
            usage_before = runtime.llm.total_usage
            try:
                recovery.recover(failed, failure)
            except BaseException as final:
                failed.failure = failure_label(final)
                raise
            finally:
                # the group's requests are booked on the step whose failure started them
                usage = runtime.llm.total_usage
                failed.requests += usage.requests - usage_before.requests
                failed.tokens += usage.total_tokens - usage_before.total_tokens
            failed.outcome = "recovered"
            return failed
        self.traces.append(Trace(spec.sentence, entry.outcome, url_before, run.page.url))
        self._members.append(entry)
        return entry

    def _recoverable(self, failure: BaseException) -> bool:
        """Strict runs only classify; a product defect is never recovered."""
        run = self.test.run
        return (
            isinstance(failure, IncurableStepError)
            and not run.config.strict
            and self.test.runtime.llm.available
        )
