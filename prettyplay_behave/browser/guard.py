"""Navigation bounds: no top-level document of a test's pages comes from outside its origins.

On Chromium the bound is held by the browser itself, through one browser-wide DevTools
interception of document requests (``Fetch.enable`` on the browser target). It sees every
document request of every page from its first one, and every hop of a redirect chain as a
request of its own, before anything is sent:

- a page of the test's context (the first page, a popup, ``target=_blank``, a window opened by
  a modifier or middle click or a keyboard shortcut) asking for a document outside the bounds
  gets "204 No Content" instead, so it stays where it was; a new window whose first document
  is refused is closed;
- a frame inside a page loads what it asks for (a payment form, a map): only pages are bound;
- requests of other browser contexts (pages the caller owns) are left alone.

Nothing but document requests reaches Python, and a document within the bounds is continued
as it is (never fetched and buffered here). Every refused URL is recorded, so the step fails
with a message naming it.

Other browsers (Firefox, WebKit) have no such interception: their bound is Playwright's
context routing (``route.fetch`` without redirects, then fulfilled), which checks a redirect's
first hop but not later ones, and a new window's first request only when Playwright sees it;
the URL check after each step takes a page that still got out back. docs/security.md says so.
"""

from __future__ import annotations

import re
import time
import weakref
from collections.abc import Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin

from playwright.sync_api import Error as PlaywrightError

from ..config import origin_of
from ..log_events import LogEvent, record
from ..vocabulary import words

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, CDPSession, Page, Route


REDIRECTS = range(300, 400)
BLANK = "about:blank"
# A window with no opener (a modifier or middle click, ``rel=noopener``) may show about:blank
# before it asks for its document, and a page opened blank shows it for good: such a window is
# waited for this long after it turned blank.
BLANK_GRACE_S = 0.5
STATIC_ASSETS = tuple(
    sorted(words("css js mjs map png jpg jpeg gif svg webp avif ico woff woff2 ttf otf"))
)


class NavigationGuard:
    """Keeps one context's pages within ``origins``; records what it refused."""

    def __init__(self, origins: Iterable[str]) -> None:
        self.origins = frozenset(origin_of(origin) for origin in origins)
        self.blocked: list[str] = []
        self._watch: DocumentWatch | None = None
        self._context_id: str | None = None

    def allows(self, url: str) -> bool:
        # chrome-error: is the page Chromium shows where a navigation failed (an app that is
        # down, net::ERR_CONNECTION_REFUSED): no origin was reached, and the error says why
        if url.startswith(("about:", "chrome-error:")) or not url:
            return True
        return origin_of(url) in self.origins

    def install(self, context: BrowserContext, page: Page, fresh: bool = False) -> None:
        """Bound every page of ``context`` (``page`` is one of them, to learn its identity;
        ``fresh``: a page just opened, which nothing has run on yet): by the browser's own
        interception where it has one, else by Playwright's routing."""
        browser = context.browser
        if browser is not None and browser.browser_type.name == "chromium":
            self.watch(browser, context, page, fresh)
        else:
            self.route(context)

    def watch(self, browser: Browser, context: BrowserContext, page: Page, fresh: bool) -> None:
        """Bound the context through the browser's interception of document requests."""
        self._watch = DocumentWatch.of(browser)
        known = self._watch.only_new_blank_page() if fresh else None
        self._context_id, target = known or _identity(context, page)
        self._watch.guards[self._context_id] = self
        self._watch.targets.judged(target)  # the test's own page is no window on its way

    def route(self, context: BrowserContext) -> None:
        """Bound the context through Playwright's routing (weaker: see the module docstring)."""
        context.route(routed_urls(self.origins), self._route)

    def uninstall(self) -> None:
        if self._watch is not None and self._context_id is not None:
            self._watch.guards.pop(self._context_id, None)
        self._watch = None

    def refuse(self, url: str) -> None:
        self.blocked.append(url)

    # -- Playwright's routing, where the browser has no interception of its own ----------------

    def _route(self, route: Route) -> None:
        request = route.request
        try:
            top_level = request.is_navigation_request() and request.frame.parent_frame is None
        except Exception:  # a popup's frame is not known yet: judge the URL as a page's
            top_level = request.resource_type == "document"
        if not top_level:
            route.continue_()
            return
        if not self.allows(request.url):
            self._block(route, request.url)
            return
        try:
            response = route.fetch(max_redirects=0)
        except Exception as exc:  # its redirect cannot be judged: the request does not go
            record(
                LogEvent.REDIRECT_UNCHECKED,
                "navigation to %s aborted: its redirect could not be checked (%s)",
                request.url,
                exc,
            )
            route.abort("failed")
            return
        location = response.headers.get("location")
        if response.status in REDIRECTS and location:
            target = urljoin(request.url, location)
            if not self.allows(target):
                self._block(route, target)
                return
        route.fulfill(response=response)

    def _block(self, route: Route, url: str) -> None:
        self.refuse(url)
        route.fulfill(status=204)  # "no content": the browser stays on the current page

    # -- after a step ----------------------------------------------------------------------

    def pages(self) -> int | None:
        """How many pages the browser reports for the guarded context; None when unknown."""
        if self._watch is None or self._context_id is None:
            return None
        return self._watch.targets.count(self._context_id)

    def take(self, catch_up: bool = False) -> list[str]:
        """The URLs refused since the last call (a window opened since has been judged);
        ``catch_up`` first handles every refusal the browser has made up to now (one round
        trip), where nothing else has waited on the browser since (a replay run at once)."""
        if self._watch is not None and self._context_id is not None:
            if catch_up:
                self._watch.catch_up()
            self._watch.settle_windows(self._context_id)
        blocked, self.blocked = self.blocked, []
        return blocked

    def restore(self, page: Page, url_before: str) -> str | None:
        """Bring a page that landed outside the bounds back; the URL it is on then, or None
        when it never left."""
        if self.allows(page.url):
            return None
        for back in (page.go_back, lambda: page.goto(url_before)):
            if self.allows(page.url) or not self.allows(url_before):
                break
            try:
                back()
            except Exception:  # the next way back is tried
                continue
        return page.url

    def problem(self, blocked: list[str], page_url: str) -> str | None:
        """The message of a bound that was hit, if any."""
        if not blocked and self.allows(page_url):
            return None
        url = blocked[0] if blocked else page_url
        return (
            f"navigation to {url} was blocked: its origin is outside allowed_origins "
            f"({', '.join(sorted(self.origins))}); add it to prettyplay.allowed_origins if "
            "the test may go there"
        )


def routed_urls(origins: Iterable[str]) -> re.Pattern[str]:
    """Every URL but the static assets of ``origins``; Playwright matches it in the browser's
    driver, so an asset request never reaches Python (the routing fallback only)."""
    hosts = "|".join(re.escape(origin) for origin in sorted(origins))
    assets = "|".join(STATIC_ASSETS)
    return re.compile(rf"^(?!(?:{hosts})/[^?#]*\.(?:{assets})(?:[?#]|$))", re.IGNORECASE)


def _identity(context: BrowserContext, page: Page) -> tuple[str, str]:
    """The browser's ids of ``page``'s context and of ``page`` itself (three round trips)."""
    session = context.new_cdp_session(page)
    try:
        info = session.send("Target.getTargetInfo")["targetInfo"]
        return str(info["browserContextId"]), str(info["targetId"])
    finally:
        session.detach()


class PageTargets:
    """The browser's page targets as its events tell them: the context and URL of each, the new
    windows whose first document is not judged yet, and the refused windows being closed."""

    def __init__(self) -> None:
        self._pages: dict[str, tuple[str, str]] = {}  # target -> (context, URL)
        # new windows whose first document is not judged yet -> when they turned blank (or None)
        self._opening: dict[str, float | None] = {}
        self._closing: set[str] = set()  # refused windows closed, until the browser says so
        self.watching = False  # the targets that exist when the watch starts are no new windows

    def seen(self, info: dict[str, Any]) -> None:
        """A ``Target.targetCreated`` or ``Target.targetInfoChanged`` event's target info."""
        if info["type"] != "page":
            return
        target, url = info["targetId"], info.get("url", "")
        new = target not in self._pages
        self._pages[target] = (str(info.get("browserContextId", "")), url)
        if new and self.watching and url != BLANK:
            self._opening[target] = None  # a window on its way to a document
        elif url == BLANK and target in self._opening:
            if info.get("openerId"):  # a script's blank window asks for no document
                del self._opening[target]
            elif self._opening[target] is None:
                self._opening[target] = time.monotonic()

    def judged(self, target: str) -> bool:
        """The first document of ``target`` was let through or refused, or it needs none (the
        test's own page); whether it was a new window on its way to that document."""
        was_opening = target in self._opening
        self._opening.pop(target, None)
        return was_opening

    def closing(self, target: str) -> None:
        self._closing.add(target)

    def gone(self, target: str) -> None:
        self._pages.pop(target, None)
        self._opening.pop(target, None)
        self._closing.discard(target)

    def context_of(self, target: str) -> str | None:
        return self._pages[target][0] if target in self._pages else None

    def count(self, context: str) -> int:
        """How many pages the context has, refused windows being closed left out."""
        return sum(
            1
            for target, (of, _) in self._pages.items()
            if of == context and target not in self._closing
        )

    def opening(self, context: str) -> bool:
        """Whether a new window of the context may still ask for its first document."""
        now = time.monotonic()
        return any(
            self.context_of(target) == context
            and (blank_since is None or now - blank_since < BLANK_GRACE_S)
            for target, blank_since in self._opening.items()
        )


class DocumentWatch:
    """One browser's interception of document requests, shared by the guards of its contexts.

    It follows the browser's targets from their events (no round trip per request): which
    frame ids are the main frames of pages, in which browser context, and which new windows have
    not yet shown or been refused their first document.
    """

    _watches: ClassVar[weakref.WeakKeyDictionary[Browser, DocumentWatch]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, browser: Browser) -> None:
        self.guards: dict[str, NavigationGuard] = {}  # by browser context id
        self.targets = PageTargets()
        self._session: CDPSession = browser.new_browser_cdp_session()
        self._session.on("Target.targetCreated", self._target)
        self._session.on("Target.targetInfoChanged", self._target)
        self._session.on("Target.targetDestroyed", self._gone)
        self._session.on("Fetch.requestPaused", self._paused)
        self._session.send("Target.setDiscoverTargets", {"discover": True})
        self.targets.watching = True
        patterns = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]
        self._session.send("Fetch.enable", {"patterns": patterns})

    @classmethod
    def of(cls, browser: Browser) -> DocumentWatch:
        if browser not in cls._watches:
            cls._watches[browser] = cls(browser)
        return cls._watches[browser]

    def _target(self, event: dict[str, Any]) -> None:
        self.targets.seen(event["targetInfo"])

    def _gone(self, event: dict[str, Any]) -> None:
        self.targets.gone(event["targetId"])

    def _paused(self, event: dict[str, Any]) -> None:
        request_id, url, frame = event["requestId"], event["request"]["url"], event["frameId"]
        guard = self._refusing(frame, url)
        new_window = self.targets.judged(frame)
        try:
            if guard is None:
                self._session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            self._session.send(
                "Fetch.fulfillRequest", {"requestId": request_id, "responseCode": 204}
            )
            if new_window:  # a window opened to go there has nothing else to show
                self.targets.closing(frame)
                self._session.send("Target.closeTarget", {"targetId": frame})
        except Exception as exc:  # a closed page or a gone browser: nothing left to guard
            record(LogEvent.DOCUMENT_UNANSWERED, "document request %s not answered: %s", url, exc)

    def _refusing(self, frame: str, url: str) -> NavigationGuard | None:
        """The guard that refuses ``url`` as the document of ``frame`` (recording it), or None
        when the request may go: it stays in bounds, or ``frame`` is a frame inside a page."""
        context = self.targets.context_of(frame)
        if context is None:
            return None
        guard = self.guards.get(context)
        if guard is None or guard.allows(url):
            return None
        guard.refuse(url)
        return guard

    def only_new_blank_page(self) -> tuple[str, str] | None:
        """The context and target ids of the one blank page outside every guarded context, in
        one round trip; None when there is not exactly one.

        A page just opened is blank and its context unguarded, so it is always among them: when
        it is the only one, it is the page. Any other (a caller's blank tab, a page another
        process opens in a shared browser) makes it ambiguous, never wrong.
        """
        found = [
            (str(info["browserContextId"]), str(info["targetId"]))
            for info in self._session.send("Target.getTargets")["targetInfos"]
            if info["type"] == "page"
            and info.get("url") == BLANK
            and info.get("browserContextId") not in (None, *self.guards)
        ]
        return found[0] if len(found) == 1 else None

    def catch_up(self) -> None:
        """Handle every event the browser sent before now: its answer comes after them. A
        browser that is gone sent nothing more (the step's own call says what happened)."""
        with suppress(PlaywrightError):
            self._session.send("Browser.getVersion")

    def settle_windows(self, context_id: str, timeout_s: float = 2.0) -> None:
        """Wait until every new window of the context has had its first document judged."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.targets.opening(context_id):
            self._session.send("Target.getTargets")  # one round trip: its events are handled
