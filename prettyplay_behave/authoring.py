"""The authoring surface: a test (``PrettyPlay``) with steps, checks and groups.

::

    with PrettyPlay("login-flow", config=PrettyConfig(base_url="http://localhost:8000")) as t:
        t.step("open the login page")
        t.expect("the page greets Ann", tries=2)
        with t.group("fill and submit the order form", speed=30, delay=2) as g:
            g.step("fill the email field")
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from .config import PrettyConfig, TestConfig
from .engine.group import GroupBlock
from .engine.step import GroupStepRecord, StepRun, StepSpec, shown_error
from .errors import PrettyPlayError
from .report.artifacts import folder_name
from .runtime import Runtime
from .vocabulary import Kind

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

    from .engine.state import TestState
    from .engine.steering import Steering
    from .llm.provider import Provider


class Steps:
    """What a test and a group block write steps with: ``step`` (an action, performed on the
    live page) and ``expect`` (a check, asserted on it); both build the step and ``perform``
    it."""

    def step(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> StepRun:
        """An action, performed on the live page."""
        return self.perform(StepSpec(Kind.ACTION, sentence, data, tries, delay))

    def expect(
        self, sentence: str, tries: int = 1, delay: float | None = None, *, data: str = ""
    ) -> StepRun:
        """A check, asserted on the live page."""
        return self.perform(StepSpec(Kind.CHECK, sentence, data, tries, delay))

    def perform(self, spec: StepSpec) -> StepRun:
        """A step as written (what ``step`` and ``expect`` build)."""
        raise NotImplementedError


class PrettyPlay(Steps):
    """One test. ``name`` is its cache namespace; without a ``page`` it owns a browser.

    ``config`` is the run's settings (a ``PrettyConfig``); a test of a shared ``runtime`` may
    instead be given its own ``TestConfig``. A ``browser`` handed in (pytest-playwright's, say)
    serves the test instead: it gets a fresh context there, and the browser stays open. A
    ``playwright`` handed in launches the test's configured browser (its device too), which
    closes with the test while the Playwright keeps running. ``steering`` replaces the terminal
    dialog behind the steering gate: any object with ``steer(stuck) -> bool`` (see
    ``engine/steering.py``); ``provider`` answers the LLM requests instead of the openai client
    (see ``llm/provider.py``).
    """

    def __init__(
        self,
        name: str,
        config: PrettyConfig | TestConfig | None = None,
        page: Page | None = None,
        *,
        runtime: Runtime | None = None,
        browser: Browser | None = None,
        playwright: Playwright | None = None,
        steering: Steering | None = None,
        provider: Provider | None = None,
    ) -> None:
        if not name.strip():
            raise ValueError("a test needs a name: it is the cache namespace")
        if runtime is None and config is not None and not isinstance(config, PrettyConfig):
            raise TypeError("a test that owns its runtime needs a PrettyConfig")
        if runtime is not None and (browser is not None or playwright is not None):
            raise TypeError("a test of a shared runtime uses that runtime's browser")
        if runtime is not None and (steering is not None or provider is not None):
            raise TypeError("a test of a shared runtime uses that runtime's steering and provider")
        self.name = name
        self._owns_runtime = runtime is None
        self.runtime = runtime or Runtime(
            config if isinstance(config, PrettyConfig) else None,
            browser=browser,
            playwright=playwright,
            steering=steering,
            provider=provider,
            report_name=f"report-{folder_name(name)}.html",  # a test on its own has its own
        )
        if isinstance(config, PrettyConfig):
            config = config.for_test()
        self.config: TestConfig = config or self.runtime.config.for_test()
        self._page = page
        self._state: TestState | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def state(self) -> TestState:
        """The test's state; its browser context and page open on first use."""
        if self._state is None:
            self._state = self.runtime.open_test(self.name, self.config, self._page)
        return self._state

    @property
    def page(self) -> Page:
        return self.state.page

    @property
    def opened(self) -> bool:
        """Whether the test's context and page are open (they open on first use)."""
        return self._state is not None

    def used_elsewhere(self) -> None:
        """Something outside prettyplay (a user's own step) used the page: a clean page for a
        later attempt can no longer be rebuilt from the steps' code."""
        if self._state is not None:  # a test that never opened has no page to speak of
            self.runtime.used_elsewhere(self._state)

    def close(self, failed: bool = False) -> None:
        """Finish the test; ``failed``: something outside prettyplay (a user's own step)
        failed it."""
        if self._state is not None:
            self.runtime.finish_test(self._state, failed_elsewhere=failed)
            self._state = None
        if self._owns_runtime:
            self.runtime.close()

    def __enter__(self) -> PrettyPlay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- steps ---------------------------------------------------------------------------------

    def perform(self, spec: StepSpec) -> StepRun:
        """A step as written (what ``step`` and ``expect`` build)."""
        try:
            return self.runtime.engine.perform(self.state, spec)
        except PrettyPlayError as failure:
            full = self.runtime.config.full_tracebacks
            raise shown_error(failure, full) from failure.__cause__  # the cause it was just given

    def group(self, prompt: str, speed: int | None = None, delay: float | None = None) -> Group:
        """A block of steps with a shared goal (``prompt``) that heals as a unit."""
        return Group(self, prompt, speed, delay)


class Group(Steps):
    """A group block. ``speed`` paces the steps after the first; ``delay`` precedes the first."""

    def __init__(self, test: PrettyPlay, prompt: str, speed: int | None, delay: float | None):
        self.test = test
        self._block = GroupBlock(test.runtime.engine, prompt, speed, delay)

    @property
    def prompt(self) -> str:
        return self._block.prompt

    @property
    def traces(self) -> list[GroupStepRecord]:
        """One verbatim record per executed group step, in execution order."""
        return self._block.traces

    def start(self) -> Group:
        """Open the block (what ``with`` does on entry)."""
        self._block.start()
        return self

    def finish(self, failed: bool) -> None:
        """Close the block (what ``with`` does on exit)."""
        self._block.finish(failed)

    def __enter__(self) -> Group:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish(exc is not None)

    def perform(self, spec: StepSpec) -> StepRun:
        """A step of the group as written."""
        try:
            return self._block.perform(self.test.state, spec)
        except PrettyPlayError as failure:
            full = self.test.runtime.config.full_tracebacks
            raise shown_error(failure, full) from failure.__cause__
