"""Origins read the way the browser reads a URL (WHATWG), where Python's urllib reads another."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from prettyplay_behave.config import origin_of as config_origin_of
from prettyplay_behave.safety.origins import is_web, origin_of, web_url

# URL -> the origin the browser goes to; urllib reads each as another host
CONFUSING = {
    "http://127.0.0.2:8001\\@127.0.0.1:8000/": "http://127.0.0.2:8001",
    "http://127.0.0.%32:8001/": "http://127.0.0.2:8001",
    "http://2130706434:8001/": "http://127.0.0.2:8001",
    "http://ｐａｒｔｎｅｒ.example/": "http://partner.example",
}


@pytest.mark.parametrize("url", list(CONFUSING))
def test_a_url_urllib_misreads_has_the_origin_the_browser_goes_to(url: str) -> None:
    assert origin_of(url) == CONFUSING[url]
    assert urlsplit(url).hostname != urlsplit(CONFUSING[url]).hostname  # what it fixes


def test_origins_compare_as_browsers_compare_them() -> None:
    assert origin_of("HTTP://LOCALHOST:80/x") == "http://localhost"
    assert origin_of("https://a.example:443") == "https://a.example"
    assert origin_of("http://[::1]:8080/") == "http://[::1]:8080"
    assert origin_of("http:127.0.0.2:9/") == "http://127.0.0.2:9"  # no slashes: still a host
    assert config_origin_of is origin_of  # one reading for every check


@pytest.mark.parametrize("url", ["about:blank", "data:text/html,x", "javascript:1", "", "::"])
def test_a_url_without_a_host_has_no_origin_any_bound_allows(url: str) -> None:
    assert origin_of(url) == "null"
    assert not is_web(url)


def test_a_url_is_resolved_and_written_back_as_the_browser_reads_it() -> None:
    base = "http://127.0.0.1:8000/cart/"
    assert web_url("../login?x=1", base) == "http://127.0.0.1:8000/login?x=1"
    assert web_url("http://127.0.0.2:8001\\@127.0.0.1:8000/", base) == (
        "http://127.0.0.2:8001/@127.0.0.1:8000/"
    )
    assert web_url("javascript:alert(1)", base) is None
