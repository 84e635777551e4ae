"""URLs and origins read the way the browser reads them.

Every origin check of prettyplay parses URLs here, with a WHATWG URL parser (``ada-url``, the
standard browsers follow), never with ``urllib``: the two disagree on URLs a browser accepts,
and where they disagree a check could judge one origin while the browser goes to another.
``http://localhost:8001\\@127.0.0.1:8000/`` is ``127.0.0.1:8000`` to ``urllib`` and
``localhost:8001`` to the browser; so are percent-encoded hosts (``127.0.0.%31``), numeric ones
(``2130706433``), full-width letters, and ``http:host`` without slashes. A URL given to the
browser after a check is the parser's serialisation of it, which the browser reads as it was
judged.

Contract: ``origin_of`` gives ``scheme://host[:port]`` (lower case, no default port) for a web
URL and ``"null"`` for anything that has no such origin or does not parse; ``"null"`` equals no
allowed origin.
"""

from __future__ import annotations

from ada_url import URL, join_url

WEB_SCHEMES = ("http:", "https:")
OPAQUE = "null"  # what the standard calls the origin of a URL that has no host to compare


def parsed(url: str, base: str | None = None) -> URL | None:
    """``url`` (resolved against ``base``) as the browser parses it; None when it cannot."""
    try:
        return URL(join_url(base, url) if base is not None else url)
    except (ValueError, TypeError):
        return None


def origin_of(url: str) -> str:
    """The origin of ``url`` as the browser has it: ``scheme://host[:port]``, or ``"null"``."""
    found = parsed(url)
    if found is None or found.protocol not in (*WEB_SCHEMES, "ws:", "wss:"):
        return OPAQUE
    return str(found.origin)


def is_web(url: str) -> bool:
    """Whether the browser reads ``url`` as an http or https URL."""
    found = parsed(url)
    return found is not None and found.protocol in WEB_SCHEMES


def web_url(url: str, base: str | None = None) -> str | None:
    """``url`` resolved against ``base`` as the browser resolves it, serialised the way the
    browser reads it back; None when it is no http or https URL."""
    found = parsed(url, base)
    if found is None or found.protocol not in WEB_SCHEMES:
        return None
    return str(found.href)
