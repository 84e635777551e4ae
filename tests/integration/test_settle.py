"""Settle polling on real pages: the wait lasts while the page changes, a page starved of time
never looks quiet, a fresh page is watched as soon as something loads into it, and a test's own
pages carry the mutation clock from their first document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prettyplay_behave import PrettyConfig, PrettyPlay
from prettyplay_behave.browser.settle import QUIET_MS, Settler
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
    Settler.install(page.context)
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


def test_a_tests_own_pages_carry_the_mutation_clock_from_their_first_document(
    pages: PageServer, browser: Any, tmp_path: Path
) -> None:
    pages.pages["/"] = '<!doctype html><title>Home</title><a href="/" target="_blank">again</a>'
    config = PrettyConfig(base_url=pages.url, cache_dir=str(tmp_path / "cache"))
    clock = "typeof window.__prettyplayLastMutation"
    with PrettyPlay("clock", config=config, browser=browser) as test:
        test.page.goto("/")  # straight to the page: no settle has looked at it yet
        assert test.page.evaluate(clock) == "number"
        with test.page.context.expect_page() as opened:
            test.page.click("a")
        popup = opened.value
        popup.wait_for_load_state()
        assert popup.evaluate(clock) == "number"
