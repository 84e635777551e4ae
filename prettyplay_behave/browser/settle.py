"""Settle polling: wait until the page is quiet, never longer than the settle window.

A page is settled when its document has loaded, no DOM mutation happened for ``QUIET_MS`` and no
document, fetch or XHR request is pending. The quiet period is watched inside the page, on the
page's own timer queue: the check that ends it is a timer due after the period, so every page
timer due earlier runs first. A busy machine that delays a page's timers therefore delays the
check too, and a page that keeps changing never looks quiet, however short the period. A quiet
page costs two round trips (the wait, and letting its result go); the wait lasts only while the
page changes, and a wait on pending requests ends as the last of them finishes. A closed or
crashed page has nothing left to wait for: the wait ends at once, and the step's own call then
reports what happened to the page.

The page's own clock holds no wait of the settle. Playwright's fake clock (``page.clock``)
replaces ``setTimeout`` and ``performance`` in the page, and a paused one never fires a timer;
the settle's timers and its measure of time are the real ones, which the fake clock keeps aside
(``__pwClock.builtins``). And whatever the page does, the wait inside it is bounded from outside:
Playwright's own timeout, measured in its driver, ends it at the settle window.
"""

from __future__ import annotations

import time
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, ClassVar

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from ..log_events import LogEvent, record

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Request


QUIET_MS = 20
POLL_MS = 25
WATCHED_REQUESTS = frozenset({"document", "fetch", "xhr"})

# Records the time of the last DOM mutation; in every document of a test's context from its first
# settle on.
_MUTATION_CLOCK = """
(() => {
  const mark = () => {
    const real = globalThis.__pwClock?.builtins ?? globalThis;
    window.__prettyplayLastMutation = real.performance.now();
  };
  mark();
  const start = () => new MutationObserver(mark).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
"""

# Resolves true once the loaded document went QUIET_MS without a mutation; when the budget runs
# out first it stops and never resolves (Playwright's timeout ends the wait). A document loaded
# before the clock was installed (before the test's first settle, or a page handed in by the
# caller) gets the clock now, and counts as just changed. Its timers and time are the real ones
# when Playwright's fake clock replaced the page's.
_QUIET = (
    """
async ([quietMs, budgetMs]) => {
  const real = globalThis.__pwClock?.builtins ?? globalThis;
  const now = () => real.performance.now();
  const started = now();
  const left = () => Math.max(0, budgetMs - (now() - started));
  // Never 0 ms: Chromium queues a 0 ms timer apart from delayed ones, where it can run ahead of
  // a page timer that is already overdue; a delayed timer runs after every timer due before it.
  const turn = (ms) =>
    new Promise((resolve) => real.setTimeout(resolve, Math.max(1, Math.min(ms, left()))));
  for (;;) {
    if (document.readyState !== "complete") {
      await new Promise((resolve) => {
        addEventListener("load", resolve, { once: true });
        real.setTimeout(resolve, left());
      });
    } else {
      if (window.__prettyplayLastMutation === undefined) {"""
    + _MUTATION_CLOCK
    + """      }
      const seen = window.__prettyplayLastMutation;
      await turn(Math.max(0, quietMs - (now() - seen)));
      await turn(1);  // a page timer that fell due while this one was late runs first
      const last = window.__prettyplayLastMutation;
      if (last === seen && now() - last >= quietMs) return true;
    }
    if (left() <= 0) return new Promise(() => {});
  }
}
"""
)


class Settler:
    """Tracks one page's pending requests and tells when the page is quiet."""

    _clocked: ClassVar[weakref.WeakSet[BrowserContext]] = weakref.WeakSet()

    def __init__(self, page: Page, fresh: bool = False) -> None:
        self.page = page
        self._pending: set[Request] = set()
        self._crashed = False
        self._check_failed: Exception | None = None  # the last check of the page, if it failed
        # A page just opened on about:blank has nothing to wait for until a document loads.
        self._blank = fresh
        page.once("domcontentloaded", self._loaded)
        page.on("crash", self._crash)
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    @classmethod
    def install(cls, context: BrowserContext) -> None:
        """The mutation clock in every later document of ``context``, once per context: added at
        its first settle, so the pages of a test whose steps never wait (a green replay) never carry
        it; the document a settle meets without it gets it there."""
        if context not in cls._clocked:
            context.add_init_script(_MUTATION_CLOCK)
            cls._clocked.add(context)

    def _started(self, request: Request) -> None:
        if request.resource_type in WATCHED_REQUESTS:
            self._pending.add(request)

    def _ended(self, request: Request) -> None:
        self._pending.discard(request)

    def _crash(self, page: Page) -> None:
        self._crashed = True

    def _loaded(self, page: Page) -> None:
        self._blank = False

    def _dom_quiet(self, budget_ms: float) -> bool | None:
        """Whether the DOM went quiet within the budget; None while the page navigates. The
        budget is Playwright's timeout, kept outside the page: no page holds the wait longer."""
        try:
            quiet = self.page.wait_for_function(
                _QUIET, arg=[QUIET_MS, budget_ms], timeout=max(1.0, budget_ms)
            )
        except PlaywrightTimeoutError:
            # The page kept changing, or (a loaded machine) the wait ended before the check ran
            # at all: either way it says nothing against a check that failed before.
            return False
        except Exception as exc:  # navigating: the execution context is being replaced
            self._check_failed = exc
            return None
        self._check_failed = None
        quiet.dispose()
        return True

    def settle(self, window_ms: int) -> bool:
        """Wait until the page is quiet; False when the window ran out first.

        A window of 0 waits for nothing, nor does a fresh page nothing has loaded into yet. A
        closed or crashed page ends the wait at once (True: there is nothing to wait for).
        """
        if window_ms <= 0 or (self._blank and self.page.url == "about:blank"):
            return True
        with suppress(PlaywrightError):  # a crashed page's context: the loop below ends the wait
            self.install(self.page.context)
        deadline = time.monotonic() + window_ms / 1000
        while True:
            if self._crashed or self.page.is_closed():
                return True
            remaining_ms = (deadline - time.monotonic()) * 1000
            if remaining_ms <= 0:
                self._window_ran_out(window_ms)
                return False
            quiet = None if self._pending else self._dom_quiet(remaining_ms)
            if quiet is False:  # the budget ran out inside the page
                continue
            if quiet and not self._pending:
                return True
            try:  # a request is pending, or a new document is on its way
                self._wait(max(1.0, min(POLL_MS, remaining_ms)))
            except PlaywrightError:  # the page crashed or was closed while it was watched
                return True

    def _window_ran_out(self, window_ms: int) -> None:
        """A window that ran out after the page's own check failed (and never passed since) is
        said: that is not a page that kept changing."""
        if self._check_failed is not None:
            text = str(self._check_failed).strip().splitlines()
            record(
                LogEvent.SETTLE_CHECK_FAILED,
                "the page never settled within settle_ms=%d: its check kept failing (%s)",
                window_ms,
                text[0] if text else type(self._check_failed).__name__,
            )
            self._check_failed = None

    def _wait(self, ms: float) -> None:
        """Wait ``ms`` at most: while requests are pending, only until the last one finishes
        (a failed one ends the wait when its time is up)."""
        if not self._pending:
            self.page.wait_for_timeout(ms)
            return
        with suppress(PlaywrightTimeoutError):
            self.page.wait_for_event("requestfinished", lambda _: not self._pending, timeout=ms)
