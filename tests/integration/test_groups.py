"""Groups: group-aware requests, suppressed per-step classification, and the diagnosis-driven
recovery with its cycles and budgets, on the demo shop's changed UI."""

from __future__ import annotations

import functools
import logging
import shutil
from pathlib import Path

import pytest

from prettyplay_behave import (
    IncurableStepError,
    PrettyPlay,
    ProductDefectError,
    ProviderUnavailableError,
)
from tests.conftest import BehaveProject, HealedExamples
from tests.support.caches import by_sentence, plant, steps
from tests.support.changed_ui import CHECKOUT
from tests.support.healing_run import READS_HEALED_EXAMPLES
from tests.support.hooks import Recorder
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
    server_error,
)
from tests.support.settings import api_config
from tests.support.shop_steps import OPEN_SHOP

ACCEPT_OLD = (
    "def step(page) -> None:\n"
    '    page.get_by_role("button", name="Accept cookies").click(timeout=500)\n'
)
ACCEPT_NEW = 'def step(page) -> None:\n    page.get_by_role("button", name="Allow all").click()\n'
# In the changed UI the products come in reverse order: the second button is another product.
CHOOSE_OLD = (
    "def step(page) -> None:\n"
    '    page.get_by_role("button", name=re.compile("^Add to")).nth(1).click()\n'
)
CHOOSE_NEW = (
    "def step(page) -> None:\n"
    '    tea = page.get_by_role("article", name="Green Tea")\n'
    '    tea.get_by_role("button", name=re.compile("^Add to")).click()\n'
)
# Steps that should pass get room to do so on a loaded machine; only the ones meant to fail
# (a control that no longer exists) keep short timeouts.
CHECK_TEA = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("status")).to_contain_text("Green Tea", timeout=3000)\n'
)
PROMPT = "put a green tea in the basket"


def diagnosis(label: str, root: str | None, explanation: str = "", recommendation: str = "") -> str:
    return json_answer(
        {
            "label": label,
            "root_step": root,
            "explanation": explanation or f"diagnosed {label}",
            "recommendation": recommendation or f"recommended for {label}",
        }
    )


def root_is_the_failed_step(request: RecordedRequest) -> str:
    return diagnosis("recoverable", request.step, "the controls were relabelled")


@pytest.fixture
def changed(fresh_shop):
    fresh_shop.set_variant("changed-ui")
    return fresh_shop


# every test's steps act within 3 s
config = functools.partial(api_config, action_timeout_ms=3_000)


def origins(cache_dir: Path, feature: str | None = None) -> dict[str, str]:
    return {sentence: e["origin"] for sentence, e in by_sentence(cache_dir, feature).items()}


def test_a_root_in_an_earlier_step_recovers_the_whole_row(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, caplog: pytest.LogCaptureFixture, browser
) -> None:
    cache = plant(
        tmp_path / "cache",
        "t",
        ("step", "open the shop", OPEN_SHOP),
        ("step", "allow the cookies", ACCEPT_NEW),
        ("step", "choose the green tea", CHOOSE_OLD),
        ("expect", "the shop says the green tea was added", CHECK_TEA),
    )
    llm_env.on(
        "diagnose",
        diagnosis(
            "recoverable",
            "choose the green tea",
            "the second button now adds another product",
            "pick the product by its name",
        ),
    )
    llm_env.on("heal", code_answer(CHOOSE_NEW), step="choose the green tea")
    llm_env.on("heal", code_answer(CHECK_TEA), step="the shop says the green tea was added")
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    recorder = Recorder()
    caplog.set_level(logging.INFO, logger="prettyplay")
    with PrettyPlay(
        "t", config=config(changed.url, tmp_path / "cache", hooks=[recorder]), browser=browser
    ) as t:
        t.step("open the shop")
        t.step("allow the cookies")
        with t.group(PROMPT) as g:
            g.step("choose the green tea")
            g.expect("the shop says the green tea was added")
        traces = [(tr.sentence, tr.outcome) for tr in g.traces]
    assert traces == [
        ("choose the green tea", "passed"),
        ("the shop says the green tea was added", "failed"),  # the verbatim failed record
    ]
    assert [r.purpose for r in llm_env.requests] == ["diagnose", "heal", "gate", "heal", "gate"]
    diagnose = llm_env.requests_for("diagnose")[0]
    assert diagnose.model == "gpt-4.1-mini" and diagnose.temperature == 0
    text = diagnose.content("user")
    assert "GROUP PROMPT" in text and PROMPT in text
    assert "- choose the green tea (passed; URL:" in text
    heal = llm_env.requests_for("heal")[0].content("user")
    assert "recoverable" in heal and "pick the product by its name" in heal and PROMPT in heal
    assert origins(cache) == {
        "open the shop": "generated",
        "allow the cookies": "generated",
        "choose the green tea": "recovered",
        "the shop says the green tea was added": "recovered",
    }
    healed = "healed (recoverable): the second button now adds another product"
    assert recorder.events == [
        ("on_step_started", "open the shop"),
        ("on_step_finished", "open the shop", "passed"),
        ("on_step_started", "allow the cookies"),
        ("on_step_finished", "allow the cookies", "passed"),
        ("on_group_started", PROMPT),
        ("on_step_started", "choose the green tea"),
        ("on_step_finished", "choose the green tea", "passed"),
        ("on_step_started", "the shop says the green tea was added"),
        ("on_step_finished", "the shop says the green tea was added", "failed"),
        ("on_healing_started", "choose the green tea", "recoverable"),
        ("on_healed", "choose the green tea", healed),
        ("on_healing_started", "the shop says the green tea was added", "recoverable"),
        ("on_healed", "the shop says the green tea was added", healed),
        ("on_group_passed", PROMPT),
        ("on_group_finished", PROMPT),
    ]  # fmt: skip
    events = [getattr(r, "event", "") for r in caplog.records]
    assert events.count("group_diagnosed") == 1
    assert events.count("group_row_recovered") == 2


def group_with_old_banner(tmp_path: Path) -> Path:
    return plant(
        tmp_path / "cache",
        "t",
        ("step", "open the shop", OPEN_SHOP),
        ("step", "accept the cookie banner", ACCEPT_OLD),
    )


def run_banner_group(shop, tmp_path: Path, browser, **changes) -> None:
    with PrettyPlay(
        "t", config=config(shop.url, tmp_path / "cache", **changes), browser=browser
    ) as t:
        with t.group(PROMPT) as g:
            g.step("open the shop")
            g.step("accept the cookie banner")


def test_a_repeat_failure_takes_a_second_cycle(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    cache = group_with_old_banner(tmp_path)
    llm_env.on("diagnose", root_is_the_failed_step, repeat=True)
    llm_env.on("heal", code_answer(ACCEPT_OLD), code_answer(ACCEPT_OLD), code_answer(ACCEPT_NEW))
    llm_env.on("gate", CLEAN_GATE)
    run_banner_group(changed, tmp_path, browser)
    purposes = [r.purpose for r in llm_env.requests]
    assert purposes == ["diagnose", "heal", "heal", "diagnose", "heal", "gate"]
    assert origins(cache)["accept the cookie banner"] == "recovered"
    # the second diagnosis sees the fresh failures in the step's history
    assert llm_env.requests_for("diagnose")[1].content("user").count("click(timeout=500)") == 3


@pytest.mark.parametrize("cap", [1, 2])
def test_the_cycle_cap_ends_terminal_within_cap_times_cap_heals(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, cap: int, browser
) -> None:
    cache = group_with_old_banner(tmp_path)
    original = steps(cache)
    llm_env.on("diagnose", root_is_the_failed_step, repeat=True)
    llm_env.on("heal", code_answer(ACCEPT_OLD), repeat=True)
    with pytest.raises(IncurableStepError) as caught:
        run_banner_group(changed, tmp_path, browser, healing_attempts=cap)
    assert caught.value.render().startswith(
        f"IncurableStepError: the group's recovery cycles are exhausted ({cap})\n---\n"
    )
    assert len(llm_env.requests_for("diagnose")) == cap
    assert len(llm_env.requests_for("heal")) == cap * cap
    assert llm_env.requests_for("classify") == []
    assert steps(cache) == original


def test_two_groups_with_one_prompt_share_the_cap(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    wrong_check = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Shop", timeout=300)\n'
    )
    plant(
        tmp_path / "cache",
        "t",
        ("step", "open the shop", OPEN_SHOP),
        ("step", "accept the cookie banner", ACCEPT_OLD),
        ("expect", "the heading names the shop", wrong_check),
    )
    llm_env.on("diagnose", root_is_the_failed_step, repeat=True)
    llm_env.on("heal", code_answer(ACCEPT_NEW))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay(
        "t", config=config(changed.url, tmp_path / "cache", healing_attempts=1), browser=browser
    ) as t:
        with t.group(PROMPT) as first:
            first.step("open the shop")
            first.step("accept the cookie banner")  # recovered: the one cycle is spent
        with pytest.raises(IncurableStepError, match="recovery cycles are exhausted"):
            with t.group(PROMPT) as second:
                second.expect("the heading names the shop")
    assert len(llm_env.requests_for("diagnose")) == 1


@pytest.mark.parametrize(
    ("answer", "error", "headline"),
    [
        (
            diagnosis("product_defect", "accept the cookie banner", "consent is broken"),
            ProductDefectError,
            "ProductDefectError: the product does not do what the step says",
        ),
        (
            diagnosis("recoverable", "log in as Ann", "the login went wrong"),
            IncurableStepError,
            "IncurableStepError: the diagnosis traces the failure to 'log in as Ann', "
            "a step outside the group",
        ),
        (
            diagnosis("incurable", None, "there is no way to consent"),
            IncurableStepError,
            "IncurableStepError: the group cannot recover",
        ),
        (
            "the banner changed, probably",
            IncurableStepError,
            "IncurableStepError: the group cannot recover",
        ),
    ],
    ids=["product_defect", "root_outside", "incurable", "garbage"],
)
def test_terminal_diagnoses_are_never_healed(
    changed,
    tmp_path: Path,
    llm_env: ScriptedLLMServer,
    caplog: pytest.LogCaptureFixture,
    answer: str,
    error: type[Exception],
    headline: str,
    browser,
) -> None:
    cache = group_with_old_banner(tmp_path)
    original = steps(cache)
    llm_env.on("diagnose", answer)
    caplog.set_level(logging.INFO, logger="prettyplay")
    recorder = Recorder()
    with pytest.raises(error) as caught:
        run_banner_group(changed, tmp_path, browser, hooks=[recorder])
    assert str(caught.value.render()).startswith(headline + "\n---\n")  # type: ignore[attr-defined]
    assert [r.purpose for r in llm_env.requests] == ["diagnose"]
    # nothing healed; the group's verdict is remembered on the step that failed
    shared = [e for e in steps(cache) if "scenario" not in e]
    assert shared == original
    red = [(e["sentence"], e["verdict"]["label"]) for e in steps(cache) if "verdict" in e]
    # a verdict of this group (not a root elsewhere, not an answer that could not be read)
    label = next((word for word in ('"product_defect"', '"incurable"') if word in answer), "")
    assert [found for _, found in red] == ([label.strip('"')] if label else [])
    assert [e[0] for e in recorder.events if e[0].startswith("on_group")] == [
        "on_group_started",
        "on_group_failed",
        "on_group_finished",
    ]
    if answer.startswith("the banner"):
        degraded = [
            r for r in caplog.records if getattr(r, "event", "") == "group_diagnosis_degraded"
        ]
        assert degraded and degraded[0].levelno == logging.WARNING
        assert "the banner changed, probably" in degraded[0].getMessage()


def test_strict_group_steps_only_classify(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    cache = group_with_old_banner(tmp_path)
    original = steps(cache)
    llm_env.on(
        "classify",
        json_answer({"label": "rot", "explanation": "relabelled", "recommendation": "heal"}),
    )
    with pytest.raises(IncurableStepError, match=r"strict: replay only"):
        run_banner_group(changed, tmp_path, browser, strict=True)
    assert [r.purpose for r in llm_env.requests] == ["classify"]
    assert steps(cache) == original


def test_group_generation_is_framed_and_never_classified(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP))
    wrong_check = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Shop", timeout=300)\n'
    )
    llm_env.on("generate", code_answer(ACCEPT_NEW), step="accept the cookie banner")
    llm_env.on("generate", code_answer(wrong_check), code_answer(wrong_check), step="heading")
    llm_env.on("gate", CLEAN_GATE)
    llm_env.on("diagnose", diagnosis("incurable", None, "cannot tell"))
    with PrettyPlay(
        "t", config=config(changed.url, tmp_path / "cache", generation_attempts=2), browser=browser
    ) as t:
        with pytest.raises(IncurableStepError, match="the group cannot recover"):
            with t.group(PROMPT) as g:
                g.step("open the shop")
                g.step("accept the cookie banner")
                g.expect("the heading names the shop")
    generate = llm_env.requests_for("generate")
    assert len(generate) == 3
    for request in generate:
        user = request.content("user")
        assert "GROUP PROMPT" in user and PROMPT in user
    assert f"- open the shop [group step — {PROMPT}]" in generate[0].content("user")
    # a failed check and an exhausted budget of a group step are never classified on their own
    assert llm_env.requests_for("classify") == []
    assert [r.purpose for r in llm_env.requests][-1] == "diagnose"


def test_membership_stays_in_the_scenario_records(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP))
    llm_env.on("generate", code_answer(ACCEPT_NEW))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=config(changed.url, tmp_path / "cache"), browser=browser) as t:
        with t.group(PROMPT) as g:
            g.step("open the shop")
        t.step("accept the cookie banner")  # an ordinary step after the block
    user = llm_env.requests_for("generate")[0].content("user")
    assert f"- open the shop [group step — {PROMPT}]" in user
    assert "GROUP PROMPT" not in user


BANNER = "I accept the cookie banner"


@pytest.mark.slow
@pytest.mark.xdist_group(READS_HEALED_EXAMPLES)
def test_the_group_example_recovers_a_changed_ui_under_behave(
    healed_examples: HealedExamples, tmp_path: Path, changed
) -> None:
    """The examples' behave run against the changed UI (shared with the report's tests): the
    checkout group recovers, then replays strictly."""
    # the cookie banner of the checkout's Background was healed before, in the cart's
    broken = sorted(set(CHECKOUT) - {BANNER})
    requests = [r for r in healed_examples.requests if str(r.step) in broken]
    # every broken step recovered in one cycle of its own: one diagnosis, one heal, a gate
    diagnosed = [str(r.step) for r in requests if r.purpose == "diagnose"]
    assert sorted(diagnosed) == broken
    assert sorted(str(r.step) for r in requests if r.purpose == "heal") == broken
    assert {str(r.step) for r in requests if r.purpose == "gate"} == set(broken)
    assert [r for r in requests if r.purpose == "classify"] == []
    root = Path(shutil.copytree(healed_examples.root, tmp_path / "repo"))
    entries = origins(root / "features/.prettyplay", "shop/checkout.feature")
    assert sorted(s for s, origin in entries.items() if origin == "recovered") == broken
    assert entries[BANNER] == "healed"
    again = BehaveProject(root).run(
        "features/shop/checkout.feature",
        "-D", f"prettyplay.base_url={changed.url}",
        "-D", "prettyplay.strict=true",
    )  # fmt: skip
    assert again.returncode == 0, again
    assert "prettyplay: LLM: 0 requests" in again.output


def test_a_diagnosis_that_fails_keeps_the_groups_red_step_in_sight(
    changed, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    group_with_old_banner(tmp_path)
    llm_env.on("diagnose", server_error(), repeat=True)
    with pytest.raises(ProviderUnavailableError) as caught:
        run_banner_group(changed, tmp_path, browser)
    message = str(caught.value)
    assert message.startswith(
        "the cached step failed\n---\nstep: accept the cookie banner\nerror: TimeoutError: "
    ), message
    assert "… and the group's diagnosis failed: the LLM is unavailable: " in message
    assert "kept failing (HTTP 500" in message
    assert [r.purpose for r in llm_env.requests] == ["diagnose"]
