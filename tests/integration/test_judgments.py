"""Judgments that see what they judge: the gate sees what a candidate did to the page, a
classification sees the scenario's code and may blame an earlier step, and a sentence answered
green once in a run is not asked about again."""

from __future__ import annotations

from pathlib import Path

import pytest

from prettyplay_behave import PrettyPlay, RedStepError
from prettyplay_behave.runtime import Runtime
from tests.conftest import BehaveProject
from tests.support.caches import by_sentence, plant, steps
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.settings import api_config
from tests.support.shop_steps import ACCEPT, HEADING, OPEN_SHOP

ADD_TEA = (
    "def step(page) -> None:\n"
    '    tea = page.get_by_role("listitem").filter(has_text="Green Tea")\n'
    '    tea.get_by_role("button", name="Add to cart").click()\n'
)
CART_HAS_ONE = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("link", name=re.compile("^Cart"))).to_have_text("Cart (1)")\n'
)
SHARED = """\
Feature: Shop
  Background:
    Given I open the shop
    And I accept the cookie banner

  Scenario: Look around
    Then the heading says Demo Shop

  Scenario: Buy a tea
    When I add the "Green Tea" to the cart
    Then the cart link shows 1 item

  Scenario: Buy a tea again
    When I add the "Green Tea" to the cart
    Then the cart link shows 1 item
    And the heading says Demo Shop
"""
# another feature, after the shop's in the run: its steps replay the entries the shop's steps
# wrote (one library for the project), with no request and no copy
TOUR = """\
Feature: Tour
  Scenario: Look around once more
    Given I open the shop
    And I accept the cookie banner
    Then the heading says Demo Shop
"""
ANSWERS = {
    "I open the shop": OPEN_SHOP,
    "I accept the cookie banner": ACCEPT,
    "the heading says Demo Shop": HEADING,
    'I add the "Green Tea" to the cart': ADD_TEA,
    "the cart link shows 1 item": CART_HAS_ONE,
}


@pytest.mark.slow
def test_each_distinct_sentence_is_generated_and_gated_once_a_run(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", SHARED)
    project.write("features/tour.feature", TOUR)
    for sentence, code in ANSWERS.items():
        llm.on("generate", code_answer(code), step=sentence, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    cold = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env)
    assert cold.returncode == 0, cold
    generated = sorted(request.step or "" for request in llm.requests_for("generate"))
    assert generated == sorted(ANSWERS)
    assert sorted(request.step or "" for request in llm.requests_for("gate")) == sorted(ANSWERS)
    assert len(llm.requests) == 2 * len(ANSWERS)
    # fifteen steps: five generated, the seven repeats and the tour's three replayed from the
    # library
    assert "15 steps: 10 replayed, 0 reused, 5 generated" in cold.output
    library = by_sentence(project.cache_dir)
    assert {sentence: e["origin"] for sentence, e in library.items()} == dict.fromkeys(
        ANSWERS, "generated"
    )
    assert len(steps(project.cache_dir)) == len(ANSWERS)  # each step once, whatever feature
    llm.reset()
    again = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env)
    assert again.returncode == 0, again
    assert llm.requests == []
    assert "15 steps: 15 replayed, 0 reused, 0 generated" in again.output


def test_code_another_test_of_the_run_made_green_is_reused_with_no_request(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    """Tests of the Python API keep their entries their own: a second test's miss reuses the
    code the first test's step went green with, with no request, and keeps it as its own."""
    llm_env.on("generate", code_answer(OPEN_SHOP))
    llm_env.on("gate", CLEAN_GATE)
    runtime = Runtime(api_config(shop.url, tmp_path / "cache"), browser=browser)
    try:
        with PrettyPlay("first", runtime=runtime) as t:
            assert t.step("open the shop").origin == "generated"
        with PrettyPlay("second", runtime=runtime) as t:
            assert t.step("open the shop").origin == "reused"
    finally:
        runtime.close()
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate"]
    assert sorted((e["feature"], e["origin"]) for e in steps(tmp_path / "cache")) == [
        ("first", "generated"),
        ("second", "reused"),
    ]


def test_the_gate_sees_what_appeared_after_the_action_ran(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP), ("step", "accept", ACCEPT))
    llm_env.on("generate", code_answer(ADD_TEA))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        t.step("accept")
        t.step('add the "Green Tea" to the cart')
    before = llm_env.requests_for("generate")[0].content("user")
    gate = llm_env.requests_for("gate")[0].content("user")
    assert "added to cart" not in before  # it appeared only when the candidate ran
    evidence = gate.split("WHAT THE CANDIDATE DID")[1]
    assert "added to cart" in evidence and "Cart (1)" in evidence
    assert "outcome: green" in evidence.splitlines()[0]
    assert "Did the page change as the sentence says — or, where the sentence expects" in gate


# Saving takes thirty re-renders, 10 ms apart: the page settles only once it says Saved.
SLOW_SAVE = """<title>Notes</title><h1>Notes</h1><button>Save</button><p id="status">Draft</p>
<script>
document.querySelector("button").addEventListener("click", () => {
  let left = 30;
  const tick = () => {
    document.getElementById("status").textContent = left > 0 ? `Saving (${left})` : "Saved";
    if (left-- > 0) setTimeout(tick, 10);
  };
  tick();
});
</script>"""


def test_the_gate_sees_the_page_once_the_action_settled(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = SLOW_SAVE
    open_notes = 'def step(page) -> None:\n    page.goto("/")\n'
    plant(tmp_path / "cache", "t", ("step", "open the notes", open_notes))
    save = 'def step(page) -> None:\n    page.get_by_role("button", name="Save").click()\n'
    llm_env.on("generate", code_answer(save))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the notes")
        t.step("save the note")
    evidence = llm_env.requests_for("gate")[0].content("user").split("WHAT THE CANDIDATE DID")[1]
    assert "Saved" in evidence and "Saving" not in evidence, evidence


def test_a_heals_gate_carries_the_verdict_that_started_it(
    fresh_shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    fresh_shop.set_variant("changed-ui")
    plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP), ("step", "accept", ACCEPT))
    explanation = "the cookie button is now labelled Allow all"
    verdict = {"label": "rot", "explanation": explanation, "recommendation": "click Allow all"}
    llm_env.on("classify", json_answer(verdict), step="accept")
    llm_env.on("heal", code_answer(ACCEPT.replace("Accept cookies", "Allow all")), step="accept")
    llm_env.on("gate", CLEAN_GATE)
    # room for the shop to open on a loaded machine; the old button fails in 2 s all the same
    with PrettyPlay(
        "t",
        config=api_config(fresh_shop.url, tmp_path / "cache", action_timeout_ms=2000),
        browser=browser,
    ) as t:
        t.step("open the shop")
        assert t.step("accept").origin == "healed"
    gate = llm_env.requests_for("gate")[0].content("user")
    assert "VERDICT ON THE FAILURE: rot" in gate and f"explanation: {explanation}" in gate
    assert "disappeared:" in gate  # the banner went away when the healed code ran


DOES_NOTHING = 'def step(page) -> None:\n    page.get_by_role("heading", level=1).hover()\n'
ROOT = {
    "label": "fixable",
    "explanation": "the add step ran green but never clicked Add to cart: the cart is empty",
    "recommendation": "make the add step click the product's Add to cart button",
    "root_step": 'I add the "Green Tea" to the cart',
}


@pytest.mark.parametrize("strict", [False, True])
def test_a_verdict_naming_an_earlier_root_ends_the_check_without_a_heal(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, strict: bool, browser
) -> None:
    plant(
        tmp_path / "cache", "t",
        ("step", "I open the shop", OPEN_SHOP), ("step", "I accept the cookie banner", ACCEPT),
        ("step", 'I add the "Green Tea" to the cart', DOES_NOTHING),
        ("expect", "the cart link shows 1 item", CART_HAS_ONE.replace('1)")', '1)", timeout=500)')),
    )  # fmt: skip
    llm_env.on("classify", json_answer(ROOT))
    with PrettyPlay(
        "t", config=api_config(shop.url, tmp_path / "cache", strict=strict), browser=browser
    ) as t:
        for sentence in ("I open the shop", "I accept the cookie banner",
                         'I add the "Green Tea" to the cart'):  # fmt: skip
            t.step(sentence)
        with pytest.raises(RedStepError) as caught:  # the check's assertion failed
            t.expect("the cart link shows 1 item")
    failure = caught.value.render()
    assert failure.startswith("RedStepError: the failure starts at an earlier step")
    assert """the earlier step 'I add the "Green Tea" to the cart'""" in failure
    assert "tag the scenario @group" in failure and "ProductDefectError" not in failure
    assert [r.purpose for r in llm_env.requests] == ["classify"]  # no heal, no generation
    classify = llm_env.requests_for("classify")[0].content("user")
    assert 'page.get_by_role("heading", level=1).hover()' in classify  # the action's code
    assert 'I add the "Green Tea" to the cart (action, passed, replayed; URL: ' in classify


def test_a_product_defect_with_a_root_stays_a_product_defect(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    from prettyplay_behave import ProductDefectError

    plant(
        tmp_path / "cache", "t", ("step", "I open the shop", OPEN_SHOP),
        ("expect", "the heading says Welcome", HEADING.replace("Demo Shop", "Welcome")
         .replace('")', '", timeout=500)')),
    )  # fmt: skip
    llm_env.on("classify", json_answer({**ROOT, "label": "product_defect",
                                        "root_step": "I open the shop"}))  # fmt: skip
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the shop")
        with pytest.raises(ProductDefectError):
            t.expect("the heading says Welcome")
