"""Chromium's own sandbox: on wherever it can run; off only as root or where it cannot start,
with a warning that names why."""

from __future__ import annotations

import os

import pytest

from prettyplay_behave.browser import session
from prettyplay_behave.browser.session import BrowserSession
from prettyplay_behave.config import PrettyConfig


def launched(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Launch the run's browser, open a page, close it; the sandbox warnings logged."""
    browser = BrowserSession(PrettyConfig())
    try:
        context, page = browser.new_page(PrettyConfig().for_test())
        page.set_content("<h1>up</h1>")
        assert page.locator("h1").inner_text() == "up"
        context.close()
    finally:
        browser.close()
    return [
        r.getMessage() for r in caplog.records if getattr(r, "event", "") == "browser_sandbox_off"
    ]


@pytest.mark.own_playwright
@pytest.mark.skipif(os.geteuid() != 0, reason="the run is not root here")
def test_as_root_the_sandbox_is_off_and_the_warning_says_so(caplog) -> None:
    assert launched(caplog) == [
        "Chromium runs without its sandbox: the run is root, and Chromium's sandbox does not "
        "start as root; the bounds of step code hold all the same"
    ]


@pytest.mark.own_playwright
def test_a_sandbox_that_cannot_start_is_tried_then_left_off_with_the_browsers_reason(
    caplog, monkeypatch
) -> None:
    """Where the sandbox cannot start (here: root, taken for a user who could run it), the
    launch with it fails, and the browser starts without it, the warning quoting the refusal."""
    if os.geteuid() != 0:
        pytest.skip("a user who can run the sandbox gets it: nothing fails to start")
    monkeypatch.setattr(session, "sandbox_problem", lambda: None)
    warnings = launched(caplog)
    assert len(warnings) == 1
    assert warnings[0].startswith("Chromium runs without its sandbox: it cannot start here (")
    assert "sandbox" in warnings[0].split("(", 1)[1]


def test_a_user_who_is_not_root_gets_the_sandbox(monkeypatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert session.sandbox_problem() is None
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert "root" in (session.sandbox_problem() or "")
