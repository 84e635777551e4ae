"""The state of one test while it runs, written through its own methods only, and only by the
engine's step cycle (``engine/engine.py`` and ``engine/cycle.py``: the steps, what they met,
the secrets they named) and the runtime (``runtime.py``: opening, renewing and closing the
test, and what happened to it outside prettyplay's steps). Everyone else reads.

``TestState`` owns a test's page and instruments (its tabs, its navigation guard), the scenario
so far, the occurrence counts of the cache address, what the last execution met on the page,
and whether a step named a secret. Whoever must know of a secret (the artifacts stop a trace)
listens with ``on_secret``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from ..address import Occurrences
from ..cache import CacheKey
from ..safety.policy import Reach
from ..safety.scenario_memory import ScenarioMemory
from ..vocabulary import StepStatus

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from ..browser.guard import NavigationGuard
    from ..browser.settle import Settler
    from ..browser.tabs import Tabs
    from ..config import TestConfig
    from .step import StepRun, StepSpec


@dataclass
class TestState:
    """One test around its steps."""

    __test__ = False  # a product class, not a pytest test class

    name: str
    config: TestConfig
    tabs: Tabs  # its pages; the current one is the page of its next step
    owned_context: BrowserContext | None = None
    guard: NavigationGuard | None = None
    # a fresh context and page in place of its own, from whoever opened it (None: a page was
    # handed in, and only its owner can open another)
    renew: Callable[[TestState], None] | None = None
    files_dir: Path | None = None  # where the files it uploads come from
    downloads: Path | None = None  # where its downloads are saved (report_dir)
    started: float = field(default_factory=time.monotonic)
    duration: float = 0.0
    scenario: list[StepRun] = field(default_factory=list)
    # what its steps remembered for later ones (``remember``/``recall``); never cached
    memory: ScenarioMemory = field(default_factory=ScenarioMemory)
    _notes: tuple[str, ...] = ()
    _reach: Reach = Reach.READS
    _failed_elsewhere: bool = False
    _touched_elsewhere: bool = False
    _uses_secrets: bool = False
    _secret_listeners: list[Callable[[], None]] = field(default_factory=list)
    _occurrences: Occurrences = field(default_factory=Occurrences)

    @property
    def page(self) -> Page:
        return self.tabs.page

    @property
    def settler(self) -> Settler:
        return self.tabs.current.settler

    # -- the scenario ----------------------------------------------------------------------------

    def key_for(self, spec: StepSpec) -> CacheKey:
        """The cache address: identical earlier steps of this test count as occurrences."""
        occurrence = self._occurrences.count(spec.identity)
        return CacheKey(self.name, spec.kind, spec.sentence, spec.data, occurrence, spec.outline)

    def add_step(self, run: StepRun) -> None:
        """A step that ran joins the scenario, whatever its outcome."""
        self.scenario.append(run)

    @property
    def failed(self) -> bool:
        return self._failed_elsewhere or any(e.outcome is StepStatus.FAILED for e in self.scenario)

    def mark_failed(self) -> None:
        """Something outside prettyplay (a user's own step) failed this test."""
        self._failed_elsewhere = True

    # -- a clean page ---------------------------------------------------------------------------

    def touched_elsewhere(self) -> None:
        """Something outside prettyplay used the page (a user's own step or hook): the page of
        an earlier moment can no longer be rebuilt from the steps' code alone, and what it did
        may still be on its way."""
        self._touched_elsewhere = True
        self._reach = Reach.ACTS

    @property
    def renewable(self) -> bool:
        """Whether a fresh context with the earlier steps replayed is the page as it was."""
        return self.renew is not None and not self._touched_elsewhere

    def replace_context(
        self, context: BrowserContext, tabs: Tabs, guard: NavigationGuard | None
    ) -> None:
        """Take ``context`` (and its tabs and guard) in place of the test's own, closing that."""
        old, self.owned_context = self.owned_context, context
        self._reach = Reach.READS  # nothing has run on the new context yet
        if self.guard is not None:
            self.guard.uninstall()
        self.tabs, self.guard = tabs, guard
        if old is not None:
            with suppress(PlaywrightError):  # a context the browser lost has nothing to close
                old.close()

    # -- what the page met -----------------------------------------------------------------------

    @property
    def notes(self) -> tuple[str, ...]:
        """What the last execution met on the page: dialogs nobody handled."""
        return self._notes

    @property
    def reach(self) -> Reach:
        """How far what ran on the page last (the last execution, or a user's own step or hook
        since) may still be on its way: a navigation or a window it set off."""
        return self._reach

    def met(self, notes: tuple[str, ...], reach: Reach) -> None:
        """After an execution: what its pages noted is this test's last notes; ``reach``: how
        far what its code did may still be on its way."""
        self._notes = notes
        self._reach = reach

    # -- secrets ---------------------------------------------------------------------------------

    @property
    def uses_secrets(self) -> bool:
        """Whether a step named a secret: then pictures of the page are kept only when asked."""
        return self._uses_secrets

    def on_secret(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when a step first names a secret."""
        self._secret_listeners.append(listener)

    def uses_secret(self) -> None:
        """A step names a secret."""
        if self._uses_secrets:
            return
        self._uses_secrets = True
        for listener in self._secret_listeners:
            listener()

    # -- the end ---------------------------------------------------------------------------------

    def conclude(self) -> None:
        """Take the test's duration and close the context it opened (a page handed in stays
        open)."""
        self.duration = time.monotonic() - self.started
        if self.guard is not None:
            self.guard.uninstall()
        context, self.owned_context = self.owned_context, None
        if context is None:
            return
        try:
            context.close()
        except PlaywrightError:
            browser = context.browser
            if browser is not None and browser.is_connected():
                raise  # a browser that is gone took its contexts with it; anything else is real
