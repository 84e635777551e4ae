"""What one run shares across its tests: the browser, the cache, the LLM client and the hooks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .browser.guard import NavigationGuard
from .browser.session import BrowserSession
from .cache import CacheStore
from .engine.executor import StepExecutor, TestRun
from .engine.settle import Settler
from .events import Events, log
from .llm.client import LLMClient
from .llm.prompts import Prompts
from .safety.policy import check_code
from .safety.secrets import RedactingFilter, Secrets

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from .config import PrettyConfig

DEFAULT_CACHE_DIR = Path("features") / ".prettyplay"


class Runtime:
    """The run's shared parts; the browser starts only when a test needs a page."""

    def __init__(self, config: PrettyConfig, default_cache_dir: Path = DEFAULT_CACHE_DIR) -> None:
        self.config = config
        self.events = Events(config.hooks)
        self.cache = CacheStore(Path(config.cache_dir or default_cache_dir), validate=check_code)
        self.llm = LLMClient(config)
        self.secrets = Secrets()
        self._redacting = RedactingFilter(self.secrets)
        log.addFilter(self._redacting)
        prompts = Prompts(config.templates_dir)
        self.executor = StepExecutor(self.cache, self.llm, prompts, self.events, self.secrets)
        self._session: BrowserSession | None = None

    @property
    def session(self) -> BrowserSession:
        if self._session is None:
            self._session = BrowserSession(self.config)
        return self._session

    def open_test(self, name: str, config: PrettyConfig, page: Page | None = None) -> TestRun:
        """A test on the given page, or on a fresh context and page of the run's browser."""
        context: BrowserContext | None = None
        if page is None:
            context, page = self.session.new_page(config)
        Settler.install(page.context)
        # navigation bounds from allowed_origins (default: the origin of base_url)
        guard = NavigationGuard(config.origins) if config.origins else None
        if guard is not None:
            guard.install(page.context)
        return TestRun(name, config, page, Settler(page), owned_context=context, guard=guard)

    def close(self) -> None:
        log.removeFilter(self._redacting)
        if self._session is not None:
            self._session.close()
            self._session = None
