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

import logging
import re
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin

from ..config import origin_of

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, CDPSession, Page, Route

log = logging.getLogger("prettyplay")

REDIRECTS = range(300, 400)
BLANK = "about:blank"
STATIC_ASSETS = ("css", "js", "mjs", "map", "png", "jpg", "jpeg", "gif", "svg", "webp", "avif",
                 "ico", "woff", "woff2", "ttf", "otf")  # fmt: skip


class NavigationGuard:
    """Keeps one context's pages within ``origins``; records what it refused."""

    def __init__(self, origins: Iterable[str]) -> None:
        self.origins = frozenset(origin_of(origin) for origin in origins)
        self.blocked: list[str] = []
        self._watch: DocumentWatch | None = None
        self._context_id: str | None = None

    def allows(self, url: str) -> bool:
        if url.startswith("about:") or not url:
            return True
        return origin_of(url) in self.origins

    def install(self, context: BrowserContext, page: Page) -> None:
        """Bound every page of ``context`` (``page`` is one of them, to learn its identity):
        by the browser's own interception where it has one, else by Playwright's routing."""
        browser = context.browser
        if browser is not None and browser.browser_type.name == "chromium":
            self.watch(browser, context, page)
        else:
            self.route(context)

    def watch(self, browser: Browser, context: BrowserContext, page: Page) -> None:
        """Bound the context through the browser's interception of document requests."""
        self._context_id = _context_id(context, page)
        self._watch = DocumentWatch.of(browser)
        self._watch.guards[self._context_id] = self

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
        except Exception:  # unreachable server: let the browser report it as usual
            route.continue_()
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
        return self._watch.pages_of(self._context_id)

    def take(self) -> list[str]:
        """The URLs refused since the last call (a window opened since has been judged)."""
        if self._watch is not None and self._context_id is not None:
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


def _context_id(context: BrowserContext, page: Page) -> str:
    session = context.new_cdp_session(page)
    try:
        return str(session.send("Target.getTargetInfo")["targetInfo"]["browserContextId"])
    finally:
        session.detach()


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
        self._pages: dict[str, tuple[str, str]] = {}  # page target -> (context, URL)
        self._opening: set[str] = set()  # new windows whose first document is not judged yet
        self._watching = False  # the targets that exist when the watch starts are no new windows
        self._session: CDPSession = browser.new_browser_cdp_session()
        self._session.on("Target.targetCreated", self._target)
        self._session.on("Target.targetInfoChanged", self._target)
        self._session.on("Target.targetDestroyed", self._gone)
        self._session.on("Fetch.requestPaused", self._paused)
        self._session.send("Target.setDiscoverTargets", {"discover": True})
        self._watching = True
        patterns = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]
        self._session.send("Fetch.enable", {"patterns": patterns})

    @classmethod
    def of(cls, browser: Browser) -> DocumentWatch:
        if browser not in cls._watches:
            cls._watches[browser] = cls(browser)
        return cls._watches[browser]

    def _target(self, event: dict[str, Any]) -> None:
        info = event["targetInfo"]
        if info["type"] != "page":
            return
        target, url = info["targetId"], info.get("url", "")
        new = target not in self._pages
        self._pages[target] = (str(info.get("browserContextId", "")), url)
        if new and self._watching and url != BLANK:
            self._opening.add(target)  # a window on its way to a document
        elif url == BLANK:
            self._opening.discard(target)  # a blank window asks for no document

    def _gone(self, event: dict[str, Any]) -> None:
        self._pages.pop(event["targetId"], None)
        self._opening.discard(event["targetId"])

    def _paused(self, event: dict[str, Any]) -> None:
        request_id, url, frame = event["requestId"], event["request"]["url"], event["frameId"]
        guard = self._refusing(frame, url)
        self._opening.discard(frame)
        try:
            if guard is None:
                self._session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            new_window = self._pages.get(frame, ("", "x"))[1] == ""
            self._session.send("Fetch.fulfillRequest", {"requestId": request_id,
                                                        "responseCode": 204})  # fmt: skip
            if new_window:  # a window opened to go there has nothing else to show
                self._session.send("Target.closeTarget", {"targetId": frame})
        except Exception as exc:  # a closed page or a gone browser: nothing left to guard
            log.debug("document request %s not answered: %s", url, exc, extra={"event": "guard"})

    def _refusing(self, frame: str, url: str) -> NavigationGuard | None:
        """The guard that refuses ``url`` as the document of ``frame`` (recording it), or None
        when the request may go: it stays in bounds, or ``frame`` is a frame inside a page."""
        if frame not in self._pages:
            return None
        guard = self.guards.get(self._pages[frame][0])
        if guard is None or guard.allows(url):
            return None
        guard.refuse(url)
        return guard

    def pages_of(self, context_id: str) -> int:
        """How many pages the browser reports for the context (refused windows are closed)."""
        return sum(1 for context, _ in self._pages.values() if context == context_id)

    def settle_windows(self, context_id: str, timeout_s: float = 2.0) -> None:
        """Wait until every new window of the context has had its first document judged."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(
            self._pages.get(target, ("", ""))[0] == context_id for target in self._opening
        ):
            self._session.send("Target.getTargets")  # one round trip: its events are handled
