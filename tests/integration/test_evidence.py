"""The evidence a request carries, read from the requests themselves: every attempt starts on
the page as it was before the step, a sentence that states a condition is a precondition, a
``fixable`` verdict rides the next generation, and a model may answer that a step cannot be
written."""

from __future__ import annotations

from pathlib import Path

import pytest

from prettyplay_behave import IncurableStepError, PrettyPlay
from tests.support.caches import plant, steps
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.settings import api_config
from tests.support.shop_steps import HEADING, OPEN_SHOP

PLANS = """<!doctype html><title>Plans</title>
<h1>Plans</h1>
<label><input type="checkbox" name="news"> Send me the newsletter</label>
<fieldset><legend>Billing</legend>
<label><input type="radio" name="plan" value="monthly" checked> Monthly</label>
<label><input type="radio" name="plan" value="yearly"> Yearly</label>
</fieldset>"""
OPEN_PLANS = 'def step(page) -> None:\n    page.goto("/")\n'
WRONG_BOX = 'def step(page) -> None:\n    page.get_by_label("Send me the newsletter").check()\n'
YEARLY = 'def step(page) -> None:\n    page.get_by_label("Yearly").check()\n'
REFUSED = json_answer(
    {"findings": [{"dimension": "adequacy", "severity": "high", "message": "wrong control"}]}
)


def test_a_refused_attempt_leaves_no_trace_for_the_next_one(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = PLANS
    plant(tmp_path / "cache", "t", ("step", "I open the plans", OPEN_PLANS))
    llm_env.on("generate", code_answer(WRONG_BOX), code_answer(YEARLY))
    llm_env.on("gate", REFUSED, CLEAN_GATE)
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the plans")
        run = t.step("I choose the yearly plan")
        assert run.code == YEARLY
        assert not t.page.get_by_label("Send me the newsletter").is_checked()
        assert t.page.get_by_label("Yearly").is_checked()
    first, second = (r.content("user") for r in llm_env.requests_for("generate"))
    assert "brought back" not in first
    assert "brought back to where this step started" in second
    assert "1 earlier step replayed" in second
    page = second.split("CURRENT PAGE")[1]
    assert 'checkbox "Send me the newsletter"' in page
    assert 'checkbox "Send me the newsletter" [checked]' not in page
    # the second gate's "before" is the clean page: the box never appears as changed
    gate = llm_env.requests_for("gate")[1].content("user").split("WHAT THE CANDIDATE DID")[1]
    assert "newsletter" not in gate


def test_a_page_nothing_changed_is_not_reopened(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = PLANS
    plant(tmp_path / "cache", "t", ("step", "I open the plans", OPEN_PLANS))
    hover = 'def step(page) -> None:\n    page.get_by_role("heading", level=1).hover()\n'
    llm_env.on("generate", code_answer(hover), code_answer(YEARLY))
    llm_env.on("gate", REFUSED, CLEAN_GATE)
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the plans")
        page = t.page
        t.step("I choose the yearly plan")
        assert t.page is page  # the same page: nothing was there to undo
    assert "brought back" not in llm_env.requests_for("generate")[1].content("user")


def test_a_sentence_stating_a_condition_under_given_is_a_precondition(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = PLANS
    plant(tmp_path / "cache", "t", ("step", "I open the plans", OPEN_PLANS))
    visible = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("group", name="Billing")).to_be_visible()\n'
    )
    llm_env.on("generate", code_answer(visible), code_answer(YEARLY))
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the plans")
        t.step("the billing choice is visible")
        t.step("I choose the yearly plan")
    condition, action = (r.content("user") for r in llm_env.requests_for("generate"))
    assert "STEP TYPE: precondition" in condition
    assert "STEP TYPE: action" in action
    gates = [r.content("user") for r in llm_env.requests_for("gate")]
    assert "Is the condition the sentence states true after the code ran" in gates[0]
    assert "where the sentence expects no change, stay as it was?" in gates[1]


def test_a_checks_gate_asks_for_an_assertion_that_leaves_the_page_alone(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    plant(tmp_path / "cache", "t", ("step", "I open the shop", OPEN_SHOP))
    llm_env.on("generate", code_answer(HEADING))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the shop")
        t.expect("the heading says Demo Shop")
    gate = llm_env.requests_for("gate")[0].content("user")
    assert "Does the code assert what the sentence states, without changing the page?" in gate


def test_a_fixable_verdict_rides_the_next_generation(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    plant(tmp_path / "cache", "t", ("step", "I open the shop", OPEN_SHOP))
    wrong = HEADING.replace('"Demo Shop")', '"Demo Store", timeout=300)')
    explanation = "the code expects Demo Store; the heading reads Demo Shop"
    verdict = {"label": "fixable", "explanation": explanation, "recommendation": "use Demo Shop"}
    llm_env.on("generate", code_answer(wrong), code_answer(HEADING))
    llm_env.on("classify", json_answer(verdict))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the shop")
        assert t.expect("the heading says Demo Shop").code == HEADING
    first, second = (r.content("user") for r in llm_env.requests_for("generate"))
    assert "VERDICT ON THE FAILURE" not in first
    assert "VERDICT ON THE FAILURE: fixable" in second and explanation in second


@pytest.mark.parametrize(
    "answer", ["CANNOT: the page offers no export", "**CANNOT:** the page offers no export"]
)
def test_a_cannot_answer_ends_the_step_at_once_and_is_remembered(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser, answer: str
) -> None:
    plant(tmp_path / "cache", "t", ("step", "I open the shop", OPEN_SHOP))
    llm_env.on("generate", answer, repeat=True)
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the shop")
        with pytest.raises(IncurableStepError) as caught:
            t.step("I export the orders as a spreadsheet")
    assert "the model answered that this step cannot be written" in str(caught.value)
    assert "explanation: the page offers no export" in str(caught.value)
    assert [r.purpose for r in llm_env.requests] == ["generate"]  # no retry, no classify
    red = next(s for s in steps(tmp_path / "cache") if s["sentence"].startswith("I export"))
    assert red["verdict"]["label"] == "incurable"
    llm_env.reset()
    with PrettyPlay("t", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the shop")
        with pytest.raises(IncurableStepError) as again:
            t.step("I export the orders as a spreadsheet")
    assert "no request was made" in str(again.value)
    assert "the page offers no export" in str(again.value)
    assert llm_env.requests == []


CONSENT = (
    'def step(page) -> None:\n    page.get_by_role("button", name="Consent").click(timeout=300)\n'
)
GONE = {"label": "incurable", "explanation": "the shop has no Consent button", "recommendation": ""}


def test_a_verdict_for_one_failure_is_offered_to_the_next_classification_of_it(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    from prettyplay_behave.runtime import Runtime

    for test, sentence in (("a", "I accept the cookies"), ("b", "I agree to the cookies")):
        plant(
            tmp_path / "cache",
            test,
            ("step", "I open the shop", OPEN_SHOP),
            ("step", sentence, CONSENT),
        )
    llm_env.on("classify", json_answer(GONE), repeat=True)
    runtime = Runtime(api_config(shop.url, tmp_path / "cache"), browser=browser)
    try:
        for test, sentence in (("a", "I accept the cookies"), ("b", "I agree to the cookies")):
            with PrettyPlay(test, runtime=runtime) as t:
                t.step("I open the shop")
                with pytest.raises(IncurableStepError):
                    t.step(sentence)
    finally:
        runtime.close()
    first, second = (r.content("user") for r in llm_env.requests_for("classify"))
    assert "A FAILURE LIKE THIS ONE EARLIER IN THIS RUN" not in first
    offered = second.split("A FAILURE LIKE THIS ONE EARLIER IN THIS RUN")[1]
    assert "'I accept the cookies' in the scenario 'a'" in offered.splitlines()[0]
    assert "It was judged incurable: the shop has no Consent button" in offered
    assert "not of this one" in offered


def test_a_classification_sees_what_earlier_steps_did_to_the_page_and_their_gate_notes(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = PLANS
    plant(tmp_path / "cache", "t", ("step", "I open the plans", OPEN_PLANS))
    news = 'def step(page) -> None:\n    page.get_by_label("Send me the newsletter").check()\n'
    wrong = (
        "def step(page) -> None:\n"
        '    expect(page.get_by_label("Yearly")).to_be_checked(timeout=300)\n'
    )
    note = {"dimension": "adequacy", "severity": "medium", "message": "a label is brittle"}
    llm_env.on("generate", code_answer(news), code_answer(wrong))
    llm_env.on("gate", json_answer({"findings": [note]}))
    llm_env.on("classify", json_answer(GONE))
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the plans")
        t.step("I ask for the newsletter")
        with pytest.raises(IncurableStepError):
            t.expect("the yearly plan is chosen")
    classify = llm_env.requests_for("classify")[0].content("user")
    earlier = classify.split("- I ask for the newsletter")[1].split("ATTEMPT HISTORY")[0]
    assert "what its code did to the page: 0 lines appeared, 0 disappeared, 1 changed" in earlier
    assert "[checked]" in earlier
    assert "medium adequacy: a label is brittle" in earlier


SEATS = """<!doctype html><title>Seats</title><h1>Seats</h1>
<p>Total: $<span data-testid="total-price">20</span></p><p>Seats left: <b>3</b></p>
<label>Note <input value="window,  please"></label>
<div class="seats">
  <div class="seat" style="cursor: pointer" onclick="this.classList.toggle('selected')">A1</div>
  <div class="seat taken" data-testid="seat-a2">A2</div>
</div>"""
PICK = 'def step(page) -> None:\n    page.get_by_text("A1", exact=True).click()\n'


def test_the_snapshot_shows_test_ids_own_texts_and_role_less_clickables_and_class_changes(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    pages.pages["/"] = SEATS
    plant(tmp_path / "cache", "t", ("step", "I open the seats", OPEN_PLANS))
    llm_env.on("generate", code_answer(PICK))
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config=api_config(pages.url, tmp_path / "cache"), browser=browser) as t:
        t.step("I open the seats")
        t.step("I pick the seat A1")
    page = llm_env.requests_for("generate")[0].content("user").split("CURRENT PAGE")[1]
    assert 'testid "total-price": span "20"' in page  # its own text, not "Total: $20"
    assert 'testid "seat-a2": div "A2" .seat .taken' in page
    assert 'clickable "A1": div "A1" (clickable) .seat' in page
    assert 'part of "Seats left:": b "3"' in page
    assert 'typed "Note": input value "window,  please"' in page
    evidence = llm_env.requests_for("gate")[0].content("user").split("WHAT THE CANDIDATE DID")[1]
    assert (
        'clickable "A1": div "A1" (clickable) .seat  =>  '
        '- clickable "A1": div "A1" (clickable) .seat .selected'
    ) in evidence


class TurnsOnAChangedPage:
    """A steering part whose first turn changes the page and whose second asks for code."""

    def __init__(self) -> None:
        self.asked_on: list[bool] = []

    def steer(self, stuck) -> bool:
        stuck.execute(WRONG_BOX)
        code = stuck.ask("use the Yearly radio")
        self.asked_on.append(stuck.page.get_by_label("Send me the newsletter").is_checked())
        attempt = stuck.gate(stuck.execute(code), "use the Yearly radio")
        if attempt.outcome != "green":
            return False
        stuck.keep(code, "use the Yearly radio")
        return True


def test_a_steered_turn_starts_on_the_page_as_it_was_before_the_step(
    pages, tmp_path: Path, llm_env: ScriptedLLMServer, browser, monkeypatch
) -> None:
    monkeypatch.delenv("CI", raising=False)  # steering never opens in CI; this run stands outside
    pages.pages["/"] = PLANS
    broken = 'def step(page) -> None:\n    page.get_by_label("Annual").check(timeout=300)\n'
    plant(
        tmp_path / "cache",
        "t",
        ("step", "I open the plans", OPEN_PLANS),
        ("step", "I choose the yearly plan", broken),
    )
    llm_env.on("classify", json_answer(GONE))
    llm_env.on("steer", code_answer(YEARLY))
    llm_env.on("gate", CLEAN_GATE)
    steering = TurnsOnAChangedPage()
    settings = api_config(pages.url, tmp_path / "cache", interactive=True)
    with PrettyPlay("t", config=settings, browser=browser, steering=steering) as t:
        t.step("I open the plans")
        assert t.step("I choose the yearly plan").origin == "steered"
        assert not t.page.get_by_label("Send me the newsletter").is_checked()
    assert steering.asked_on == [False]
    steer = llm_env.requests_for("steer")[0].content("user")
    assert "brought back to where this step started" in steer
