"""The stop of an execution that outlasts its bound, whatever it waits on in the browser.

The proxies give every Playwright call a timeout within ``step_timeout_ms``, but some waits have
none that holds: a JavaScript regular expression backtracking in the page (``expect`` with a
pattern, ``get_by_text(pattern).count()``), a download that is still being saved, a long run of
keystrokes. Python cannot interrupt such a call from another thread, yet while a sync call waits,
its thread runs Playwright's event loop. A timer on that loop therefore fires while the call
waits: at the execution's deadline (plus ``GRACE_S``, so a call that ends on time by its own
timeout is never cut short) it cancels the downloads the step is saving and closes the test's
pages with the bound's message. The waiting call then fails, the execution is red, and the test
gets a fresh page in the same context.

The product's own reads of a page with data from a file (the green evidence: a record's
locators, which may hold a pattern that backtracks) have a bound of their own, ``ReadStop``: past
it, the page's running JavaScript is terminated (Chromium, through a DevTools session), so the
read fails and the page stays as it was; where that cannot be done, or did not end the read
within ``GRACE_S``, the page is closed.

This reaches under Playwright's public API (the loop and the asynchronous objects behind the
sync ones); ``tests/unit/test_stop.py`` pins what it uses, so an upgrade that moves them fails
there, loudly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from ..log_events import LogEvent, record

if TYPE_CHECKING:
    from playwright.sync_api import CDPSession, Download, Page


GRACE_S = 1.0


class ExecutionStop:
    """Stops the execution of one step on the pages ``pages()`` gives, once it is overdue."""

    def __init__(self, pages: Callable[[], list[Page]], reason: str) -> None:
        self._pages = pages
        self.reason = reason
        self.fired = False
        self._handle: asyncio.TimerHandle | None = None
        self._downloads: list[Download] = []
        self._closing: list[Page] = []
        self.unfinished: list[str] = []  # the downloads it cancelled, by suggested name

    @contextmanager
    def armed(self, seconds: float) -> Iterator[ExecutionStop]:
        """While the block runs, stop it ``seconds`` (plus the grace) from now."""
        pages = self._pages()
        loop = _loop_of(pages[0]) if pages else None
        if loop is not None and not loop.is_closed():
            self._handle = loop.call_later(seconds + GRACE_S, self._fire)
        try:
            yield self
        finally:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None

    @contextmanager
    def saving(self, download: Download) -> Iterator[None]:
        """A download the step is saving: cancelled, not only abandoned, if the stop fires."""
        self._downloads.append(download)
        try:
            yield
        finally:
            self._downloads.remove(download)

    def _fire(self) -> None:
        """On Playwright's event loop, while the overdue call waits: cancel, then close."""
        self.fired = True
        for download in list(self._downloads):
            self.unfinished.append(download.suggested_filename)
            _schedule(download, lambda impl: impl.cancel())
        for page in self._pages():
            self._closing.append(page)
            _schedule(page, lambda impl: impl.close(run_before_unload=False, reason=self.reason))
        record(LogEvent.EXECUTION_STOPPED, "%s", self.reason)

    def wait_closed(self, timeout_ms: float = 5_000) -> None:
        """After the stopped call returned: wait until the pages it closes are closed (the
        call may fail at the first close, before the others are done)."""
        from playwright.sync_api import Error as PlaywrightError

        for page in self._closing:
            if not page.is_closed():
                with suppress(PlaywrightError):
                    page.wait_for_event("close", timeout=timeout_ms)


class ReadStop:
    """Ends a read of the product's own on ``page`` (scripts it runs in the page) that outlasts
    its bound: the page's JavaScript is terminated, or the page closed (see the module)."""

    def __init__(self, page: Page, reason: str) -> None:
        self.page = page
        self.reason = reason
        self.fired = False

    @contextmanager
    def armed(self, seconds: float) -> Iterator[ReadStop]:
        """While the block reads the page, stop it ``seconds`` from now."""
        loop = _loop_of(self.page)
        session = _devtools(self.page)
        timers: list[asyncio.TimerHandle] = []
        if loop is not None and not loop.is_closed():
            timers.append(loop.call_later(seconds, self._terminate, session))
            timers.append(loop.call_later(seconds + GRACE_S, self._close))
        try:
            yield self
        finally:
            for timer in timers:
                timer.cancel()
            if session is not None:
                with suppress(Exception):  # the page may be gone
                    session.detach()

    def _terminate(self, session: CDPSession | None) -> None:
        """On Playwright's event loop, while the overdue read waits."""
        self.fired = True
        if session is None:
            self._close()
            return
        # the read ends with an error, and the page runs on: a termination asked while no
        # script runs ends nothing
        _schedule(session, lambda impl: impl.send("Runtime.terminateExecution", None, None))

    def _close(self) -> None:
        self.fired = True
        _schedule(self.page, lambda impl: impl.close(run_before_unload=False, reason=self.reason))


def _devtools(page: Page) -> CDPSession | None:
    """A DevTools session on ``page``; None where the browser offers none (not Chromium)."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        return page.context.new_cdp_session(page)
    except PlaywrightError:
        return None


def _loop_of(target: Any) -> asyncio.AbstractEventLoop | None:
    return getattr(target, "_loop", None)


def _schedule(target: Any, action: Callable[[Any], Any]) -> None:
    """Start ``action`` on the asynchronous object behind a sync Playwright object."""
    impl = getattr(target, "_impl_obj", None)
    if impl is None:
        return
    with suppress(Exception):  # a page already gone needs no stopping
        task = asyncio.ensure_future(action(impl))
        task.add_done_callback(_quiet)


def _quiet(task: asyncio.Future[Any]) -> None:
    """A close or cancel that fails (the target went first) is nothing to report."""
    if not task.cancelled():
        task.exception()
