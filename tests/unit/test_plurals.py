"""One of a thing is never counted as many: "1 test", "1 entry written", "1 request"."""

from __future__ import annotations

from collections import Counter

import pytest

from prettyplay_behave.browser.change import _summary
from prettyplay_behave.llm.client import Usage
from prettyplay_behave.llm.purposes import Purpose
from prettyplay_behave.report.summary import RunSummary
from prettyplay_behave.vocabulary import Origin, counted


@pytest.mark.parametrize(
    ("number", "noun", "text"),
    [
        (0, "test", "0 tests"),
        (1, "test", "1 test"),
        (2, "entry", "2 entries"),
        (1, "entry", "1 entry"),
        (1, "key", "1 key"),
        (3, "key", "3 keys"),
        (1_234, "request", "1,234 requests"),
    ],
)
def test_counted(number: int, noun: str, text: str) -> None:
    assert counted(number, noun) == text


def test_a_run_of_one_test_step_request_and_entry_says_so_in_the_singular() -> None:
    summary = RunSummary(
        tests=1,
        steps=Counter({Origin.GENERATED: 1}),
        usage={Purpose.GENERATE: Usage(1, 1, 0)},
        cache_written=1,
        obsolete=1,
    )
    first, llm, cache, _ = summary.lines()
    assert first.startswith("1 test (0 failed); 1 step: 0 replayed, 0 reused, 1 generated")
    assert llm == "LLM: 1 request, 1 token (generate 1 (1 token))"
    assert cache == "cache: 1 entry written, 1 obsolete (prettyplay cache prune removes it)"
    many = RunSummary(tests=2, usage={Purpose.GENERATE: Usage(2, 5, 5)}, cache_written=2)
    assert many.lines()[0].startswith("2 tests (0 failed); 0 steps: ")
    assert many.lines()[1] == "LLM: 2 requests, 10 tokens (generate 2 (10 tokens))"
    assert many.lines()[2] == "cache: 2 entries written"


def test_one_line_of_a_page_change_is_one_line() -> None:
    assert _summary(1, 0, 2) == "1 line appeared, 0 disappeared, 2 changed"
    assert _summary(2, 1, 0) == "2 lines appeared, 1 disappeared, 0 changed"
