"""What one run shares across its tests: the browser, the cache, the LLM client and the hooks."""

from __future__ import annotations

import functools
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from playwright.sync_api import Error as PlaywrightError

from .browser.guard import NavigationGuard
from .browser.session import BrowserSession
from .browser.tabs import Tabs
from .cache import DEFAULT_CACHE_DIR, CacheStore
from .config import PrettyConfig
from .engine.advisor import Advisor
from .engine.engine import Engine
from .engine.execute import late_blocks
from .engine.hooks import Events
from .engine.page_state import Pages
from .engine.state import TestState
from .interactive import TerminalSteering
from .llm.client import LLMClient
from .llm.templates import RequestTemplates
from .log_events import log
from .report.artifacts import Artifacts
from .report.html import REPORT_NAME, write_report
from .report.summary import RunSummary
from .safety.secrets import RedactingFilter, Secrets
from .safety.step_code import check_code

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

    from .config import TestConfig
    from .engine.steering import Steering
    from .llm.provider import Provider

DEFAULT_FILES_DIR = Path("files")


class TestListener(Protocol):
    """What the runtime tells of each test's life: a context of the test opened (its first, or
    a fresh one in place of the last), its context is about to close (``replaced`` by a fresh
    one, or at the test's end), a step failed it, it ended (its context closed), a step named a
    secret. The artifacts are one (``report/artifacts.py``)."""

    def context_opened(self, test: TestState) -> None: ...

    def context_closing(self, test: TestState, replaced: bool) -> None: ...

    def step_failed(self, test: TestState) -> None: ...

    def test_ended(self, test: TestState) -> None: ...

    def secret_named(self, test: TestState) -> None: ...


class Runtime:
    """The run's shared parts; the browser starts only when a test needs a page."""

    def __init__(
        self,
        config: PrettyConfig | None = None,
        default_cache_dir: Path = DEFAULT_CACHE_DIR,
        default_files_dir: Path = DEFAULT_FILES_DIR,
        browser: Browser | None = None,
        playwright: Playwright | None = None,
        steering: Steering | None = None,
        report_name: str | None = None,
        provider: Provider | None = None,
    ) -> None:
        """``steering`` is the part behind the steering gate: the terminal dialog unless
        another is given (any object with ``steer(stuck) -> bool``). ``report_name`` is the
        HTML report's file name in ``report_dir`` (``report.html`` unless given): the newest
        run's, beside the kept runs' own files that start with its stem. ``provider``
        answers the LLM requests: the openai client unless another is given
        (:class:`~.llm.provider.Provider`)."""
        if browser is not None and playwright is not None:
            raise TypeError("hand in a browser or a Playwright, not both")
        self.config = config = config or PrettyConfig()
        self._browser = browser  # the caller's, kept open when the run closes
        self._playwright = playwright  # the caller's, left running when the run closes
        self.events = Events(config.hooks)
        self.cache = CacheStore(Path(config.cache_dir or default_cache_dir), validate=check_code)
        self.default_files_dir = default_files_dir
        self.llm = LLMClient(config, provider=provider)
        self.secrets = Secrets()
        self._redacting = RedactingFilter(self.secrets)
        log.addFilter(self._redacting)
        templates = RequestTemplates(config.templates_dir, config.source_of("templates_dir"))
        advisor = Advisor(self.llm, templates, self.secrets)
        pages = Pages(self.secrets, config.test_id_attribute)
        self.engine = Engine(
            self.cache, advisor, self.events, self.secrets, pages, steering or TerminalSteering()
        )
        self._session: BrowserSession | None = None
        self.tests: list[TestState] = []
        self.started = time.monotonic()
        self.report_dir = Path(config.report_dir) if config.report_dir else None
        self.artifacts = Artifacts(self.report_dir) if self.report_dir else None
        # what follows each test's life: its contexts, its failing steps, its end
        self.listeners: list[TestListener] = [self.artifacts] if self.artifacts else []
        self.report_name = report_name or REPORT_NAME

    @property
    def session(self) -> BrowserSession:
        if self._session is None:
            self._session = BrowserSession(self.config, self._browser, self._playwright)
        return self._session

    def open_test(self, name: str, config: TestConfig, page: Page | None = None) -> TestState:
        """A test on the given page, or on a fresh context and page of the run's browser."""
        context: BrowserContext | None = None
        if page is None:
            context, page = self._new_page(name, config)
        guard, tabs = self._instruments(config, context, page, fresh=context is not None)
        test = TestState(
            name,
            config,
            tabs,
            owned_context=context,
            guard=guard,
            renew=self._renew if context is not None else None,
            files_dir=Path(config.files_dir) if config.files_dir else self.default_files_dir,
            downloads=self.artifacts.downloads(name) if self.artifacts is not None else None,
        )
        self.tests.append(test)
        for listener in self.listeners:
            test.on_secret(functools.partial(listener.secret_named, test))
            listener.context_opened(test)
        return test

    def _new_page(self, name: str, config: TestConfig) -> tuple[BrowserContext, Page]:
        video = self.artifacts.video_dir(name, config) if self.artifacts is not None else None
        # the context's own options, with their ${NAME}s from the environment (and redacted)
        args = self.secrets.filled(
            config.context_args, "context_args", config.source_of("context_args")
        )
        return self.session.new_page(config, video, context_args=args)

    @staticmethod
    def _instruments(
        config: TestConfig, context: BrowserContext | None, page: Page, fresh: bool
    ) -> tuple[NavigationGuard | None, Tabs]:
        """The navigation guard (from allowed_origins, by default the origin of base_url) and
        the tabs of a test's page; a context opened for it is closed when they cannot stand."""
        try:
            guard = NavigationGuard(config.origins) if config.origins else None
            if guard is not None:
                guard.install(page.context, page, fresh=fresh)
            return guard, Tabs(page, fresh=fresh)
        except BaseException:
            if context is not None:  # a test that never opened leaves no context behind
                with suppress(Exception):  # a browser that is gone took it along
                    context.close()
            raise

    def _renew(self, test: TestState) -> None:
        """A fresh context and page for ``test`` in place of its own: the clean page an attempt
        starts from once an earlier attempt changed the page (the engine replays the earlier
        steps on it)."""
        for listener in self.listeners:
            listener.context_closing(test, replaced=True)
        context, page = self._new_page(test.name, test.config)
        guard, tabs = self._instruments(test.config, context, page, fresh=True)
        test.replace_context(context, tabs, guard)
        for listener in self.listeners:
            listener.context_opened(test)

    def used_elsewhere(self, test: TestState) -> None:
        """Something outside prettyplay (a user's own step or hook) used the test's page: a
        clean page for a later attempt can no longer be rebuilt from the steps' code."""
        test.touched_elsewhere()

    def step_failed(self, test: TestState) -> None:
        """A step failed ``test`` as its runner saw it (behave's after_step), the page still
        open: the listeners keep what they keep of a failure."""
        for listener in self.listeners:
            listener.step_failed(test)

    def finish_test(self, test: TestState, failed_elsewhere: bool = False) -> None:
        """Close what the test opened, the listeners told before and after (Playwright writes
        the videos as the context closes). ``failed_elsewhere``: something outside prettyplay (a
        user's own step) failed the test."""
        if failed_elsewhere:
            test.mark_failed()
        try:
            with suppress(PlaywrightError):  # a browser that is gone refuses nothing more
                late_blocks(test, self.secrets, "as the test ended", test.reach)  # none unsaid
            for listener in self.listeners:
                listener.context_closing(test, replaced=False)
        finally:
            test.conclude()
        for listener in self.listeners:
            listener.test_ended(test)

    @property
    def report_path(self) -> Path | None:
        """Where the HTML report is written (with ``report_dir``): the newest run's."""
        return self.report_dir / self.report_name if self.report_dir is not None else None

    def summary(self, obsolete: int | None = None) -> RunSummary:
        wall_time = time.monotonic() - self.started
        return RunSummary.of(
            self.tests,
            self.llm.usage,
            self.engine.keeper.writes,
            obsolete,
            wall_time,
            costs=self.llm.costs,
            prices=self.llm.prices,
        )

    def close(self, summary: RunSummary | None = None) -> None:
        """Write the HTML report (with ``report_dir``, the oldest runs' beyond
        ``report_history`` deleted) and close the browser."""
        try:
            if self.report_dir is not None:
                summary = summary or self.summary()
                assert self.artifacts is not None
                write_report(
                    self.report_dir,
                    self.tests,
                    summary,
                    self.secrets.redact,
                    self.report_name,
                    self.artifacts.of,
                    self.config.report_history,
                )
        finally:
            log.removeFilter(self._redacting)
            if self._session is not None:
                self._session.close()
                self._session = None
