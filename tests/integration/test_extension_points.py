"""The extension points, as a project uses them: a steering part of its own handed to a test and
to a behave run, hooks whose misspelt methods are warned about, and failures of the run's own
parts (a settle check, a screenshot) logged, never passed over in silence."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from prettyplay_behave import IncurableStepError, PrettyConfig, PrettyPlay
from prettyplay_behave.browser.settle import Settler
from prettyplay_behave.browser.tabs import Tabs
from prettyplay_behave.cache import CacheKey, CacheStore
from prettyplay_behave.engine.hooks import Events, Hooks
from prettyplay_behave.engine.state import TestState
from prettyplay_behave.engine.steering import StuckStep
from prettyplay_behave.engine.step import StepRun
from prettyplay_behave.report.artifacts import Artifacts
from prettyplay_behave.safety.step_code import check_code
from tests.support import caches
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.shop_steps import ACCEPT, BROKEN_ACCEPT, OPEN_SHOP

INCURABLE = json_answer({"label": "incurable", "explanation": "gone", "recommendation": "-"})


class ScriptedSteering:
    """A steering part of a project's own: it runs known code for the stuck step."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.stuck: list[str] = []

    def steer(self, stuck: StuckStep) -> bool:
        self.stuck.append(stuck.step_run.sentence)
        attempt = stuck.gate(stuck.execute(self.code), "use the Accept button")
        if attempt.outcome != "green":
            return False
        stuck.keep(self.code, "use the Accept button")
        return True


# the shop opens; its cookie banner's button is not where the code looks
SHOP_STEPS = (
    ("step", "I open the shop", OPEN_SHOP),
    ("step", "I accept the cookies", BROKEN_ACCEPT),
)


def test_a_steering_part_handed_to_a_test_takes_the_terminal_dialogs_place(
    shop, tmp_path: Path, browser, llm_env: ScriptedLLMServer, monkeypatch
) -> None:
    monkeypatch.delenv("CI", raising=False)  # steering never opens in CI; this run stands outside
    llm_env.on("classify", INCURABLE)
    llm_env.on("gate", CLEAN_GATE)
    cache = tmp_path / "cache"
    caches.plant(cache, "shop", *SHOP_STEPS)
    steering = ScriptedSteering(ACCEPT)
    config = PrettyConfig(base_url=shop.url, cache_dir=str(cache), interactive=True)
    with PrettyPlay("shop", config=config, browser=browser, steering=steering) as t:
        t.step("I open the shop")
        run = t.step("I accept the cookies")
    assert steering.stuck == ["I accept the cookies"]
    assert (run.outcome, run.origin, run.guidance) == (
        "passed",
        "steered",
        "use the Accept button",
    )
    kept = CacheStore(cache, check_code).lookup(CacheKey("shop", "step", "I accept the cookies"))
    assert kept is not None and kept.code == ACCEPT


def test_without_interactive_the_part_is_never_asked(
    shop, tmp_path: Path, browser, llm_env: ScriptedLLMServer
) -> None:
    llm_env.on("classify", INCURABLE)
    cache = tmp_path / "cache"
    caches.plant(cache, "shop", *SHOP_STEPS)
    steering = ScriptedSteering(ACCEPT)
    config = PrettyConfig(base_url=shop.url, cache_dir=str(cache))
    with PrettyPlay("shop", config=config, browser=browser, steering=steering) as t:
        t.step("I open the shop")
        with pytest.raises(IncurableStepError):
            t.step("I accept the cookies")
    assert steering.stuck == []


ENVIRONMENT = """\
from pathlib import Path

from prettyplay_behave.behave import use_prettyplay


class Logged:
    def steer(self, stuck):
        Path("steered.txt").write_text(stuck.step_run.sentence)
        return False


use_prettyplay(globals(), steering=Logged())
"""
FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    When I accept the cookies
"""


def test_a_behave_run_takes_its_steering_part_from_environment_py(
    project, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/environment.py", ENVIRONMENT)
    project.write("features/shop.feature", FEATURE)
    caches.plant(project.cache_dir, "shop.feature::Visit", *SHOP_STEPS)
    llm.on("classify", INCURABLE)
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.interactive=true", env=llm.env
    )
    assert result.returncode == 1, result
    assert (project.root / "steered.txt").read_text() == "I accept the cookies"


class Misspelt:
    def on_step_start(self, sentence: str) -> None: ...

    def on_healed(self, sentence: str, explanation: str) -> None: ...


def test_a_hook_method_that_no_event_calls_is_warned_about_with_the_name_meant(caplog) -> None:
    with caplog.at_level(logging.WARNING, "prettyplay"):
        Events([Misspelt()])
    warnings = [r.getMessage() for r in caplog.records if getattr(r, "event", "") == "hook_unknown"]
    assert len(warnings) == 1
    assert (
        "Misspelt has on_step_start, which no hook event calls (did you mean on_step_started?)"
        in (warnings[0])
    )


def test_the_hooks_class_names_every_event_and_a_subclass_is_quiet(caplog) -> None:
    class Mine(Hooks):
        def on_step_finished(
            self, sentence: str, outcome: str, step: StepRun, test: TestState
        ) -> None: ...

    with caplog.at_level(logging.WARNING, "prettyplay"):
        Events([Mine()])
    assert not [r for r in caplog.records if getattr(r, "event", "") == "hook_unknown"]


def test_a_settle_check_that_keeps_failing_is_said_when_the_window_ends(
    browser, caplog: pytest.LogCaptureFixture
) -> None:
    page = browser.new_page()
    try:
        page.set_content("<script>performance.now = () => { throw new Error('no clock') }</script>")
        with caplog.at_level(logging.WARNING, "prettyplay"):
            assert Settler(page).settle(300) is False
    finally:
        page.close()
    said = [
        r.getMessage() for r in caplog.records if getattr(r, "event", "") == "settle_check_failed"
    ]
    assert len(said) == 1 and "its check kept failing" in said[0] and "no clock" in said[0], said


def test_a_screenshot_that_cannot_be_taken_is_said(browser, tmp_path: Path, caplog) -> None:
    page = browser.new_page()
    try:
        test = TestState("crashed", PrettyConfig().for_test(), Tabs(page))
        artifacts = Artifacts(tmp_path)
        with contextlib.suppress(PlaywrightError):  # the navigation dies with the page
            page.goto("chrome://crash", timeout=3000)
        with caplog.at_level(logging.WARNING, "prettyplay"):
            assert artifacts.screenshot(test) is None
    finally:
        page.close()
    said = [r.getMessage() for r in caplog.records if getattr(r, "event", "") == "artifact_lost"]
    assert said and said[0].startswith("the screenshot of crashed could not be kept: "), said


PROVIDER_ENVIRONMENT = """\
from prettyplay_behave.behave import use_prettyplay
from prettyplay_behave.llm.provider import Answer

CODE = {
    "generate": "```python\\ndef step(page) -> None:\\n    page.goto('/')\\n```",
    "gate": '{"findings": []}',
}


class Canned:
    \"\"\"A provider of the project's own: no openai client, no key, no server.\"\"\"

    where = "a canned provider"

    def unavailable_reason(self):
        return None

    def complete(self, completion):
        with open("asked.txt", "a") as asked:
            asked.write(f"{completion.purpose} {completion.model} {completion.step}\\n")
        return Answer(CODE[str(completion.purpose)], "stop", 10, 5)


use_prettyplay(globals(), provider=Canned())
"""


def test_a_behave_run_takes_its_provider_from_environment_py(project, shop) -> None:
    project.write("features/environment.py", PROVIDER_ENVIRONMENT)
    project.write(
        "features/shop.feature", "Feature: Shop\n  Scenario: Visit\n    Given I open the shop\n"
    )
    result = project.run("-D", f"prettyplay.base_url={shop.url}")  # no OPENAI_ variable at all
    assert result.returncode == 0, result
    assert (project.root / "asked.txt").read_text().splitlines() == [
        "generate gpt-4.1-mini I open the shop",
        "gate gpt-4.1-mini I open the shop",
    ]
    assert "LLM: 2 requests, 30 tokens" in result.output


class Objects:
    """A hook that takes the objects behind an event, by name."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def on_step_finished(self, step, test) -> None:
        self.seen.append(("finished", step.sentence, step.origin, test.name, test.page.url))

    def on_healing_started(self, verdict, step) -> None:
        self.seen.append(("healing", verdict.label, verdict.explanation, step.sentence))

    def on_healed(self, step, verdict, explanation) -> None:
        self.seen.append(("healed", step.code.splitlines()[1].strip(), verdict.label, explanation))


def test_a_hook_takes_the_step_the_test_and_the_verdict_by_name(
    shop, tmp_path: Path, browser, llm_env: ScriptedLLMServer
) -> None:
    cache = tmp_path / "cache"
    caches.plant(cache, "shop", *SHOP_STEPS)
    llm_env.on("classify", json_answer({"label": "rot", "explanation": "renamed",
                                        "recommendation": "-"}))  # fmt: skip
    llm_env.on("heal", code_answer(ACCEPT))
    llm_env.on("gate", CLEAN_GATE)
    hook = Objects()
    config = PrettyConfig(base_url=shop.url, cache_dir=str(cache), hooks=(hook,))
    with PrettyPlay("shop", config=config, browser=browser) as t:
        t.step("I open the shop")
        t.step("I accept the cookies")
    assert hook.seen == [
        ("finished", "I open the shop", "replayed", "shop", shop.url + "/"),
        ("healing", "rot", "renamed", "I accept the cookies"),
        ("healed", 'page.get_by_role("button", name="Accept cookies").click()', "rot",
         "healed (rot): renamed"),
        ("finished", "I accept the cookies", "healed", "shop", shop.url + "/"),
    ]  # fmt: skip


class AsksTooMuch:
    def on_step_finished(self, sentence, duration) -> None: ...


class ByPosition:
    def on_healed(self, sentence, /) -> None: ...


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (AsksTooMuch(), "hook AsksTooMuch.on_step_finished asks for 'duration', which the event "
         "does not give; it gives: sentence, outcome, step, test"),
        (ByPosition(), "hook ByPosition.on_healed takes 'sentence' by position only; hook methods "
         "take their values by name, of: sentence, explanation, step, test, verdict"),
    ],
    ids=["an unknown value", "by position"],
)  # fmt: skip
def test_a_hook_is_checked_when_it_is_added(hook: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        Events([hook])
    assert str(caught.value) == message
