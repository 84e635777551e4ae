"""Navigation bounds: every page a test opens must come from an allowed origin.

The guard routes the browser context's requests. A top-level navigation (``goto``, a link
click, a form, a popup, a script setting ``location``) to another origin never leaves the
browser: it is answered "204 No Content", so the page stays where it was. A redirect is fetched
without following it, and a redirect to another origin is answered the same way before its
target is contacted. Frames inside a page may load other origins (a payment form, a map).
Further hops of a redirect chain are not intercepted by the browser's routing; a page that
still lands outside the bounds is caught by the URL check after the step and taken back.
Every blocked URL is recorded so the step fails with a message naming it.

Requests for static assets of an allowed origin (stylesheets, scripts, images, fonts, named by
their file extension) are left out of the routing: they are most of a page's requests, a
navigation to one is rare, and routing each through Python would slow every page load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from ..config import origin_of

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Route

REDIRECTS = range(300, 400)
STATIC_ASSETS = ("css", "js", "mjs", "map", "png", "jpg", "jpeg", "gif", "svg", "webp", "avif",
                 "ico", "woff", "woff2", "ttf", "otf")  # fmt: skip


def routed_urls(origins: Iterable[str]) -> re.Pattern[str]:
    """Every URL but the static assets of ``origins``; Playwright matches it in the browser's
    driver, so an asset request never reaches Python."""
    hosts = "|".join(re.escape(origin) for origin in sorted(origins))
    assets = "|".join(STATIC_ASSETS)
    return re.compile(rf"^(?!(?:{hosts})/[^?#]*\.(?:{assets})(?:[?#]|$))", re.IGNORECASE)


class NavigationGuard:
    """Keeps one context's documents within ``origins``; records what it blocked."""

    def __init__(self, origins: Iterable[str]) -> None:
        self.origins = frozenset(origin_of(origin) for origin in origins)
        self.blocked: list[str] = []

    def allows(self, url: str) -> bool:
        if url.startswith("about:") or not url:
            return True
        return origin_of(url) in self.origins

    def install(self, context: BrowserContext) -> None:
        context.route(routed_urls(self.origins), self._route)

    def _route(self, route: Route) -> None:
        request = route.request
        # top-level documents only: a page may embed other origins (a payment form, a map)
        if not request.is_navigation_request() or request.frame.parent_frame is not None:
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
        self.blocked.append(url)
        route.fulfill(status=204)  # "no content": the browser stays on the current page

    def take(self) -> list[str]:
        """The URLs blocked since the last call."""
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
