"""The Python authoring surface on a real browser: replay, strict, groups and their pace."""

from __future__ import annotations

import logging
import shutil
import time
from contextlib import closing
from pathlib import Path

import pytest

from prettyplay_behave import (
    ConfigError,
    IncurableStepError,
    PrettyPlay,
    PrettyPlayError,
    ProviderUnavailableError,
)
from prettyplay_behave.browser.guard import NavigationGuard
from tests.conftest import launch_chromium
from tests.support import caches
from tests.support.hooks import Recorder
from tests.support.settings import api_config
from tests.support.shop_steps import ORDER_A_TEA

OPEN = ("step", "open the shop", 'def step(page) -> None:\n    page.goto("/")\n')
ACCEPT = (
    "step",
    "accept the cookie banner",
    'def step(page) -> None:\n    page.get_by_role("button", name="Accept cookies").click()\n',
)
GONE = (
    "expect",
    "the banner is gone",
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("button", name="Accept cookies")).to_be_hidden()\n',
)
HEADING = (
    "expect",
    "the heading says Demo Shop",
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Shop")\n',
)


@pytest.mark.own_playwright
def test_cached_steps_replay_on_a_browser_the_test_owns(shop, tmp_path: Path, caplog) -> None:
    caches.plant(tmp_path / "cache", "visit", OPEN, HEADING)
    caplog.set_level(logging.INFO, logger="prettyplay")
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache")) as t:
        assert t.step("open the shop").origin == "replayed"
        t.expect("the heading says Demo Shop")
        assert t.page.url == shop.url + "/"
        assert [e.outcome for e in t.state.scenario] == ["passed", "passed"]
        bundled = Path(t.runtime.session.playwright.chromium.executable_path).exists()
    # without Playwright's own build, a headless run launches the system's headless shell
    shell = shutil.which("chromium-headless-shell")
    assert bundled or shell, "the suite's set-up installs chromium-headless-shell"
    launched = f"({shell})" if not bundled else "(Playwright's build)"
    assert f"launching chromium {launched}" in caplog.messages


def test_a_playwright_handed_in_launches_the_tests_browser_and_keeps_running(
    shop, tmp_path: Path, playwright
) -> None:
    caches.plant(tmp_path / "cache", "visit", OPEN)
    config = api_config(shop.url, tmp_path / "cache", device="iPhone_13")
    with PrettyPlay("visit", config=config, playwright=playwright) as t:
        t.step("open the shop")
        assert "iPhone" in t.page.evaluate("navigator.userAgent")  # a device needs the launch
        launched = t.page.context.browser
        assert launched is not None and launched.is_connected()
    assert not launched.is_connected()  # the test's own browser closed with it
    with closing(launch_chromium(playwright)) as browser:  # the Playwright still runs
        assert browser.is_connected()
    with pytest.raises(TypeError, match="a browser or a Playwright, not both"):
        PrettyPlay("visit", config=config, browser=browser, playwright=playwright)


def test_tests_on_a_browser_handed_in_get_their_own_contexts_and_leave_it_open(
    shop, tmp_path: Path, playwright
) -> None:
    caches.plant(tmp_path / "cache", "visit", OPEN, ACCEPT)
    caches.plant(tmp_path / "cache", "again", OPEN, GONE)
    with closing(launch_chromium(playwright)) as browser:
        with PrettyPlay(
            "visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser
        ) as t:
            t.step("open the shop")
            t.step("accept the cookie banner")  # the consent lives in this context's storage
            assert browser.contexts == [t.page.context]
        assert browser.contexts == [] and browser.is_connected()
        config = api_config(shop.url, tmp_path / "cache", action_timeout_ms=1000)
        with PrettyPlay("again", config=config, browser=browser) as t:
            t.step("open the shop")
            with pytest.raises(IncurableStepError):  # a fresh context: the banner is back
                t.expect("the banner is gone")
        assert browser.contexts == [] and browser.is_connected()


def test_a_test_whose_set_up_fails_leaves_no_context_behind(
    shop, tmp_path: Path, browser, monkeypatch
) -> None:
    def broken(*args, **kwargs) -> None:
        raise RuntimeError("the bound could not be set")

    caches.plant(tmp_path / "cache", "visit", OPEN)
    monkeypatch.setattr(NavigationGuard, "install", broken)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(RuntimeError, match="could not be set"):
            t.step("open the shop")
        assert browser.contexts == []


def test_a_browser_handed_in_is_never_launched_again_nor_given_a_device(
    shop, tmp_path: Path, playwright
) -> None:
    caches.plant(tmp_path / "cache", "visit", OPEN)
    with closing(launch_chromium(playwright)) as browser:
        config = api_config(shop.url, tmp_path / "cache", device="iPhone_13")
        with PrettyPlay("visit", config=config, browser=browser) as t:
            with pytest.raises(ConfigError, match=r"device.*prettyplay's own browser"):
                t.step("open the shop")
    # closed with the with-block
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(PrettyPlayError, match="browser handed to prettyplay is closed"):
            t.step("open the shop")


def test_a_red_replay_is_terminal_with_the_full_render(shop, tmp_path: Path, browser) -> None:
    caches.plant(tmp_path / "cache", "visit", HEADING)
    config = api_config(shop.url, tmp_path / "cache", action_timeout_ms=1000, strict=True)
    with (
        PrettyPlay("visit", config=config, browser=browser) as t,
        pytest.raises(IncurableStepError) as caught,
    ):
        t.expect("the heading says Demo Shop")
    render = caught.value.render()
    assert render.startswith("RedStepError: the cached step failed (strict: replay only)\n---\n")
    assert "step: the heading says Demo Shop\nerror: AssertionError:" in render
    assert "Call log:" in render


def test_a_miss_without_llm_is_provider_unavailable(
    shop, tmp_path: Path, monkeypatch, browser
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(ProviderUnavailableError, match="OPENAI_API_KEY"):
            t.step("open the shop")
    assert not (tmp_path / "cache").exists()


ORDER = (
    ("step", "order a tea", ORDER_A_TEA),
    # the status appears a moment after the order is placed; this check does not wait for it
    (
        "expect",
        "the order is confirmed at once",
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("status")).to_have_text("order confirmed", timeout=50)\n',
    ),
)


@pytest.mark.parametrize(("tries", "passes"), [(1, False), (80, True)])
def test_tries_reexecute_a_red_step(
    fresh_shop, tmp_path: Path, tries: int, passes: bool, browser
) -> None:
    shop = fresh_shop
    shop.order_delay = 2.0  # the order stays "processing…" that long
    caches.plant(tmp_path / "cache", "tries", *ORDER)
    # settle_ms=0: no settle wait, so only the re-executions of ``tries`` can see the status
    with PrettyPlay(
        "tries", config=api_config(shop.url, tmp_path / "cache", settle_ms=0), browser=browser
    ) as t:
        t.step("order a tea")
        if passes:
            t.expect("the order is confirmed at once", tries=tries)
        else:
            with pytest.raises(IncurableStepError, match="order confirmed"):
                t.expect("the order is confirmed at once", tries=tries)


def test_group_pace_entry_delay_traces_and_framing(shop, tmp_path: Path, browser) -> None:
    caches.plant(tmp_path / "cache", "group", OPEN, ACCEPT, GONE)
    recorder = Recorder()
    config = api_config(shop.url, tmp_path / "cache", hooks=[recorder])
    with PrettyPlay("group", config=config, browser=browser) as t:
        started = time.monotonic()
        with t.group("accept the cookies", speed=90, delay=0.4) as g:
            g.step("open the shop")
            after_first = time.monotonic()
            g.step("accept the cookie banner")
            g.expect("the banner is gone")
        finished = time.monotonic()
        assert g.prompt == "accept the cookies"
        assert after_first - started >= 0.4  # the entry delay precedes the first step
        assert finished - after_first >= 2 * 0.3  # int((100 - 90) * 30) ms before each later step
        assert [(tr.sentence, tr.outcome) for tr in g.traces] == [
            ("open the shop", "passed"),
            ("accept the cookie banner", "passed"),
            ("the banner is gone", "passed"),
        ]
        assert g.traces[0].url_before == "about:blank" and g.traces[0].url_after == shop.url + "/"
        assert [e.group for e in t.state.scenario] == ["accept the cookies"] * 3
    names = [event[0] for event in recorder.events if event[0].startswith("on_group")]
    assert names == ["on_group_started", "on_group_passed", "on_group_finished"]
    assert {e[1] for e in recorder.events if e[0].startswith("on_group")} == {"accept the cookies"}


def test_an_empty_group_is_a_quiet_no_op(shop, tmp_path: Path, browser) -> None:
    recorder = Recorder()
    with PrettyPlay(
        "empty", config=api_config(shop.url, tmp_path / "cache", hooks=[recorder]), browser=browser
    ) as t:
        started = time.monotonic()
        with t.group("nothing to do", delay=30) as g:
            pass
        # the entry delay is lazy: with no step to precede, its 30 s are never waited
        assert time.monotonic() - started < 10
        assert g.traces == []
    assert [event[0] for event in recorder.events] == [
        "on_group_started",
        "on_group_passed",
        "on_group_finished",
    ]


def test_a_failing_group_reports_failed_and_keeps_the_trace(shop, tmp_path: Path, browser) -> None:
    recorder = Recorder()
    config = api_config(shop.url, tmp_path / "cache", hooks=[recorder], strict=True)
    with PrettyPlay("failing", config=config, browser=browser) as t:
        with pytest.raises(IncurableStepError), t.group("the checkout") as g:
            g.step("open the shop")
        assert [(tr.sentence, tr.outcome) for tr in g.traces] == [("open the shop", "failed")]
    group_events = [e[0] for e in recorder.events if e[0].startswith("on_group")]
    assert group_events == ["on_group_started", "on_group_failed", "on_group_finished"]


@pytest.mark.parametrize("prompt", ["", "   "])
def test_an_empty_group_prompt_fails_at_entry(shop, tmp_path: Path, prompt: str, browser) -> None:
    with PrettyPlay("empty", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(ValueError, match="a group needs a prompt"):
            t.group(prompt)


def test_a_hook_that_raises_is_logged_and_the_run_goes_on(
    shop, tmp_path: Path, caplog, browser
) -> None:
    class Broken:
        def on_step_started(self, sentence: str) -> None:
            raise RuntimeError("hook bug")

    caches.plant(tmp_path / "cache", "hooks", OPEN)
    with PrettyPlay(
        "hooks", config=api_config(shop.url, tmp_path / "cache", hooks=[Broken()]), browser=browser
    ) as t:
        t.step("open the shop")
    assert any("hook Broken.on_step_started raised" in r.getMessage() for r in caplog.records)


def test_a_page_handed_in_stays_open(shop, tmp_path: Path, page_on) -> None:
    caches.plant(tmp_path / "cache", "mine", OPEN)
    page = page_on(shop.url)
    with PrettyPlay("mine", config=api_config(shop.url, tmp_path / "cache"), page=page) as t:
        t.step("open the shop")
    assert not page.is_closed()
