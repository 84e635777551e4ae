"""The pages of one test: its tabs, which one is current, and the dialogs they opened.

A page opened during a step (a popup, ``target=_blank``, ``window.open``) joins the test and,
once the step ends, becomes the current page, as a browser focuses a new tab: the ``page`` of
the next step and of later requests. A step switches back with ``page.switch_to_tab(index)``.

Dialogs (``alert``, ``confirm``, ``prompt``, ``beforeunload``) go to the handlers step code
registered with ``page.on("dialog", ...)`` or ``page.once(...)``; one that no handler takes is
dismissed, as Playwright does by default, and noted, so the step's outcome and the next request
say which dialog opened and what became of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from playwright.sync_api import Error as PlaywrightError

from .guard import BLANK, BLANK_GRACE_S
from .settle import Settler

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Dialog, Page

DialogHandler = Callable[[Any], object]
BLANK_URLS = (BLANK, "")


@dataclass
class _Listener:
    handler: DialogHandler
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
        self.notes: list[str] = []  # dialogs nobody handled, since the last ``take_notes``
        self._add(first, fresh)
        first.context.on("page", self._opened)

    # -- pages ---------------------------------------------------------------------------------

    def _add(self, page: Page, fresh: bool = True) -> None:
        self._tabs.append(Tab(page, Settler(page, fresh=fresh)))
        page.on("dialog", self._dialog)

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

    # -- dialogs -------------------------------------------------------------------------------

    def listen(self, page: Page, handler: DialogHandler, once: bool) -> None:
        """Step code's ``page.on("dialog", handler)`` (or ``once``)."""
        tab = next(tab for tab in self._tabs if tab.page is page)
        tab.listeners.append(_Listener(handler, once))

    def _dialog(self, dialog: Dialog) -> None:
        tab = next((tab for tab in self._tabs if tab.page is dialog.page), None)
        listeners = list(tab.listeners) if tab else []
        if tab is not None:
            tab.listeners[:] = [listener for listener in tab.listeners if not listener.once]
        answered = _Answered(dialog)
        for listener in listeners:
            listener.handler(answered)  # the policy lets a handler only accept or dismiss it
        if not answered.done:
            dialog.dismiss()
            self.notes.append(
                f"a {dialog.type} dialog opened ({dialog.message!r}); no handler took it, so it "
                'was dismissed (handle it with page.once("dialog", lambda dialog: '
                "dialog.accept()) before the action that opens it)"
            )

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes


class _Answered:
    """What a handler of step code gets: a dialog it can accept or dismiss, which remembers
    whether it was answered."""

    __slots__ = ("_dialog", "done")

    def __init__(self, dialog: Dialog) -> None:
        self._dialog = dialog
        self.done = False

    def accept(self, prompt_text: str | None = None) -> None:
        self.done = True
        if prompt_text is None:
            self._dialog.accept()
        else:
            self._dialog.accept(prompt_text)

    def dismiss(self) -> None:
        self.done = True
        self._dialog.dismiss()


def _title(page: Page) -> str:
    try:
        return page.title()
    except Exception:  # a page on its way somewhere
        return ""
