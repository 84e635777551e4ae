"""A browser killed mid-step and a crashed page: the step errors with a message that says what
happened, nothing is written, and the next test gets a working browser."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from prettyplay_behave import IncurableStepError, PrettyPlay, PrettyPlayError
from prettyplay_behave.runtime import Runtime
from prettyplay_behave.vocabulary import Origin
from tests.conftest import BehaveProject
from tests.faults.support import (
    NEVER,
    PLAYWRIGHT_API_LOG,
    WAITING_ON_NEVER,
    api_config,
    assert_no_processes_left,
    behave_process,
    folder_bytes,
    plant,
    playwright_api_log,
)
from tests.support.llm_server import ScriptedLLMServer
from tests.support.processes import command_name, descendants, kill_all, parent_of, wait_for
from tests.support.shop_steps import HEADING, OPEN_SHOP

# each test's runs own their browsers and Playwright, whose processes the tests kill and count
pytestmark = pytest.mark.own_playwright

CLOSED = "Target page, context or browser has been closed"


def browser_processes(before: set[int]) -> set[int]:
    """The Chromium processes this process started since ``before`` was taken."""
    return {pid for pid in descendants(os.getpid()) - before if "chrom" in command_name(pid)}


class KillOnStep:
    """A hook that kills the given processes once the step named ``sentence`` has started and
    waits on its NEVER locator, as the Playwright driver's API log tells."""

    def __init__(self, sentence: str, pids: set[int], driver_log: Path) -> None:
        self.sentence, self.pids, self.driver_log = sentence, pids, driver_log
        self.thread = threading.Thread(target=self._kill, daemon=True)
        self.failure: AssertionError | None = None

    def on_step_started(self, sentence: str) -> None:
        if sentence == self.sentence:
            self.thread.start()

    def _depth(self, pid: int) -> int:
        """How many of the processes to kill are above ``pid``."""
        depth, parent = 0, parent_of(pid)
        while parent in self.pids:
            depth, parent = depth + 1, parent_of(parent)
        return depth

    def _kill(self) -> None:
        try:
            wait_for(
                lambda: WAITING_ON_NEVER in self.driver_log.read_text(),
                30,
                "the step to wait on its locator",
            )
        except AssertionError as failure:
            self.failure = failure
        # from the top of the tree down: a renderer killed before the browser process would be
        # reported as a crashed page by a browser still alive to see it, not as a killed browser
        for pid in sorted(self.pids, key=self._depth):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def make_runtime(shop, tmp_path: Path, no_llm) -> Iterator[Callable[[], Runtime]]:
    """Runs of their own (each with its own browser), made with the environment of the moment."""
    cache_dir = tmp_path / "cache"
    plant(cache_dir, "doomed", ("step", "wait for something that never comes", NEVER))
    plant(cache_dir, "doomed", ("step", "open the shop", OPEN_SHOP))
    plant(cache_dir, "next", ("step", "open the shop", OPEN_SHOP))
    plant(cache_dir, "next", ("expect", "the heading says Demo Shop", HEADING))
    made: list[Runtime] = []

    def make() -> Runtime:
        made.append(Runtime(api_config(shop.url, cache_dir, settle_ms=1000)))
        return made[-1]

    try:
        yield make
    finally:
        for runtime in made:
            runtime.close()


def kill_mid_step(runtime: Runtime, driver_log: Path) -> tuple[IncurableStepError, float, set[int]]:
    """Run the waiting step and kill the browser during it; the error, its time, the killed."""
    before = descendants(os.getpid())
    with playwright_api_log(driver_log):  # the runtime's driver starts with its first page
        doomed = PrettyPlay("doomed", runtime=runtime)
        assert doomed.page.url == "about:blank"  # the browser is up before anything is killed
    killed = browser_processes(before)
    assert killed, "no browser process found"
    killer = KillOnStep("wait for something that never comes", killed, driver_log)
    runtime.events.add(killer)
    started = time.monotonic()
    try:
        with pytest.raises(IncurableStepError) as caught:
            doomed.step("wait for something that never comes")
    finally:
        elapsed = time.monotonic() - started
        killer.thread.join(timeout=10)
        doomed.close()  # closing what a dead browser held must not raise
    if killer.failure:
        raise killer.failure
    return caught.value, elapsed, killed


def test_a_browser_killed_mid_step_fails_the_step_and_the_next_test_relaunches(
    make_runtime: Callable[[], Runtime], tmp_path: Path
) -> None:
    runtime = make_runtime()
    cache_before = folder_bytes(tmp_path / "cache")
    error, elapsed, killed = kill_mid_step(runtime, tmp_path / "driver.log")
    render = error.render()
    assert render.startswith(
        "IncurableStepError: the cached step failed (the LLM is unavailable to heal it)\n---\n"
        "step: wait for something that never comes\n"
    )
    assert f"TargetClosedError: Locator.wait_for: {CLOSED}" in render
    assert elapsed < 15  # the kill ends the step; it never waits out its 60 s locator
    # the next test of the run gets a new browser and passes
    before = descendants(os.getpid())
    with PrettyPlay("next", runtime=runtime) as following:
        assert following.step("open the shop").origin == "replayed"
        following.expect("the heading says Demo Shop")
        relaunched = browser_processes(before)
    assert relaunched and not relaunched & killed
    assert folder_bytes(tmp_path / "cache") == cache_before
    runtime.close()
    wait_for(lambda: not browser_processes(before), 10, "the relaunched browser to close")


def test_a_killed_browser_is_not_reported_as_a_blocked_navigation(
    make_runtime: Callable[[], Runtime], tmp_path: Path
) -> None:
    error, _, _ = kill_mid_step(make_runtime(), tmp_path / "driver.log")
    assert "allowed_origins" not in error.render()
    assert error.error.startswith("TargetClosedError")


def kill_and_wait(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pids & descendants(os.getpid()), 10, "the killed browser to be gone")


def test_a_browser_that_died_between_tests_is_launched_again(
    make_runtime: Callable[[], Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    runtime = make_runtime()
    before = descendants(os.getpid())
    with PrettyPlay("next", runtime=runtime) as first:
        first.step("open the shop")
        killed = browser_processes(before)
    kill_and_wait(killed)  # nothing has asked the browser anything since
    caplog.set_level(logging.WARNING, logger="prettyplay")
    with PrettyPlay("next", runtime=runtime) as following:
        assert following.step("open the shop").origin == "replayed"
        following.expect("the heading says Demo Shop")
    relaunched = [r for r in caplog.records if getattr(r, "event", "") == "browser_relaunched"]
    assert [r.getMessage() for r in relaunched] == ["the browser was gone; launching it again"]


def test_a_browser_that_died_after_the_last_step_does_not_fail_the_test(
    make_runtime: Callable[[], Runtime],
) -> None:
    runtime = make_runtime()
    before = descendants(os.getpid())
    test = PrettyPlay("next", runtime=runtime)
    assert test.step("open the shop").outcome == "passed"
    killed = browser_processes(before)
    assert killed, "no browser process found"
    kill_and_wait(killed)
    test.close()  # closing what a dead browser held raises nothing
    assert not test.opened
    summary = runtime.summary()
    assert (summary.tests, summary.tests_failed, summary.steps[Origin.REPLAYED]) == (1, 0, 1)
    assert sum(summary.failed.values()) == 0
    # the run goes on: its next test gets a browser of its own
    with PrettyPlay("next", runtime=runtime) as following:
        assert following.step("open the shop").origin == "replayed"
        assert following.expect("the heading says Demo Shop").outcome == "passed"
        relaunched = browser_processes(before)
    assert relaunched and not relaunched & killed
    assert runtime.summary().tests_failed == 0


@pytest.mark.parametrize("with_llm", [False, True], ids=["no LLM", "LLM"])
def test_a_crashed_page_fails_the_step_and_the_next_test_works(
    make_runtime: Callable[[], Runtime],
    llm: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    with_llm: bool,
) -> None:
    if with_llm:  # any request would get a loud "no scripted answer"; none may be sent
        for name, value in llm.env.items():
            monkeypatch.setenv(name, value)
    runtime = make_runtime()
    crashed = PrettyPlay("doomed", runtime=runtime)
    crashed.step("open the shop")
    with pytest.raises(
        PlaywrightError, match=r"^Page\.goto: net::ERR_ABORTED at chrome://crash\n"
    ) as aborted:
        crashed.page.goto("chrome://crash")  # the renderer dies; the browser lives on
    assert type(aborted.value) is PlaywrightError  # not a TargetClosedError
    started = time.monotonic()
    with pytest.raises(PrettyPlayError) as caught:
        crashed.step("wait for something that never comes")
    elapsed = time.monotonic() - started
    crashed.close()
    message = str(caught.value)
    if with_llm:
        assert type(caught.value).__name__ == "PageCaptureError"
        assert message.startswith("could not read the aria snapshot of ")
        assert "Target crashed" in message
        assert llm.requests == []
    else:
        assert isinstance(caught.value, IncurableStepError)
        assert message.startswith("the cached step failed (the LLM is unavailable to heal it)")
        assert "Locator.wait_for: Target crashed" in message
        assert "never settled" not in message  # a crashed page is not a busy page
    # at once: no timeout is waited out (the action's 10 s, the snapshot's 15 s, the locator's 60 s)
    assert elapsed < 8
    with PrettyPlay("next", runtime=runtime) as following:
        assert following.step("open the shop").origin == "replayed"
        following.expect("the heading says Demo Shop")


# -- the same through behave ---------------------------------------------------------------------

FEATURE = """\
Feature: Faults
  Scenario: The page crashes
    Given I open the shop
    When the page crashes
    Then the heading says Demo Shop

  Scenario: The browser dies
    Given I open the shop
    When I wait for something that never comes
    Then the heading says Demo Shop

  Scenario: Visit
    Given I open the shop
    Then the heading says Demo Shop
"""
FAULT_STEPS = """\
from behave import when


@when("the page crashes")
def crash_the_page(context):
    try:
        context.page.goto("chrome://crash")
    except Exception as error:
        assert "ERR_ABORTED" in str(error), error
"""


@pytest.mark.slow
def test_behave_errors_the_crashed_scenarios_and_runs_the_next_one(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/faults.feature", FEATURE)
    project.write("features/steps/fault_steps.py", FAULT_STEPS)
    for scenario in ("The page crashes", "The browser dies", "Visit"):
        test = f"faults.feature::{scenario}"
        plant(project.cache_dir, test, ("step", "I open the shop", OPEN_SHOP))
        plant(project.cache_dir, test, ("expect", "the heading says Demo Shop", HEADING))
    plant(
        project.cache_dir,
        "faults.feature::The browser dies",
        ("step", "I wait for something that never comes", NEVER),
    )
    before = folder_bytes(project.cache_dir)
    with behave_process(
        project,
        "-D", f"prettyplay.base_url={shop.url}",
        "-D", "prettyplay.settle_ms=1000",
        env={**llm.env, **PLAYWRIGHT_API_LOG},
    ) as run:  # fmt: skip
        # the browser dies while the second scenario's step waits on its locator
        wait_for(lambda: WAITING_ON_NEVER in run.output_so_far(), 60, "the waiting step")
        browser = {pid for pid in run.browser_processes() if "chrom" in command_name(pid)}
        kill_all(browser)
        returncode = run.finish(timeout=90)
    output = run.output
    assert returncode == 1, output
    assert "1 scenario passed, 0 failed, 2 error, 0 skipped" in output
    page_crash = output.index("Scenario: The page crashes")
    browser_death = output.index("Scenario: The browser dies")
    visit = output.index("Scenario: Visit")
    crash_report = output[page_crash:browser_death]
    assert "PageCaptureError: could not read the aria snapshot of " in crash_report
    assert "Target crashed" in crash_report
    death_report = output[browser_death:visit]
    assert "Given I open the shop ... passed" in death_report  # a new page after the crash
    assert "PageCaptureError: could not read the aria snapshot of " in death_report
    assert f"Locator.aria_snapshot: {CLOSED}" in death_report
    assert "HOOK-ERROR" not in output
    assert "Given I open the shop ... passed" in output[visit:]
    assert "Then the heading says Demo Shop ... passed" in output[visit:]
    assert llm.requests == []  # no page state could be read, so nothing was asked
    assert folder_bytes(project.cache_dir) == before
    assert_no_processes_left(run.marker)
