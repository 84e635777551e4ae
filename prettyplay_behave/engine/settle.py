"""Settle polling: wait until the page is quiet, never longer than the settle window.

A page is settled when its document has loaded, no DOM mutation happened for ``QUIET_MS`` and no
document, fetch or XHR request is pending. The wait polls only while the page is changing; a
quiet page costs one round trip. A closed or crashed page has nothing left to wait for: the wait
ends at once, and the step's own call then reports what happened to the page.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Request

QUIET_MS = 80
POLL_MS = 25
WATCHED_REQUESTS = frozenset({"document", "fetch", "xhr"})

# Records the time of the last DOM mutation; installed into every page of a test's context.
_MUTATION_CLOCK = """
(() => {
  const mark = () => { window.__prettyplayLastMutation = performance.now(); };
  mark();
  const start = () => new MutationObserver(mark).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
"""

# A document loaded before the clock was installed (a page handed in by the caller) gets the
# clock now, and counts as just changed.
_QUIET_FOR = (
    """
() => {
  if (document.readyState !== "complete") return -1;
  if (window.__prettyplayLastMutation === undefined) {"""
    + _MUTATION_CLOCK
    + """    return 0;
  }
  return performance.now() - window.__prettyplayLastMutation;
}
"""
)


class Settler:
    """Tracks one page's pending requests and tells when the page is quiet."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self._pending: set[Request] = set()
        self._crashed = False
        page.on("crash", self._crash)
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    @staticmethod
    def install(context: BrowserContext) -> None:
        context.add_init_script(_MUTATION_CLOCK)

    def _started(self, request: Request) -> None:
        if request.resource_type in WATCHED_REQUESTS:
            self._pending.add(request)

    def _ended(self, request: Request) -> None:
        self._pending.discard(request)

    def _crash(self, page: Page) -> None:
        self._crashed = True

    def _quiet_ms(self) -> float:
        try:
            quiet = self.page.evaluate(_QUIET_FOR)
        except Exception:  # navigating: the execution context is being replaced
            return -1.0
        return float(quiet) if quiet is not None else -1.0

    def settle(self, window_ms: int) -> bool:
        """Wait until the page is quiet; False when the window ran out first.

        A closed or crashed page ends the wait at once (True: there is nothing to wait for).
        """
        deadline = time.monotonic() + window_ms / 1000
        while True:
            if self._crashed or self.page.is_closed():
                return True
            quiet = self._quiet_ms()
            if quiet >= QUIET_MS and not self._pending:
                return True
            remaining_ms = (deadline - time.monotonic()) * 1000
            if remaining_ms <= 0:
                return False
            wait = QUIET_MS - quiet if 0 <= quiet < QUIET_MS and not self._pending else POLL_MS
            try:
                self.page.wait_for_timeout(max(1.0, min(wait, remaining_ms)))
            except PlaywrightError:  # the page crashed or was closed while it was watched
                return True
