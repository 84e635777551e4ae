"""The bounds of step code in size and time, tried as an attacker would: a value too big to send
to the browser, an assertion whose message would fill every output, and a page clock paused so
that the page's own timers never fire. Each attack runs as the LLM's answer and as an entry
planted in the cache and replayed strictly with no API key, on a real Chromium."""

from __future__ import annotations

import faulthandler
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay, PrettyPlayError
from prettyplay_behave.browser.settle import Settler
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, RedVerdict
from prettyplay_behave.safety.limits import MAX_SENT, MAX_TEXT
from prettyplay_behave.safety.step_code import check_code
from tests.support import attacks
from tests.support.attacks import (
    APP_PAGE,
    HEADING,
    INCURABLE,
    MARGIN_S,
    MODES,
    OPEN_APP,
    STEP_TIMEOUT_MS,
    TEST,
    attack,
    step,
)
from tests.support.caches import plant
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.origins import TwoOrigins

HANG_S = 60  # a run that outlasts this dumps its stacks and ends: a hang fails, never waits


@pytest.fixture
def origins() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages.update({"/": APP_PAGE, "/choose": CHOOSE_PAGE})
        yield made


@pytest.fixture
def hang_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attack harness's own hang timer, shorter: these attacks hung or ran for minutes."""
    monkeypatch.setattr(attacks, "HANG_S", HANG_S)


# -- 1: a value written into the page is capped before it is serialised ---------------------------

CHOOSE_PAGE = """<title>Choose</title><h1>Choose</h1>
<label>Size <select id="size"><option>S</option><option>M</option></select></label>"""
PART = 'part = "x" * 1000000\n'  # the largest string step code may build
WRITES = {
    # 20 MB as JSON: about 10 s to send before the bound, 100 MB took minutes
    "local storage set_json": PART + 'page.local_storage.set_json("big", [part] * 20)',
    "session storage set_json": PART + 'page.session_storage.set_json("big", {"a": [part] * 20})',
    "an option list": (
        PART + 'page.goto("/choose")\npage.get_by_label("Size").select_option([part] * 20)'
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", list(WRITES))
def test_a_value_too_big_to_send_is_refused_before_it_is_serialised(
    how: str,
    mode: str,
    origins: TwoOrigins,
    tmp_path: Path,
    llm,
    monkeypatch,
    browser,
    hang_bound,
) -> None:
    outcome = attack(mode, step(WRITES[how]), origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    text = str(outcome.error)
    assert f"more than {MAX_SENT:,} characters" in text, text
    assert outcome.seconds < STEP_TIMEOUT_MS / 1000 + MARGIN_S, outcome.seconds
    assert outcome.went_on


# Before a page of the app loads, local storage is written into the browser context, all of
# base_url's origin's entries at each write: values under the cap one by one, past it together.
# (each write into the context is slow: the step has longer than the other attacks)
PIECEMEAL = 'part = "x" * 700000\nfor i in range(4):\n    page.local_storage.set(str(i), part)'
PIECEMEAL_TIMEOUT_MS = 10_000


@pytest.mark.parametrize("mode", MODES)
def test_storage_written_piecemeal_before_a_page_loads_is_capped_as_a_whole(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    cache = tmp_path / "cache"
    code = step(PIECEMEAL)
    if mode == "planted":
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        plant(cache, TEST, ("step", "I fill the storage", code))
    else:
        attacks.answer_with(code, llm, monkeypatch)
    config = PrettyConfig(
        base_url=origins.app, cache_dir=str(cache), strict=mode == "planted",
        generation_attempts=1, llm_retries=0, step_timeout_ms=PIECEMEAL_TIMEOUT_MS,
    )  # fmt: skip
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        with PrettyPlay(TEST, config=config, browser=browser) as t:
            started = time.monotonic()
            with pytest.raises(PrettyPlayError) as raised:
                t.step("I fill the storage")
            seconds = time.monotonic() - started
    finally:
        faulthandler.cancel_dump_traceback_later()
    text = str(raised.value)
    assert f"page.local_storage.set: step code may not send more than {MAX_SENT:,}" in text, text
    assert seconds < PIECEMEAL_TIMEOUT_MS / 1000 + MARGIN_S, seconds


def test_a_value_within_the_cap_is_stored_and_read_back(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The positive control: the cap leaves a large value that fits alone."""
    code = step(
        'part = "x" * 200000\npage.local_storage.set_json("big", [part] * 4)\n'
        'assert len(page.local_storage.get("big")) == 800000 + 2 + 4 * 2 + 3 * 2'
    )
    outcome = attack("planted", code, origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is None, outcome.error


# -- 2: what step code asserts is capped before it leaves, in every output ------------------------

# each with what the failure then says: a message too big to print is refused before it is
# built, a long one is cut, and so is Playwright's own error that repeats a long expected text
BIG_MESSAGES = {
    "a list of long strings": (
        PART + "assert False, [part] * 30",
        "may not build a string of more than 1,000,000",
    ),
    "a long string": (PART + "assert False, part", "980,016 characters cut"),
    "a long expected text": (
        PART + 'expect(page.locator("h1")).to_have_text(part, timeout=300)',
        "characters cut",
    ),
}
# one scenario a message, each failing on its own step; one run holds them all
MESSAGE_FEATURE = "Feature: Shouting\n" + "".join(
    f"  Scenario: {how}\n    Given I open the app\n    Then the page shouts {how}\n"
    for how in BIG_MESSAGES
)
# bytes of any one output: each failure's cut text, a few times over, and the rest; a text not
# cut is 1,000,000 characters on its own
OUTPUT_BOUND = 100_000 * len(BIG_MESSAGES)


@pytest.mark.parametrize("mode", MODES)
def test_a_huge_failure_text_is_cut_before_any_output_or_request(
    mode: str, origins: TwoOrigins, project, llm: ScriptedLLMServer
) -> None:
    project.write("features/shouting.feature", MESSAGE_FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    scenario = f"shouting.feature::{next(iter(BIG_MESSAGES))}"
    store.write(CacheWrite(CacheKey(scenario, "step", "I open the app"), OPEN_APP, "generated"))
    for how, (body, _) in BIG_MESSAGES.items():
        shout, sentence = step(body), f"the page shouts {how}"
        if mode == "planted":
            key = CacheKey(f"shouting.feature::{how}", "expect", sentence)
            store.write(CacheWrite(key, shout, "generated"))
        else:
            llm.on("generate", code_answer(shout), step=sentence)
    if mode == "generated":
        llm.on("gate", CLEAN_GATE, repeat=True)
        llm.on("classify", INCURABLE, repeat=True)
    env = llm.env if mode == "generated" else {}
    strict = ["-D", "prettyplay.strict=true"] if mode == "planted" else []
    faulthandler.dump_traceback_later(HANG_S * 3, exit=True)
    try:
        result = project.run(
            "-o", "-", "-f", "json", "-o", "behave.json", "--junit", "--junit-directory=junit",
            "-D", f"prettyplay.base_url={origins.app}",
            "-D", "prettyplay.report_dir=report", "-D", "prettyplay.generation_attempts=1",
            *strict, env=env,
        )  # fmt: skip
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert result.returncode == 1, result.output[:5_000]
    assert "prettyplay: 3 tests (3 failed)" in result.output, result.output[-3_000:]
    sizes = {"output": len(result.output.encode())}
    for path in project.root.rglob("*"):
        if path.is_file() and path.suffix in (".xml", ".json", ".html"):
            sizes[str(path.relative_to(project.root))] = path.stat().st_size
    for request in llm.requests:
        sizes[f"request {request.purpose} {request.step}"] = len(json.dumps(request.body))
    print(mode, sizes)
    assert any(name.endswith(".xml") for name in sizes) and "report/report.html" in sizes, sizes
    assert max(sizes.values()) < OUTPUT_BOUND, sizes
    for how, (_, said) in BIG_MESSAGES.items():
        failure = result.output.split(f"Scenario: {how}")[1].split("Scenario:")[0]
        assert said in failure, (how, result.output[:5_000])
        if mode == "generated":
            classify = [r for r in llm.requests_for("classify") if str(r.step).endswith(how)]
            assert classify and said in classify[0].text, how


def test_a_failure_text_within_the_cap_arrives_whole(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The positive control: a text shorter than the cap is not cut."""
    code = step(f'assert False, "y" * {MAX_TEXT - 1_000}')
    outcome = attack("planted", code, origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    assert "y" * (MAX_TEXT - 1_000) in str(outcome.error)
    assert "characters cut" not in str(outcome.error)


# -- 3: a paused page clock holds no wait of the product -----------------------------------------

PAUSE = 'page.clock.install()\npage.clock.pause_at("2030-01-01T00:00:00")'
SETTLE_MS = 2_000


def paused(page) -> bool:
    """Whether the page's clock stands still (the attack took hold)."""
    first = page.evaluate("Date.now()")
    time.sleep(0.05)
    return bool(page.evaluate("Date.now()") == first)


def timers_replaced(page) -> bool:
    """Whether the page's setTimeout is no longer the browser's."""
    return not page.evaluate("String(setTimeout).includes('[native code]')")


def test_a_generated_step_that_pauses_the_clock_does_not_hold_the_run(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser, hang_bound
) -> None:
    """The generated step runs on a settled page, and the page settles again after it (for the
    next request's snapshot): with the page's timers paused, that settle must still end."""
    outcome = attack(
        "generated", step(PAUSE), origins, tmp_path, llm, monkeypatch, browser, settle_ms=SETTLE_MS
    )
    assert outcome.error is None, outcome.error
    assert outcome.seconds < STEP_TIMEOUT_MS / 1000 + SETTLE_MS / 1000 + MARGIN_S, outcome.seconds
    assert outcome.went_on


# A page that breaks its own timers: no fake clock to find the real ones behind, so only the
# bound kept outside the page ends the settle's wait (at the settle window).
FROZEN_PAGE = "<title>Frozen</title><h1>Frozen</h1><script>window.setTimeout = () => 0;</script>"
STOPS = {  # each with how to see that it took hold
    "a paused page clock": (step(PAUSE), paused),
    "a page whose own timers never fire": (step('page.goto("/frozen")'), timers_replaced),
}


@pytest.mark.parametrize("how", list(STOPS))
def test_a_planted_stop_of_time_before_a_remembered_red_step_does_not_hold_the_strict_run(
    how: str, origins: TwoOrigins, tmp_path: Path, monkeypatch, browser
) -> None:
    """A kept red step settles before it runs; a clock a planted step paused, or a page
    whose timers never fire, must not hold that settle, nor the ones after it."""
    origins.pages["/frozen"] = FROZEN_PAGE
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cache = tmp_path / "cache"
    code, took_hold = STOPS[how]
    plant(cache, TEST, ("step", "I open the app", OPEN_APP), ("step", "I stop the clock", code))
    red = CacheWrite(
        CacheKey(TEST, "expect", "the heading shows"),
        HEADING,
        "generated",
        verdict=RedVerdict("product_defect", "the heading is gone", "fix the app"),
    )
    CacheStore(cache, validate=check_code).write(red)
    config = PrettyConfig(
        base_url=origins.app, cache_dir=str(cache), strict=True, settle_ms=SETTLE_MS,
        step_timeout_ms=STEP_TIMEOUT_MS,
    )  # fmt: skip
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        with PrettyPlay(TEST, config=config, browser=browser) as t:
            t.step("I open the app")
            t.step("I stop the clock")
            assert took_hold(t.page)  # the page's timers never fire
            started = time.monotonic()
            outcome: str
            try:
                outcome = str(t.expect("the heading shows").outcome)
            except PrettyPlayError as exc:
                outcome = f"raised {exc}"
            seconds = time.monotonic() - started
            assert took_hold(t.page)
    finally:
        faulthandler.cancel_dump_traceback_later()
    # the heading is there: the kept red step turns green, after a settle that ended
    assert outcome == "passed", outcome
    assert seconds < SETTLE_MS / 1000 + STEP_TIMEOUT_MS / 1000 + MARGIN_S, seconds


# -- what the settle's own wait relies on, pinned against Playwright -----------------------------


def test_the_settle_finds_a_paused_page_quiet_on_the_real_timers(
    origins: TwoOrigins, page_on
) -> None:
    """Playwright's fake clock keeps the real timers aside (``__pwClock.builtins``): the settle
    uses them, so a paused clock costs nothing (without them it would run out the window)."""
    page = page_on(origins.app)
    page.goto("/")
    page.clock.install()
    page.clock.pause_at("2030-01-01T00:00:00")
    assert paused(page)
    settler = Settler(page)
    started = time.monotonic()
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        quiet = settler.settle(SETTLE_MS)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert quiet
    assert time.monotonic() - started < SETTLE_MS / 1000 / 2


def test_the_settle_ends_at_its_window_on_a_page_without_timers(
    origins: TwoOrigins, page_on
) -> None:
    """A page that broke its own timers: only Playwright's timeout, outside the page, ends the
    settle's wait, at the window (not quiet), and a later settle does the same."""
    origins.pages["/frozen"] = FROZEN_PAGE
    page = page_on(origins.app)
    page.goto("/frozen")
    assert timers_replaced(page)
    settler = Settler(page)
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        for _ in range(2):
            started = time.monotonic()
            assert not settler.settle(SETTLE_MS)
            seconds = time.monotonic() - started
            assert SETTLE_MS / 1000 <= seconds < SETTLE_MS / 1000 + MARGIN_S, seconds
    finally:
        faulthandler.cancel_dump_traceback_later()
