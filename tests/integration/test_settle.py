"""Settle polling on real pages: the wait lasts while the page changes, a page starved of time
never looks quiet, a fresh page is watched as soon as something loads into it, a test's own
pages carry the mutation clock from their first document once a settle looked at them, and a
replay runs cached code at once: a green step waits for nothing, a red one settles and runs
again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay, PrettyPlayError
from prettyplay_behave.browser.settle import QUIET_MS, Settler
from tests.support.caches import plant
from tests.support.pages import PageServer

# A chain of DOM changes a little shorter apart than the quiet period, then "Done".
CHAIN = f"""<!doctype html><title>Chain</title><p id="status">0</p>
<script>
  let left = 8;
  const next = () => {{
    const status = document.getElementById("status");
    if (--left > 0) {{ status.textContent = String(8 - left); setTimeout(next, {QUIET_MS // 2}); }}
    else status.textContent = "Done";
  }};
  addEventListener("load", () => setTimeout(next, {QUIET_MS // 2}));
</script>"""

# Changes every 10 ms, and holds its main thread for 100 ms every 120 ms: after each stall the
# page looks quiet by the clock, though its overdue timer is about to change it again.
STARVED = """<!doctype html><title>Starved</title><p id="ticks">0</p>
<script>
  let ticks = 0;
  setInterval(() => { document.getElementById("ticks").textContent = ++ticks; }, 10);
  const stall = () => { const end = performance.now() + 100; while (performance.now() < end); };
  setInterval(stall, 120);
</script>"""


def watched(page_on: Callable[[str], Any], url: str, fresh: bool = False) -> tuple[Any, Settler]:
    page = page_on(url)
    return page, Settler(page, fresh=fresh)


def test_the_wait_lasts_until_the_last_of_a_chain_of_changes(
    pages: PageServer, page_on: Callable[[str], Any]
) -> None:
    pages.pages["/"] = CHAIN
    page, settler = watched(page_on, pages.url)
    for _ in range(3):
        page.goto("/")
        assert settler.settle(5000)
        assert page.locator("#status").text_content() == "Done"


def test_a_page_starved_of_time_never_looks_quiet(
    pages: PageServer, page_on: Callable[[str], Any]
) -> None:
    pages.pages["/"] = STARVED
    page, settler = watched(page_on, pages.url)
    page.goto("/")
    outcomes = [settler.settle(400) for _ in range(5)]
    assert outcomes == [False] * 5
    assert int(page.locator("#ticks").text_content() or 0) > 20


def test_a_fresh_page_is_watched_once_a_document_loads_into_it(
    pages: PageServer, page_on: Callable[[str], Any]
) -> None:
    page, settler = watched(page_on, pages.url, fresh=True)
    assert settler.settle(400)  # nothing has loaded: nothing to wait for
    page.set_content(STARVED)
    assert not settler.settle(400)


def test_once_settled_a_tests_pages_carry_the_mutation_clock_from_their_first_document(
    pages: PageServer, browser: Any, tmp_path: Path
) -> None:
    pages.pages["/"] = '<!doctype html><title>Home</title><a href="/" target="_blank">again</a>'
    config = PrettyConfig(base_url=pages.url, cache_dir=str(tmp_path / "cache"))
    clock = "typeof window.__prettyplayLastMutation"
    with PrettyPlay("clock", config=config, browser=browser) as test:
        test.page.goto("/")
        assert test.page.evaluate(clock) == "undefined"  # no settle yet: no script of ours
        assert test.state.settler.settle(2000)
        test.page.goto("/")  # straight to the page: no settle has looked at it yet
        assert test.page.evaluate(clock) == "number"
        with test.page.context.expect_page() as opened:
            test.page.click("a")
        popup = opened.value
        popup.wait_for_load_state()
        assert popup.evaluate(clock) == "number"


# Saving takes 300 ms after the click, the page changing all along; then it says "Saved".
SAVING = """<!doctype html><title>Notes</title><button>Save</button><p id="status">Draft</p>
<script>
  document.querySelector("button").addEventListener("click", () => {
    const status = document.getElementById("status");
    const started = performance.now();
    const tick = () => {
      const spent = performance.now() - started;
      if (spent < 300) { status.textContent = "Saving " + Math.round(spent); setTimeout(tick, 10); }
      else status.textContent = "Saved";
    };
    tick();
  });
</script>"""

# A clock that never stops: a page a settle would wait on for all of settle_ms.
TICKING = """<!doctype html><title>Ticker</title><h1>Ticker</h1><p id="ticks">0</p>
<script>
  let ticks = 0;
  setInterval(() => { document.getElementById("ticks").textContent = ++ticks; }, 10);
</script>"""

STEPS = {
    "open the notes": 'def step(page) -> None:\n    page.goto("/")\n',
    "save the note": (
        'def step(page) -> None:\n    page.get_by_role("button", name="Save").click()\n'
    ),
    # read once, no retry: what the page shows the moment the check runs
    "the note is saved": (
        "def step(page) -> None:\n"
        '    shown = page.locator("#status").inner_text()\n'
        '    assert shown == "Saved", shown\n'
    ),
    "the note says Published": (
        'def step(page) -> None:\n    expect(page.locator("#status")).to_have_text("Published")\n'
    ),
    "the heading says Ticker": (
        'def step(page) -> None:\n    expect(page.get_by_role("heading")).to_have_text("Ticker")\n'
    ),
}


def replaying(
    tmp_path: Path, url: str, test: str, steps: list[tuple[str, str]], **settings: Any
) -> PrettyConfig:
    """A strict replay of ``steps`` (kind, sentence) of ``test``, their code planted."""
    plant(
        tmp_path / "cache", test, *((kind, sentence, STEPS[sentence]) for kind, sentence in steps)
    )
    return PrettyConfig(base_url=url, cache_dir=str(tmp_path / "cache"), strict=True, **settings)


def test_a_replayed_check_on_a_changing_page_goes_red_once_then_settles_and_passes(
    pages: PageServer, browser: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pages.pages["/"] = SAVING
    steps = [("step", "open the notes"), ("step", "save the note"), ("expect", "the note is saved")]
    config = replaying(tmp_path, pages.url, "notes", steps)
    caplog.set_level(logging.DEBUG, logger="prettyplay")
    with PrettyPlay("notes", config=config, browser=browser) as test:
        test.step("open the notes")
        test.step("save the note")
        run = test.expect("the note is saved")
        assert (run.outcome, run.origin) == ("passed", "replayed")
        assert test.page.locator("#status").inner_text() == "Saved"
    retries = [r.getMessage() for r in caplog.records if getattr(r, "event", "") == "step_retry"]
    assert retries == ["the replay went red: the page settles, the step runs again"]


def test_a_green_replay_never_waits_for_the_page(
    pages: PageServer, browser: Any, tmp_path: Path
) -> None:
    pages.pages["/"] = TICKING
    steps = [("step", "open the notes"), ("expect", "the heading says Ticker")]
    config = replaying(tmp_path, pages.url, "ticker", steps, settle_ms=60_000)
    with PrettyPlay("ticker", config=config, browser=browser) as test:
        test.step("open the notes")
        for _ in range(3):
            assert test.expect("the heading says Ticker").outcome == "passed"
        # a settle would have put its mutation clock into the page, and waited all of settle_ms
        assert test.page.evaluate("typeof window.__prettyplayLastMutation") == "undefined"


def test_a_red_replay_that_waited_out_its_expect_is_not_run_again(
    pages: PageServer, browser: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An expect that timed out gave the page longer than a settle would: the replay counts as
    the step's try, and the step is red after one timeout, not two."""
    pages.pages["/"] = SAVING
    steps = [("step", "open the notes"), ("expect", "the note says Published")]
    config = replaying(
        tmp_path, pages.url, "published", steps, settle_ms=300, expect_timeout_ms=600
    )
    caplog.set_level(logging.DEBUG, logger="prettyplay")
    with PrettyPlay("published", config=config, browser=browser) as test:
        test.step("open the notes")
        with pytest.raises(PrettyPlayError) as raised:
            test.expect("the note says Published")
        assert "Published" in str(raised.value)
    retries = [r for r in caplog.records if getattr(r, "event", "") == "step_retry"]
    assert retries == []
