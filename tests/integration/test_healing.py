"""Classification and self-healing: a changed UI heals, a broken product fails red and is never
healed, strict runs only classify, and no path exceeds its budgets."""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
from pathlib import Path

import pytest

from prettyplay_behave import (
    IncurableStepError,
    PrettyPlay,
    ProductDefectError,
    RedStepError,
)
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from prettyplay_behave.runtime import Runtime
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import BehaveProject, HealedExamples
from tests.support.caches import by_sentence, cache_bytes, filled, plant, steps
from tests.support.changed_ui import CART
from tests.support.healing_run import READS_HEALED_EXAMPLES, ROT
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.settings import api_config
from tests.support.shop_steps import ACCEPT, BROKEN_ACCEPT, OPEN_SHOP, ORDER_A_TEA


def verdict(label: str, explanation: str = "", recommendation: str = "") -> str:
    return json_answer(
        {
            "label": label,
            "explanation": explanation or f"judged {label}",
            "recommendation": recommendation or f"what to do about {label}",
        }
    )


# the example cart's sentences that the changed UI breaks (all but "I open the shop")
BROKEN_IN_THE_CART = [
    "I accept the cookie banner", 'I add the "Blue Mug" to the cart',
    "the cart link shows 1 item", "I open the cart", "the cart says that it is empty",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.xdist_group(READS_HEALED_EXAMPLES)
def test_a_changed_ui_heals_and_the_next_run_replays(
    healed_examples: HealedExamples, tmp_path: Path, fresh_shop
) -> None:
    """The examples' behave run against the changed UI (shared with the report's tests): the
    cart heals, then replays strictly."""
    requests = [r for r in healed_examples.requests if str(r.step) in BROKEN_IN_THE_CART]
    # per broken step: one classify, one heal, a gate of it, in the whole run; the background
    # step heals in the first scenario that meets it, and every later one replays that heal
    broken = [str(r.step) for r in requests if r.purpose == "classify"]
    assert sorted(broken) == sorted(BROKEN_IN_THE_CART)
    assert sorted(str(r.step) for r in requests if r.purpose == "heal") == sorted(broken)
    assert {str(r.step) for r in requests if r.purpose == "gate"} == set(broken)
    assert [r for r in requests if r.purpose == "generate"] == []
    heal = next(r for r in requests if r.purpose == "heal").content("user")
    assert "VERDICT ON THE FAILURE: rot" in heal and ROT in heal
    root = Path(shutil.copytree(healed_examples.root, tmp_path / "repo"))
    cache = root / "features" / ".prettyplay"
    entries = by_sentence(cache, "shop/cart.feature")
    # the Background step is one entry of the library: healed once, for both
    assert entries["I accept the cookie banner"]["origin"] == "healed"
    assert entries["I accept the cookie banner"]["code"] == (
        CART["I accept the cookie banner"].splitlines()
    )
    assert entries["I open the shop"]["origin"] == "generated"  # untouched
    # replaced in place: one entry a sentence, none pinned to a scenario
    cart = [e for e in steps(cache) if filled(e) in [*BROKEN_IN_THE_CART, "I open the shop"]]
    assert len(cart) == 6 and not any("scenario" in e for e in cart)
    fresh_shop.set_variant("changed-ui")
    again = BehaveProject(root).run(
        "features/shop/cart.feature",
        "-D", f"prettyplay.base_url={fresh_shop.url}",
        "-D", "prettyplay.strict=true",
    )  # fmt: skip
    assert again.returncode == 0, again
    assert "prettyplay: LLM: 0 requests" in again.output


DEFECT_FEATURE = """\
Feature: Orders
  Scenario: Order a tea
    Given I order a tea
    Then the order is confirmed
"""
ORDER_CODE = ORDER_A_TEA
CONFIRMED = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("status")).to_have_text("order confirmed", timeout=3000)\n'
)


def order_project(project: BehaveProject) -> Path:
    """The order feature and its cache folder."""
    project.write("features/orders.feature", DEFECT_FEATURE)
    plant(
        project.cache_dir, "orders.feature::Order a tea",
        ("step", "I order a tea", ORDER_CODE), ("expect", "the order is confirmed", CONFIRMED),
    )  # fmt: skip
    return project.cache_dir


def test_a_broken_product_fails_red_and_is_never_healed(
    project: BehaveProject, fresh_shop, llm: ScriptedLLMServer
) -> None:
    fresh_shop.set_variant("broken-product")
    cache = order_project(project)
    original = steps(cache)
    llm.on(
        "classify",
        verdict(
            "product_defect",
            "the order status says the payment service is unavailable",
            "fix the payment service; the step is right",
        ),
    )
    result = project.run("-D", f"prettyplay.base_url={fresh_shop.url}", env=llm.env)
    assert result.returncode == 1, result
    assert "Then the order is confirmed ... failed" in result.output
    assert "1 step passed, 1 failed, 0 skipped" in result.output
    assert "ProductDefectError: the product does not do what the step says\n" in result.output
    assert "step: the order is confirmed" in result.output
    assert "explanation: the order status says the payment service is unavailable" in result.output
    assert "recommendation: fix the payment service; the step is right" in result.output
    assert "order failed: payment service unavailable" in result.output
    assert [r.purpose for r in llm.requests] == ["classify"]
    # the verdict is remembered: the shared entry is untouched, a red pin holds the verdict
    shared = [e for e in steps(cache) if "scenario" not in e]
    assert shared == original
    red = [e for e in steps(cache) if "verdict" in e]
    assert [(e["sentence"], e["scenario"], e["verdict"]["label"]) for e in red] == [
        ("the order is confirmed", "Order a tea", "product_defect")
    ]


# a red step fails within 2 s
config = functools.partial(api_config, action_timeout_ms=2_000)


def plant_broken(tmp_path: Path) -> Path:
    """The shop opens; the cookie banner's button is not where the code looks."""
    accept = ("step", "accept the cookie banner", BROKEN_ACCEPT)
    return plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP), accept)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def on_healing_started(self, sentence: str, category: str) -> None:
        self.events.append(("on_healing_started", sentence, category))

    def on_healed(self, sentence: str, explanation: str) -> None:
        self.events.append(("on_healed", sentence, explanation))


def test_a_fixable_step_heals_with_hooks_and_history(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    cache = plant_broken(tmp_path)
    recorder = Recorder()
    llm_env.on("classify", verdict("fixable", "the locator names no real button"))
    llm_env.on("heal", code_answer(BROKEN_ACCEPT), code_answer(ACCEPT))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay(
        "t", config=config(shop.url, tmp_path / "cache", hooks=[recorder]), browser=browser
    ) as t:
        t.step("open the shop")
        run = t.step("accept the cookie banner")
    assert run.origin == "healed"
    assert [a.outcome for a in run.history] == ["red", "red"]
    assert recorder.events == [
        ("on_healing_started", "accept the cookie banner", "fixable"),
        (
            "on_healed",
            "accept the cookie banner",
            "healed (fixable): the locator names no real button",
        ),
    ]
    heals = llm_env.requests_for("heal")
    # record 0 of every heal request is the failed replay
    assert "0." in heals[0].content("user") and 'name="Consent"' in heals[0].content("user")
    assert heals[1].content("user").count("click(timeout=300)") == 2  # both records, whole
    assert [r.purpose for r in llm_env.requests] == ["classify", "heal", "heal", "gate"]
    assert sorted(e["origin"] for e in steps(cache)) == ["generated", "healed"]


@pytest.mark.parametrize(
    ("classify", "heals", "headline"),
    [
        (
            verdict("incurable", "no cookie banner exists"),
            [],
            "the cached step failed and cannot be healed",
        ),
        ("I think it is rot, probably.", [], "the cached step failed and cannot be healed"),
        (verdict("rot"), [BROKEN_ACCEPT, BROKEN_ACCEPT], "the healing budget is exhausted"),
    ],
    ids=["incurable", "garbage", "exhausted"],
)
def test_terminal_verdicts_end_incurable_with_their_headline(
    shop,
    tmp_path: Path,
    llm_env: ScriptedLLMServer,
    caplog: pytest.LogCaptureFixture,
    classify: str,
    heals: list[str],
    headline: str,
    browser,
) -> None:
    cache = plant_broken(tmp_path)
    original = cache_bytes(cache)
    llm_env.on("classify", classify)
    if heals:
        llm_env.on("heal", *(code_answer(code) for code in heals))
    caplog.set_level(logging.WARNING, logger="prettyplay")
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(IncurableStepError) as caught:
            t.step("accept the cookie banner")
    assert caught.value.render().startswith(f"IncurableStepError: {headline}\n---\n")
    red = [e for e in steps(cache) if "verdict" in e]
    if '"incurable"' not in classify:  # an unread verdict, or an exhausted heal, is no verdict
        assert cache_bytes(cache) == original
    else:
        assert [(e["sentence"], e["verdict"]["label"]) for e in red] == [
            ("accept the cookie banner", "incurable")
        ]
    assert len(llm_env.requests_for("classify")) == 1
    assert len(llm_env.requests_for("heal")) == len(heals) <= 2
    if classify.startswith("I think"):
        degraded = [
            r for r in caplog.records if getattr(r, "event", "") == "classification_degraded"
        ]
        assert degraded and "I think it is rot, probably." in degraded[0].getMessage()


def test_a_freshly_generated_check_that_fails_is_classified_at_once(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    store = CacheStore(tmp_path / "cache", validate=check_code)
    store.write(CacheWrite(CacheKey("t", "step", "open the shop"), OPEN_SHOP, "generated"))
    wrong_heading = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome", timeout=500)\n'
    )
    llm_env.on("generate", code_answer(wrong_heading))
    llm_env.on("classify", verdict("product_defect", "the page has no welcome heading"))
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(ProductDefectError, match="the page has no welcome heading"):
            t.expect("the page welcomes the shopper")
    assert [r.purpose for r in llm_env.requests] == ["generate", "classify"]


def test_a_failed_check_classified_rot_regenerates_within_the_budget(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    wrong = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Shop", timeout=500)\n'
    )
    right = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Shop")\n'
    )
    store = CacheStore(tmp_path / "cache", validate=check_code)
    store.write(CacheWrite(CacheKey("t", "step", "open the shop"), OPEN_SHOP, "generated"))
    llm_env.on("generate", code_answer(wrong), code_answer(right))
    llm_env.on("classify", verdict("fixable", "exact text differs"))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        assert t.expect("the heading names the shop").origin == "generated"
    assert [r.purpose for r in llm_env.requests] == ["generate", "classify", "generate", "gate"]


def test_an_exhausted_generation_budget_is_classified(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", "no code", "still no code")
    llm_env.on("classify", verdict("incurable", "the answers never held code"))
    with PrettyPlay(
        "t", config=config(shop.url, tmp_path / "cache", generation_attempts=2), browser=browser
    ) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
    render = caught.value.render()
    assert render.startswith("IncurableStepError: the generation budget is exhausted\n---\n")
    assert "explanation: the answers never held code" in render
    assert [r.purpose for r in llm_env.requests] == ["generate", "generate", "classify"]


def test_strict_classifies_once_and_writes_nothing(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    cache = plant_broken(tmp_path)
    original = cache_bytes(cache)
    llm_env.on("classify", verdict("rot", "the banner changed"))
    with PrettyPlay(
        "t", config=config(shop.url, tmp_path / "cache", strict=True), browser=browser
    ) as t:
        t.step("open the shop")
        with pytest.raises(RedStepError) as caught:  # a red strict replay is a failure
            t.step("accept the cookie banner")
    assert caught.value.render().startswith(
        "RedStepError: the cached step failed (strict: replay only)\n---\n"
    )
    assert "explanation: the banner changed" in caught.value.render()
    assert [r.purpose for r in llm_env.requests] == ["classify"]
    assert cache_bytes(cache) == original


def test_strict_without_llm_makes_no_request(
    shop, tmp_path: Path, llm: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch, browser
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    cache = plant_broken(tmp_path)
    original = cache_bytes(cache)
    with PrettyPlay(
        "t", config=config(shop.url, tmp_path / "cache", strict=True), browser=browser
    ) as t:
        t.step("open the shop")
        with pytest.raises(IncurableStepError, match=r"strict: replay only"):
            t.step("accept the cookie banner")
    assert llm.requests == []
    assert cache_bytes(cache) == original


# the cookie button by an id the shop never had: no rename of the other feature's code
ELSEWHERE_ACCEPT = 'def step(page) -> None:\n    page.locator("#consent").click(timeout=300)\n'


def test_a_heal_serves_the_same_step_of_another_feature_with_no_request(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    """A red replay first tries the code that healed the same step earlier in the run, for a
    feature with code of its own too: green, it is healed with no request of its own."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    broken = {"a.feature::Shop": BROKEN_ACCEPT, "b.feature::Shop": ELSEWHERE_ACCEPT}
    store.write(
        CacheWrite(CacheKey("a.feature::Shop", "step", "open the shop"), OPEN_SHOP, "generated")
    )
    banner = CacheKey("a.feature::Shop", "step", "accept the cookie banner")
    store.write(CacheWrite(banner, BROKEN_ACCEPT, "generated"))
    # b.feature has code of its own for the step (as a migration keeps where features differed)
    own = CacheWrite(banner, ELSEWHERE_ACCEPT, "generated").library_entry()
    store.keep([dataclasses.replace(own, feature="b.feature")])
    llm_env.on("classify", verdict("rot", "the button was renamed"))
    llm_env.on("heal", code_answer(ACCEPT))
    llm_env.on("gate", CLEAN_GATE)
    runtime = Runtime(config(shop.url, tmp_path / "cache"), browser=browser)
    healed = []
    try:
        for test in broken:
            with PrettyPlay(test, runtime=runtime) as t:
                t.step("open the shop")
                healed.append(t.step("accept the cookie banner"))
    finally:
        runtime.close()
    assert [r.purpose for r in llm_env.requests] == ["classify", "heal", "gate"]
    assert [run.origin for run in healed] == ["healed", "healed"]
    assert "healed with the code that healed this step in 'a.feature::Shop'" in (
        healed[1].healed_by
    )
    assert (
        by_sentence(tmp_path / "cache", "b.feature")["accept the cookie banner"]["code"]
        == ACCEPT.splitlines()
    )
