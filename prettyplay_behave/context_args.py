"""``context_args``: the browser context's own options, in Playwright's names, passed through.

Every key must be an option of Playwright's ``Browser.new_context``; the few that would widen
the bounds of a test (where its requests may go, what is written to disk) or that a setting
already owns are refused with what to use instead. Credentials come from the environment: a
string of the table may name a variable as ``${NAME}``, and a password must (the value is
redacted like a secret); credentials and client certificates are sent to the test's own
origins only. Every other option reaches every origin a page loads from (a user agent, headers,
a locale, a time zone: what any frame's server or script can read), so none may name a variable:
a secret given there would go to them all. Clipboard permissions are refused: with them, the
script of any frame reads what the test copied.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Mapping
from typing import Any

# Refused keys, and what to use instead.
REFUSED: dict[str, str] = {
    "base_url": "set prettyplay.base_url: it also sets where step code may go",
    "proxy": (
        "a proxy would carry the test's requests where allowed_origins cannot follow them; "
        "set the proxy for the whole machine (HTTPS_PROXY) if the app needs one"
    ),
    "storage_state": "set prettyplay.storage_state",
    "accept_downloads": "prettyplay keeps each download itself (report_dir)",
    "record_video_dir": "set prettyplay.video (on or retain-on-failure)",
    "record_video_size": "set prettyplay.video (on or retain-on-failure)",
    "record_video_fps": "set prettyplay.video (on or retain-on-failure)",
    "record_har_path": "a HAR file records every request, typed secrets included",
    "record_har_content": "a HAR file records every request, typed secrets included",
    "record_har_mode": "a HAR file records every request, typed secrets included",
    "record_har_omit_content": "a HAR file records every request, typed secrets included",
    "record_har_url_filter": "a HAR file records every request, typed secrets included",
}
PLACEHOLDER = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
# Options whose entries name the one origin they are sent to.
ORIGIN_BOUND = ("http_credentials", "client_certificates")
# Permissions that give every frame's script the clipboard: what the test copied in the app,
# or what it would paste.
CLIPBOARD_PERMISSIONS = frozenset(
    {"clipboard-read", "clipboard-write", "clipboard-sanitized-write"}
)


@functools.lru_cache(maxsize=1)
def playwright_options() -> frozenset[str]:
    """The keyword options of Playwright's ``Browser.new_context``."""
    from playwright.sync_api import Browser

    parameters = inspect.signature(Browser.new_context).parameters
    return frozenset(name for name in parameters if name != "self")


def problem(args: Any) -> str | None:
    """Why ``args`` cannot be the context's options, or None."""
    if not isinstance(args, Mapping) or not all(isinstance(key, str) for key in args):
        return "expected a JSON object of Playwright's new_context options"
    known = playwright_options()
    for key, value in args.items():
        if key in REFUSED:
            return f"{key} cannot be set in context_args: {REFUSED[key]}"
        if key not in known:
            near = ", ".join(sorted(name for name in known if _near(key, name)))
            hint = f"; did you mean {near}" if near else ""
            return f"{key!r} is not an option of Playwright's new_context{hint}"
        if key == "http_credentials" and isinstance(value, Mapping):
            password = value.get("password")
            if not (isinstance(password, str) and PLACEHOLDER.match(password)):
                return (
                    "http_credentials.password must name an environment variable as ${NAME} "
                    "(a password written in a config file is committed with it)"
                )
        if key not in ORIGIN_BOUND and "${" in json.dumps(value, default=str):
            return (
                f"{key} reaches every origin a page loads from, so it may not carry a "
                "secret (${NAME}); give credentials as http_credentials (sent to the test's "
                "own origins only)"
            )
        if key == "permissions" and isinstance(value, list):
            clipboard = sorted(CLIPBOARD_PERMISSIONS.intersection(map(str, value)))
            if clipboard:
                return (
                    f"permissions {', '.join(clipboard)} cannot be granted: with them the "
                    "script of any frame, of any origin, reads the clipboard the test copies to "
                    "(steps type what they need instead)"
                )
    return None


def _near(key: str, name: str) -> bool:
    import difflib

    return bool(difflib.get_close_matches(key, [name], n=1, cutoff=0.75))
