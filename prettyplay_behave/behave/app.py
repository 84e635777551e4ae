"""The app first: before the first step of a run, every ``base_url`` the run's scenarios use is
set and answers one request; else the run stops at once with one error naming ``base_url``,
before a browser starts or any LLM request is sent.

A run whose app is down would otherwise send generation and classification requests about an
error page, and end on a complaint about an origin it never meant to visit.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..config import PrettyConfig, TestConfig

# where behave reads its settings from, in the working directory and the home folder
BEHAVE_CONFIG_FILES = ("behave.ini", ".behaverc", "setup.cfg", "tox.ini", "pyproject.toml")
EXAMPLE = "http://localhost:8000"


def check_app(context: Any, config: PrettyConfig) -> None:
    """Raise a ConfigError unless every scenario about to run has a ``base_url`` that answers
    (with a remote browser, ``browser_endpoint``, only that it is set: the app may be reachable
    from the browser's host alone)."""
    tests = list(_tests_to_run(context, config))
    if any(test.base_url is None for test in tests):
        raise config.error("base_url", _not_set(context))
    if config.browser_endpoint is not None:
        return
    for test in {test.base_url: test for test in tests}.values():
        assert test.base_url is not None
        why = unanswered(test.base_url, test.action_timeout_ms / 1000, test.ignore_https_errors)
        if why is not None:
            raise test.error(
                "base_url",
                f"the app does not answer there (one request: {why}); start the app, or set "
                "prettyplay.base_url to where it runs. No step ran and no LLM request was sent",
            )


def _tests_to_run(context: Any, config: PrettyConfig) -> list[TestConfig]:
    """The settings of each scenario this run will run (its tags may set ``base_url``)."""
    runner = getattr(context, "_runner", None)
    found = []
    for feature in getattr(runner, "features", None) or []:
        for scenario in feature.walk_scenarios():
            if scenario.should_run(context.config):
                found.append(config.for_test(scenario.effective_tags, scenario.name))
    return found


def unanswered(url: str, timeout_s: float, ignore_https_errors: bool = False) -> str | None:
    """None when ``url`` answers one GET request with any HTTP status (an error status is an
    answer: the app is up); else the reason, such as ``ConnectionRefusedError: [Errno 111]
    Connection refused``."""
    unverified = ssl._create_unverified_context() if ignore_https_errors else None
    request = urllib.request.Request(url, headers={"User-Agent": "prettyplay"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=unverified):
            return None
    except urllib.error.HTTPError:
        return None
    except urllib.error.URLError as exc:
        reason = exc.reason
        return f"{type(reason).__name__}: {reason}" if isinstance(reason, BaseException) else reason
    except (OSError, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}"


def _not_set(context: Any) -> str:
    """Why no base_url was found, naming every place prettyplay and behave looked."""
    cwd = Path.cwd()
    found = [name for name in BEHAVE_CONFIG_FILES if (cwd / name).is_file()]
    files = (
        f"found {', '.join(found)} there, without prettyplay.base_url in its userdata"
        if found
        else f"found none of {', '.join(BEHAVE_CONFIG_FILES)} there"
    )
    base_dir = getattr(context.config, "base_dir", None)
    features = f" (the features are in {base_dir})" if base_dir else ""
    return (
        "no base_url is set for the app under test. Looked in: -D prettyplay.base_url, the "
        "environment variable PRETTYPLAY_BASE_URL, and the userdata of behave's config file, "
        f"which behave reads from the working directory {cwd} and from {Path.home()}: "
        f"{files}{features}. Start behave in the folder of its config file, or set it, e.g. "
        f"-D prettyplay.base_url={EXAMPLE}"
    )
