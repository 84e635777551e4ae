"""Which requests the navigation guard routes through Python."""

from __future__ import annotations

import pytest

from prettyplay_behave.browser.guard import NavigationGuard, routed_urls

APP = "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("url", "routed"),
    [
        (f"{APP}/", True),
        (f"{APP}/login?next=/cart", True),
        (f"{APP}/cart/add", True),
        (f"{APP}/static/app.js", False),
        (f"{APP}/static/style.CSS?v=3", False),
        (f"{APP}/fonts/body.woff2#x", False),
        (f"{APP}/app.js/checkout", True),  # a path that only contains an extension
        ("http://127.0.0.1:80001/static/app.js", True),  # another port is another origin
        ("http://127.0.0.1/static/app.js", True),
        ("https://cdn.example/lib.js", True),  # another origin: its navigations are checked
    ],
)
def test_static_assets_of_the_allowed_origins_are_not_routed(url: str, routed: bool) -> None:
    guard = NavigationGuard([APP])
    assert bool(routed_urls(guard.origins).search(url)) is routed


def test_a_default_port_names_the_same_origin() -> None:
    guard = NavigationGuard(["http://localhost:80", "https://shop.example:443/"])
    pattern = routed_urls(guard.origins)
    assert not pattern.search("http://localhost/app.js")
    assert not pattern.search("https://shop.example/img/logo.png")
    assert pattern.search("https://shop.example/checkout")


def test_the_error_page_of_a_failed_navigation_is_no_origin_outside_the_bounds() -> None:
    """Chromium shows chrome-error://chromewebdata/ where a navigation failed (an app that is
    down): the step's error is the network error, never a bound that was hit."""
    guard = NavigationGuard([APP])
    assert guard.allows("chrome-error://chromewebdata/")
    assert guard.problem([], "chrome-error://chromewebdata/") is None
    assert not guard.allows("chrome://settings/")
    assert guard.problem([], "https://elsewhere.example/") is not None
