"""What a request is shown of the page: the page once it settled, captured within a budget.

The page a step's code set off (a request, a re-render) is part of what the step did, so the page
settles before it is read. The test's cookie values are kept out of it as secrets are (a page
may show its own session id). The budgets keep a request under 8,000 tokens: the page state of a
code or classify request (a classify request also carries the scenario's code, which the page
gives way to), and the page after a candidate ran, beside the change it made.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from ..browser.snapshot import PageState, capture, estimate_tokens

if TYPE_CHECKING:
    from ..safety.secrets import Secrets
    from .state import TestState

PAGE_TOKENS = 5_000
MIN_PAGE_TOKENS = 1_500  # the page a classify request keeps whatever the scenario's code takes
SCENARIO_LINE_TOKENS = 40  # an earlier step's sentence, origin and URLs in a classify request
CHANGE_PAGE_TOKENS = 3_000  # the page after a candidate, when its change is too large to show


class Pages:
    """Reads a test's page for requests: settled, redacted, within a budget."""

    def __init__(self, secrets: Secrets, test_id_attribute: str) -> None:
        self.secrets = secrets
        self.test_id_attribute = test_id_attribute

    def now(self, test: TestState, budget_tokens: int = PAGE_TOKENS) -> PageState:
        """The current page, once it settled, with the test's other tabs and what happened on
        it last."""
        test.settler.settle(test.config.settle_ms)
        self.hide_cookies(test)
        state = capture(
            test.page,
            redact=self.secrets.redact,
            budget_tokens=budget_tokens,
            test_id_attribute=self.test_id_attribute,
        )
        return dataclasses.replace(state, tabs=tuple(test.tabs.listing()), notes=tuple(test.notes))

    def hide_cookies(self, test: TestState) -> None:
        """The test's cookie values (a session id a page may show in its text) are kept out of
        the page state as secrets are, before any request shows it: step code that reads one
        gets its placeholder anyway. ``redact_cookies=false`` shows them."""
        if not test.config.redact_cookies:
            return
        with contextlib.suppress(PlaywrightError):  # a context that closed has nothing to hide
            for cookie in test.page.context.cookies():
                self.secrets.hide(f"cookie {cookie['name']}", str(cookie["value"]))

    def for_classify(self, test: TestState) -> PageState:
        """The page beside the scenario so far, which takes its share of the budget first."""
        ran = sum(
            estimate_tokens(earlier.code + "".join(earlier.seen + earlier.findings))
            + SCENARIO_LINE_TOKENS
            for earlier in test.scenario
        )
        return self.now(test, max(MIN_PAGE_TOKENS, PAGE_TOKENS - ran))

    def after_candidate(self, test: TestState) -> PageState:
        """The page after a candidate ran, for its gate."""
        return self.now(test, CHANGE_PAGE_TOKENS)
