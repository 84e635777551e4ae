"""Hooks that raise, a huge page and a page that never stops changing: the run goes on, the
request stays within its budget, and settling is bounded by settle_ms."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave import IncurableStepError, PrettyPlay
from prettyplay_behave.engine.hooks import HOOK_EVENTS
from tests.conftest import BehaveProject
from tests.faults.support import api_config, plant
from tests.support.caches import cache_text
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.pages import PageServer
from tests.support.shop_steps import ACCEPT, BROKEN_ACCEPT, HEADING, OPEN_SHOP

ROT = json_answer(
    {"label": "rot", "explanation": "the button was renamed", "recommendation": "heal it"}
)


class Raising:
    """A hook object whose every ``on_*`` method raises."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name not in HOOK_EVENTS:
            raise AttributeError(name)

        def hook(*args: Any) -> None:
            self.calls.append(name)
            raise RuntimeError(f"{name} broke")

        return hook


def test_a_hook_raising_in_every_event_is_logged_and_the_run_goes_on(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    cache_dir = tmp_path / "cache"
    plant(
        cache_dir,
        "visit",
        ("step", "open the shop", OPEN_SHOP),
        ("step", "accept the cookie banner", BROKEN_ACCEPT),
        ("expect", "the heading says Demo Shop", HEADING),
    )
    llm_env.on("classify", ROT)
    llm_env.on("heal", code_answer(ACCEPT))
    llm_env.on("gate", CLEAN_GATE)
    hook = Raising()
    caplog.set_level(logging.ERROR, logger="prettyplay")
    config = api_config(shop.url, cache_dir, hooks=[hook])
    with PrettyPlay("visit", config=config, page=page) as t:
        assert t.step("open the shop").origin == "replayed"
        assert t.step("accept the cookie banner").origin == "healed"
        with t.group("look at the shop") as group:
            group.expect("the heading says Demo Shop")
        with pytest.raises(ValueError, match="the test's own failure"):
            with t.group("a block that fails"):
                raise ValueError("the test's own failure")
        assert [e.outcome for e in t.state.scenario] == ["passed"] * 3
    assert set(hook.calls) == set(HOOK_EVENTS)
    failed = [r for r in caplog.records if getattr(r, "event", "") == "hook_failed"]
    assert len(failed) == len(hook.calls)
    assert {r.getMessage() for r in failed} == {
        f"hook Raising.{name} raised; the run goes on" for name in HOOK_EVENTS
    }
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in failed)
    entries = cache_text(cache_dir)
    assert 'origin="healed"' in entries and "Accept cookies" in entries


HOOKED_ENVIRONMENT = """\
from pathlib import Path

from prettyplay_behave.behave import add_hooks, use_prettyplay


class Raising:
    def __getattr__(self, name):
        if not name.startswith("on_"):
            raise AttributeError(name)

        def hook(*args):
            with Path("hook-calls.txt").open("a") as calls:
                calls.write(name + "\\n")
            raise RuntimeError(name + " broke")

        return hook


def before_all(context):
    add_hooks(context, Raising())


use_prettyplay(globals())
"""
HOOKED_FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    When I accept the cookie banner
    Then the heading says Demo Shop

  @group
  Scenario: Look around
    Given I open the shop
    Then the heading says Demo Shop
"""


@pytest.mark.slow
def test_behave_logs_a_raising_hook_and_stays_green(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/environment.py", HOOKED_ENVIRONMENT)
    project.write("features/shop.feature", HOOKED_FEATURE)
    for scenario in ("Visit", "Look around"):
        test = f"shop.feature::{scenario}"
        plant(project.cache_dir, test, ("step", "I open the shop", OPEN_SHOP))
        plant(project.cache_dir, test, ("expect", "the heading says Demo Shop", HEADING))
    plant(
        project.cache_dir,
        "shop.feature::Visit",
        ("step", "I accept the cookie banner", BROKEN_ACCEPT),
    )
    llm.on("classify", ROT)
    llm.on("heal", code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    result = project.run(
        "--no-logcapture", "-D", f"prettyplay.base_url={shop.url}", env=llm.env, timeout=120
    )
    assert result.returncode == 0, result
    assert "2 scenarios passed, 0 failed" in result.output
    calls = (project.root / "hook-calls.txt").read_text().split()
    assert set(calls) == set(HOOK_EVENTS) - {"on_group_failed"}
    for name in set(calls):
        assert f"hook Raising.{name} raised; the run goes on" in result.output, name
    assert "RuntimeError: on_healed broke" in result.output


# -- pages ----------------------------------------------------------------------------------------


# a run of items whose snapshot, written out, is several times the budget (bench/huge_page.py
# times pages of 10,000 and more)
ITEMS = 2_500
HUGE = (
    "<!doctype html><title>Catalogue</title><main><h1>Catalogue</h1><ul>"
    + "".join(f'<li><a href="/item/{n}">Item {n}</a></li>' for n in range(ITEMS))
    + "</ul><button>Load more</button></main>"
)
SHOWN = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Catalogue")\n'
)
TOKEN_BUDGET = 8_000


@pytest.mark.slow
def test_a_huge_page_keeps_the_request_within_the_snapshot_budget(
    pages: PageServer, page_on, tmp_path: Path, llm_env: ScriptedLLMServer, record_property
) -> None:
    # what such a page costs in time and memory is bench/huge_page.py's figure
    pages.pages["/"] = HUGE
    llm_env.on("generate", code_answer(SHOWN))
    llm_env.on("gate", CLEAN_GATE)
    page = page_on(pages.url)
    page.goto("/")
    assert page.locator("a").count() == ITEMS
    assert len(page.locator("main").aria_snapshot()) // 4 > 2 * TOKEN_BUDGET  # whole, too big
    config = api_config(pages.url, tmp_path / "cache", llm_timeout=30.0)
    with PrettyPlay("catalogue", config=config, page=page) as t:
        assert t.expect("the catalogue heading is shown").origin == "generated"
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate"]
    request = llm_env.requests_for("generate")[0]
    tokens = len(request.text) // 4
    record_property("request_tokens", tokens)
    assert tokens < TOKEN_BUDGET
    user = request.content("user")
    # the run of items is collapsed; what surrounds it is kept
    assert "more listitem entries like the above" in user
    assert 'link "Item 0"' in user and 'button "Load more"' in user


BUSY = """\
<!doctype html><title>Busy</title>
<main>
  <h1>Busy</h1><p id="ticks">0</p>
  <button onclick="this.textContent='Pressed'">Go</button>
</main>
<script>
  let ticks = 0;
  setInterval(() => { document.getElementById("ticks").textContent = ++ticks; }, 10);
</script>
"""
PRESS_GO = 'def step(page) -> None:\n    page.get_by_role("button", name="Go").click()\n'
PRESSED = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("button", name="Pressed")).to_be_visible()\n'
)
GREETS = (
    'def step(page) -> None:\n    expect(page.get_by_text("Hello")).to_be_visible(timeout=500)\n'
)
SETTLE_MS = 1000


def test_a_page_that_never_settles_holds_a_red_replay_for_settle_ms_only(
    pages: PageServer, page_on, tmp_path: Path, no_llm
) -> None:
    pages.pages["/"] = BUSY
    cache_dir = tmp_path / "cache"
    plant(
        cache_dir,
        "busy",
        ("step", "press Go", PRESS_GO),
        ("expect", "the button says Pressed", PRESSED),
        ("expect", "the page says Hello", GREETS),
    )
    page = page_on(pages.url)
    page.goto("/")
    config = api_config(pages.url, cache_dir, settle_ms=SETTLE_MS, action_timeout_ms=2000)
    with PrettyPlay("busy", config=config, page=page) as t:
        started = time.monotonic()
        assert t.step("press Go").origin == "replayed"
        pressed = time.monotonic() - started
        t.expect("the button says Pressed")
        started = time.monotonic()
        with pytest.raises(IncurableStepError) as caught:
            t.expect("the page says Hello")
        failed = time.monotonic() - started
    # a green replay runs at once, however busy the page; the red one ran (0.5 s), waited the
    # window out (the page never went quiet), ran again (0.5 s) and stopped there
    assert pressed < SETTLE_MS / 1000
    assert SETTLE_MS / 1000 + 1 <= failed < SETTLE_MS / 1000 + 1 + 3
    assert int(page.locator("#ticks").text_content() or 0) > 50  # it was busy throughout
    render = caught.value.render()
    assert render.startswith("RedStepError: the cached step failed (the LLM is unavailable")
    assert render.rstrip().endswith(f"(the page never settled within settle_ms={SETTLE_MS})")
