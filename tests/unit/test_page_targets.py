"""The browser's page targets as the navigation guard follows them from the browser's events:
which new windows may still ask for a first document, and how many pages a context has."""

from __future__ import annotations

import time

import pytest

from prettyplay_behave.browser import guard
from prettyplay_behave.browser.guard import BLANK, PageTargets

CONTEXT = "context-1"


def info(target: str, url: str = "", opener: str | None = None, **extra: str) -> dict:
    made = {"type": "page", "targetId": target, "url": url, "browserContextId": CONTEXT, **extra}
    if opener:
        made["openerId"] = opener
    return made


@pytest.fixture
def targets() -> PageTargets:
    made = PageTargets()
    made.seen(info("first", BLANK))  # there when the watch starts
    made.watching = True
    return made


def test_a_new_window_is_opening_until_its_first_document_is_judged(targets) -> None:
    targets.seen(info("popup"))
    assert targets.opening(CONTEXT)
    assert targets.judged("popup")  # a new window: refused, it is closed
    assert not targets.opening(CONTEXT)
    assert not targets.judged("popup") and not targets.judged("first")  # pages that stay open


def test_a_window_without_an_opener_that_shows_blank_is_waited_for_a_grace_period(
    targets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A modifier click's window may show about:blank before it asks for its document."""
    targets.seen(info("clicked"))
    targets.seen(info("clicked", BLANK))
    assert targets.opening(CONTEXT)
    assert targets.judged("clicked")  # still a new window, though it shows about:blank
    targets.seen(info("later"))
    targets.seen(info("later", BLANK))
    later = time.monotonic() + guard.BLANK_GRACE_S + 0.01
    monkeypatch.setattr(guard.time, "monotonic", lambda: later)
    assert not targets.opening(CONTEXT)  # a page that stays blank is not waited for longer


def test_a_scripts_blank_window_asks_for_nothing(targets) -> None:
    targets.seen(info("scripted", opener="first"))
    targets.seen(info("scripted", BLANK, opener="first"))
    assert not targets.opening(CONTEXT)


def test_the_tests_own_page_and_other_contexts_are_not_waited_for(targets) -> None:
    targets.seen(info("own"))
    targets.judged("own")
    targets.seen({**info("elsewhere"), "browserContextId": "context-2"})
    assert not targets.opening(CONTEXT) and targets.opening("context-2")
    targets.seen({**info("worker"), "type": "service_worker"})
    assert targets.context_of("worker") is None


def test_a_refused_window_no_longer_counts_once_it_is_being_closed(targets) -> None:
    targets.seen(info("refused"))
    assert targets.count(CONTEXT) == 2
    targets.judged("refused")
    targets.closing("refused")
    assert targets.count(CONTEXT) == 1  # before the browser reports it gone
    targets.gone("refused")
    assert targets.count(CONTEXT) == 1 and targets.context_of("refused") is None
