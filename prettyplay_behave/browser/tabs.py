"""The pages of one test: its tabs, which one is current, and the events they met.

A page opened during a step (a popup, ``target=_blank``, ``window.open``) joins the test and,
once the step ends, becomes the current page, as a browser focuses a new tab: the ``page`` of
the next step and of later requests. A step switches back with ``page.switch_to_tab(index)``.

Page events of the kinds step code may answer (``page_events.py``: dialogs, ``alert``,
``confirm``, ``prompt``, ``beforeunload``) go to the handlers step code registered with
``page.on("dialog", ...)`` or ``page.once(...)``; one that no handler answers gets its kind's
default answer (a dialog is dismissed, as Playwright does by default) and is noted, so the
step's outcome and the next request say what happened and what became of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from playwright.sync_api import Error as PlaywrightError

from ..page_events import PAGE_EVENTS, PageEvent
from .guard import BLANK, BLANK_GRACE_S
from .settle import Settler

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

Handler = Callable[[Any], object]
# The status the page's own document was answered with (Navigation Timing); 0 when unknown.
_DOCUMENT_STATUS = "() => performance.getEntriesByType('navigation')[0]?.responseStatus ?? 0"
BLANK_URLS = (BLANK, "")


@dataclass
class _Listener:
    event: str
    handler: Handler
    once: bool


@dataclass
class Tab:
    page: Page
    settler: Settler
    listeners: list[_Listener] = field(default_factory=list)


class Tabs:
    """The pages of one test's context, in the order they opened."""

    def __init__(self, first: Page, fresh: bool = False) -> None:
        self._tabs: list[Tab] = []
        self._current = 0
        self._opened_since = 0  # pages opened since the last ``follow``
        self.notes: list[str] = []  # events nobody answered, since the last ``take_notes``
        self._add(first, fresh)
        first.context.on("page", self._opened)

    # -- pages ---------------------------------------------------------------------------------

    def _add(self, page: Page, fresh: bool = True) -> None:
        tab = Tab(page, Settler(page, fresh=fresh))
        self._tabs.append(tab)
        for kind in PAGE_EVENTS.values():  # event names from the table, not typed literals
            cast(Any, page).on(kind.name, partial(self._event, tab, kind))

    def _opened(self, page: Page) -> None:
        if any(tab.page is page for tab in self._tabs):
            return
        self._add(page)
        self._opened_since += 1

    @property
    def opened(self) -> list[Page]:
        """Every page of the test, closed ones too, in the order they opened."""
        return [tab.page for tab in self._tabs]

    def _open(self) -> list[Tab]:
        return [tab for tab in self._tabs if not tab.page.is_closed()]

    @property
    def open_pages(self) -> list[Page]:
        """The test's pages still open, in the order they opened."""
        return [tab.page for tab in self._open()]

    @property
    def current(self) -> Tab:
        tab = self._tabs[self._current]
        if tab.page.is_closed():  # a closed tab gives the focus back to the last open one
            still = self._open()
            if still:
                self._current = self._tabs.index(still[-1])
                tab = still[-1]
        return tab

    @property
    def page(self) -> Page:
        return self.current.page

    @property
    def error_status(self) -> int | None:
        """The HTTP error status (400 or more) the current page's document was answered with,
        if it was: the page shows an error (a 404, a 501), whatever a step looks for on it."""
        # Read from the page when asked (a red step), so a green step pays nothing for it.
        try:
            status = self.page.evaluate(_DOCUMENT_STATUS)
        except PlaywrightError:  # closed, crashed or navigating: nothing to tell
            return None
        return status if isinstance(status, int) and status >= 400 else None

    def follow(
        self,
        expected: Callable[[], int | None] = lambda: None,
        timeout_s: float = 2.0,
        blank_s: float = BLANK_GRACE_S,
    ) -> None:
        """A page opened since (during a step) becomes the current page. ``expected`` tells how
        many pages the browser has for the context: a page Playwright has not announced yet, or
        not yet reported closed (a refused window), is waited for; so is, for up to ``blank_s``,
        a new page still on about:blank, which has yet to ask for its document (and may be
        refused it)."""
        started = time.monotonic()
        while still := self._open():
            count = expected()
            elapsed = time.monotonic() - started
            unsettled = count is not None and len(still) != count
            blank = self._opened_since and still[-1].page.url in BLANK_URLS and elapsed < blank_s
            if elapsed > timeout_s or not (unsettled or blank):
                break
            try:
                still[0].page.wait_for_timeout(10)  # lets Playwright announce the change
            except PlaywrightError:  # the page or the browser is gone: nothing to follow
                break
        if self._opened_since:
            self._opened_since = 0
            still = self._open()
            if still:
                self._current = self._tabs.index(still[-1])

    def ensure_open(self) -> None:
        """A test whose pages were all closed (an execution that had to be stopped) goes on in
        a fresh page of its context."""
        if self._open():
            return
        page = self._tabs[0].page.context.new_page()
        if all(tab.page is not page for tab in self._tabs):  # its "page" event may come later
            self._opened(page)
        self.follow()

    def switch_to(self, index: int) -> Page:
        """Make the ``index``-th open tab (from 0, in the order they opened) current."""
        still = self._open()
        if not 0 <= index < len(still):
            raise IndexError(f"there is no tab {index}: the test has {len(still)} open tabs")
        self._current = self._tabs.index(still[index])
        still[index].page.bring_to_front()
        return still[index].page

    def listing(self) -> list[tuple[int, str, str]]:
        """(index, title, URL) of each open tab, when there is more than one."""
        still = self._open()
        if len(still) < 2:
            return []
        return [(number, _title(tab.page), tab.page.url) for number, tab in enumerate(still)]

    def contexts(self) -> set[BrowserContext]:
        return {tab.page.context for tab in self._tabs}

    # -- page events ---------------------------------------------------------------------------

    def listen(self, page: Page, event: str, handler: Handler, once: bool) -> None:
        """Step code's ``page.on(event, handler)`` (or ``once``)."""
        tab = next(tab for tab in self._tabs if tab.page is page)
        tab.listeners.append(_Listener(event, handler, once))

    def _event(self, tab: Tab, kind: PageEvent, event: Any) -> None:
        listeners = [listener for listener in tab.listeners if listener.event == kind.name]
        tab.listeners[:] = [
            listener
            for listener in tab.listeners
            if not (listener.once and listener.event == kind.name)
        ]
        answered = _Answered(kind, event)
        for listener in listeners:
            listener.handler(answered)  # the policy lets a handler only call the answers
        if not answered.done:
            getattr(event, kind.default)()
            self.notes.append(
                f"{kind.describe(event)}; no handler took it, so it was {kind.done} (handle it "
                f"with {kind.example} before the action that opens it)"
            )

    def take_notes(self) -> tuple[str, ...]:
        notes, self.notes = tuple(self.notes), []
        return notes


class _Answered:
    """What a handler of step code gets: the event, offering its kind's answers only, which
    remembers whether it was answered."""

    __slots__ = ("_event", "_kind", "done")

    def __init__(self, kind: PageEvent, event: Any) -> None:
        self._kind, self._event = kind, event
        self.done = False

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name not in self._kind.answers:
            raise AttributeError(f"a {self._kind.name} handler may only call its answers")
        answer = getattr(self._event, name)
        limit = self._kind.answers[name]

        def answering(*args: Any) -> None:
            self.done = True
            answer(*args[:limit])

        return answering


def _title(page: Page) -> str:
    try:
        return page.title()
    except Exception:  # a page on its way somewhere
        return ""
