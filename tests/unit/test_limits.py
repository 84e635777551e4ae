"""The memory headroom says once when it cannot hold; what leaves step code is capped."""

from __future__ import annotations

import logging
import sys

import pytest

from prettyplay_behave.safety import limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's headroom")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if getattr(r, "event", "") == "memory_headroom_unavailable"
    ]


def test_a_data_size_that_cannot_be_read_is_said_once(caplog, monkeypatch) -> None:
    monkeypatch.setattr(limits, "_data_bytes", lambda: 0)
    monkeypatch.setattr(limits, "_said", set())
    with caplog.at_level(logging.WARNING, "prettyplay"):
        for _ in range(3):
            with limits.memory_headroom():
                pass
    assert warnings(caplog) == [
        "the memory headroom of step code does not hold: the process's data size cannot be "
        "read from /proc/self/status; only the size caps bound what a step may build"
    ]


def test_a_limit_that_cannot_be_set_is_said_once(caplog, monkeypatch) -> None:
    import resource

    def refuse(*_: object) -> None:
        raise ValueError("not allowed here")

    monkeypatch.setattr(limits, "_said", set())
    monkeypatch.setattr(resource, "setrlimit", refuse)
    with caplog.at_level(logging.WARNING, "prettyplay"):
        for _ in range(2):
            with limits.memory_headroom():
                pass
    assert len(warnings(caplog)) == 1
    assert "the data segment limit cannot be set (not allowed here)" in warnings(caplog)[0]


def test_a_headroom_that_holds_says_nothing(caplog, monkeypatch) -> None:
    monkeypatch.setattr(limits, "_said", set())
    with caplog.at_level(logging.WARNING, "prettyplay"), limits.memory_headroom():
        pass
    assert warnings(caplog) == []


# -- what leaves: values sent to the browser, texts an execution ends with ----------------------


def test_a_short_text_is_kept_whole_and_cleaned() -> None:
    assert limits.cut_text("short", 20, clean=str.upper) == "SHORT"


def test_a_long_text_keeps_its_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "h" * 1_000 + "m" * 1_000_000 + "t" * 1_000
    cut = limits.cut_text(text, 2_000)
    head, note, tail = cut.split("\n")
    assert (head, tail) == ("h" * 1_000 + "m" * 500, "t" * 500)
    assert note == f"… {len(text) - 2_000:,} characters cut …"


def test_a_secret_the_cut_splits_is_redacted_whole() -> None:
    text = "a" * 14 + "SECRET" + "b" * 100  # the head's cut falls inside the secret
    redact = lambda part: part.replace("SECRET", "${S}")  # noqa: E731
    assert limits.cut_text(text, 20, clean=redact).startswith("a" * 14 + "S\n")  # unprotected
    cut = limits.cut_text(text, 20, clean=redact, margin=10)
    assert cut.startswith("a" * 14 + "$\n"), cut


def test_a_value_past_the_sending_cap_is_refused_before_it_is_serialised() -> None:
    part = "x" * limits.MAX_LENGTH
    limits.sendable("fill", ((part,), {"timeout": 5_000}))  # the largest string goes
    too_big: list[object] = [[part] * 3, {"a": [part, part], "b": part}, ((part, part, "y"), {})]
    for value in too_big:
        with pytest.raises(
            limits.CodePolicyError, match=f"more than {limits.MAX_SENT:,} characters"
        ):
            limits.sendable("set_json", value)


def test_an_assert_message_too_big_to_print_is_refused_before_it_is_built() -> None:
    from prettyplay_behave.safety.sandbox import compile_step

    shout = compile_step(
        'def step(page) -> None:\n    part = "x" * 1000000\n    assert False, [part] * 30\n'
    )
    with pytest.raises(limits.CodePolicyError, match="may not build a string of more than"):
        shout(None)
    whisper = compile_step('def step(page) -> None:\n    assert False, ["x"] * 3\n')
    with pytest.raises(AssertionError, match=r"\['x', 'x', 'x'\]"):
        whisper(None)


def timing_out(timeout: float | None = None) -> None:
    """A Playwright call that timed out (as the browser's own timer ends it)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    raise PlaywrightTimeoutError(f"Timeout {timeout}ms exceeded.")


@pytest.mark.parametrize(("left_ms", "named"), [(10, True), (5_000, False)])
def test_a_timeout_the_budget_set_names_the_step_timeout_though_the_browser_ended_it_early(
    left_ms: int, named: bool
) -> None:
    """The browser's timer may fire a few milliseconds before this process's clock runs out: a
    timeout the budget set is still the step timeout's; one the call chose itself is its own."""
    budget = limits.Budget(left_ms)
    budget.start()
    with pytest.raises(Exception) as raised:
        limits.bounded_call(timing_out, budget, 30_000)
    assert ("step_timeout_ms" in str(raised.value)) == named, raised.value
