"""The engine's rules on a real page with a scripted provider in process: routing, budgets,
verdicts and groups, with no HTTP server and no openai client between the engine and the
answers (the same rules over the wire are tested in test_healing.py and test_groups.py)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from prettyplay_behave import (
    IncurableStepError,
    PrettyConfig,
    PrettyPlay,
    ProductDefectError,
    ProviderUnavailableError,
)
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, StepEntry
from prettyplay_behave.safety.step_code import check_code
from tests.support.caches import cache_text, plant, steps
from tests.support.llm_server import CLEAN_GATE, code_answer, http_error, json_answer
from tests.support.scripted_provider import ScriptedProvider
from tests.support.shop_steps import ACCEPT, BROKEN_ACCEPT, HEADING, OPEN_SHOP


def verdict(label: str, explanation: str = "judged") -> str:
    return json_answer({"label": label, "explanation": explanation, "recommendation": "-"})


def config(shop, tmp_path: Path, **changes: object) -> PrettyConfig:
    return PrettyConfig(
        base_url=shop.url, cache_dir=str(tmp_path / "cache"), action_timeout_ms=2_000,
        **changes,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


def test_a_miss_is_generated_gated_and_written_then_replayed_with_no_request(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    provider.on("generate", code_answer(OPEN_SHOP), code_answer(HEADING))
    provider.on("gate", CLEAN_GATE, repeat=True)
    for run in ("cold", "warm"):
        with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
            opened = t.step("open the shop")
            checked = t.expect("the heading says Demo Shop")
        origins = [opened.origin, checked.origin]
        assert origins == (["generated"] * 2 if run == "cold" else ["replayed"] * 2), run
    assert [r.purpose for r in provider.requests] == ["generate", "gate", "generate", "gate"]
    assert provider.requests_for("generate")[0].model == "gpt-4.1-mini"
    assert provider.requests_for("gate")[0].response_format is not None  # a verdict's schema


def test_the_generation_budget_bounds_the_requests(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    provider.on("generate", "no code", "still no code", "never asked")
    provider.on("classify", verdict("incurable", "the answers never held code"))
    settings = config(shop, tmp_path, generation_attempts=2)
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        with pytest.raises(IncurableStepError, match="the generation budget is exhausted"):
            t.step("open the shop")
    assert [r.purpose for r in provider.requests] == ["generate", "generate", "classify"]
    assert provider.pending == 1


# the shop opens; the banner's button is not where the code looks
BROKEN_BANNER = (("step", "open the shop", OPEN_SHOP), ("step", "accept", BROKEN_ACCEPT))


def test_a_product_defect_is_never_healed(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(tmp_path / "cache", "t", *BROKEN_BANNER)
    before = cache_text(cache)
    provider.on("classify", verdict("product_defect", "the banner lost its button"))
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("open the shop")
        with pytest.raises(ProductDefectError, match="the banner lost its button"):
            t.step("accept")
    assert [r.purpose for r in provider.requests] == ["classify"]
    assert 'verdict="product_defect"' in cache_text(cache) and cache_text(cache) != before


def test_rot_heals_within_the_budget_and_is_written_healed(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(tmp_path / "cache", "t", *BROKEN_BANNER)
    provider.on("classify", verdict("rot", "the button was renamed"))
    provider.on("heal", code_answer(BROKEN_ACCEPT), code_answer(ACCEPT))
    provider.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("open the shop")
        healed = t.step("accept")
    assert healed.origin == "healed"
    assert [a.outcome for a in healed.history] == ["red", "red"]
    assert [r.purpose for r in provider.requests] == ["classify", "heal", "heal", "gate"]
    assert "Accept cookies" in cache_text(cache)


def test_a_group_failure_is_diagnosed_with_its_group_and_recovered(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    plant(tmp_path / "cache", "t", *BROKEN_BANNER)
    diagnosis = {
        "label": "recoverable",
        "root_step": "accept",
        "explanation": "the banner's button was renamed",
        "recommendation": "-",
    }
    provider.on("diagnose", json_answer(diagnosis))
    provider.on("heal", code_answer(ACCEPT))
    provider.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        with t.group("enter the shop") as g:
            g.step("open the shop")
            recovered = g.step("accept")
    assert recovered.origin == "recovered"
    purposes = [r.purpose for r in provider.requests]
    assert purposes[0] == "diagnose" and "classify" not in purposes
    assert "enter the shop" in provider.requests_for("diagnose")[0].text


def test_a_provider_that_is_down_fails_the_step_as_unavailable(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    provider.on("generate", http_error(503, "overloaded"))
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        with pytest.raises(ProviderUnavailableError, match="HTTP 503: overloaded"):
            t.step("open the shop")
    assert cache_text(tmp_path / "cache") == ""  # nothing written


def test_a_miss_names_the_nearest_sentence_and_then_what_generating_it_needs(
    shop, tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in a sentence: a strict run names the entry it likely meant; without a key, the
    error says first that the cache has no code for it, then why none can be generated."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    plant(tmp_path / "cache", "t", ("step", 'I add the "Green Tea" to the cart', OPEN_SHOP))
    for strict in (True, False):
        with PrettyPlay("t", config(shop, tmp_path, strict=strict), browser=browser) as t:
            with pytest.raises((IncurableStepError, ProviderUnavailableError)) as caught:
                t.step('I ad the "Green Tea" to the cart')
        text = str(caught.value)
        assert "the nearest is 'I add the \"{}\" to the cart'" in text, text
        if not strict:
            assert text.startswith("no cached code for this step; the nearest is")
            assert "generating it needs the LLM: the LLM is unavailable: no API key" in text


def test_an_answer_with_annotated_parameters_goes_green_at_once_and_is_cached_without_them(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    annotated = (
        "def step(page: Page, title: str) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text(title)\n'
    )
    plant(tmp_path / "cache", "t", ("step", "open the shop", OPEN_SHOP))
    provider.on("generate", code_answer(annotated))
    provider.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("open the shop")
        checked = t.expect('the heading says "Demo Shop"')
    assert checked.origin == "generated" and [a.outcome for a in checked.history] == []
    assert [r.purpose for r in provider.requests] == ["generate", "gate"]
    assert checked.code.startswith("def step(page, title) -> None:\n")
    cached = cache_text(tmp_path / "cache")
    assert "def step(page, title) -> None:" in cached and "title: str" not in cached


def test_an_unreadable_gate_answer_is_asked_again_and_a_readable_one_keeps_the_code(
    shop, tmp_path: Path, provider: ScriptedProvider, browser, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="prettyplay")
    provider.on("generate", code_answer(OPEN_SHOP))
    provider.on("gate", "Looks fine to me!", CLEAN_GATE)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        opened = t.step("open the shop")
    assert opened.origin == "generated"
    assert [r.purpose for r in provider.requests] == ["generate", "gate", "gate"]
    unreadable = [r for r in caplog.records if getattr(r, "event", "") == "gate_unreadable"]
    assert len(unreadable) == 1
    assert "it is asked again; the answer:\nLooks fine to me!" in unreadable[0].getMessage()


def test_a_gate_answer_unreadable_twice_ends_the_step_quoting_the_answer(
    shop, tmp_path: Path, provider: ScriptedProvider, browser, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="prettyplay")
    long_prose = "I reviewed the code. " + "It is fine. " * 200 + "THE END"
    provider.on("generate", code_answer(OPEN_SHOP))
    provider.on("gate", "Looks fine to me!", long_prose)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
    render = caught.value.render()
    assert "compliance gate could not judge the candidate; nothing was written" in render
    assert "error: UnparseableAnswer: the answer is not valid JSON" in render
    assert "(asked twice)" in render
    shown = render.split("the gate's last answer (finish_reason: stop):\n")[1]
    assert shown.startswith("I reviewed the code. It is fine.") and "THE END" in shown
    assert len(shown.split("\n---\n")[0]) < 1_200 < len(long_prose)  # a cut, head and tail
    messages = [
        r.getMessage() for r in caplog.records if getattr(r, "event", "") == "gate_unreadable"
    ]
    assert len(messages) == 2 and "THE END" in messages[1]
    assert cache_text(tmp_path / "cache") == ""


def test_a_red_steps_error_names_the_page_and_the_http_error_its_document_got(
    pages, tmp_path: Path, browser
) -> None:
    """A step on a page the app answered with an error fails naming the page and the status,
    so a missing page does not look like a locator that timed out; a page served fine is
    named by its URL alone."""
    pages.pages["/"] = "<h1>Welcome</h1>"
    check = 'def step(page) -> None:\n    expect(page.get_by_role("heading")).to_have_text("Hi")\n'
    plant(
        tmp_path / "cache",
        "t",
        ("step", "open the home page", 'def step(page) -> None:\n    page.goto("/")\n'),
        ("step", "open the orders", 'def step(page) -> None:\n    page.goto("/orders")\n'),
        ("expect", "the heading says hi", check),
    )
    settings = config(pages, tmp_path, strict=True, expect_timeout_ms=300)
    with PrettyPlay("t", settings, browser=browser) as t:
        with pytest.raises(IncurableStepError) as missing:  # an error page is no green step
            t.step("open the orders")
    render = missing.value.render()
    assert f"\npage: {pages.url}/orders (HTTP 404)\n" in render
    assert f"the page's document was answered HTTP 404: {pages.url}/orders" in render
    with PrettyPlay("t", settings, browser=browser) as t:
        t.step("open the home page")
        with pytest.raises(IncurableStepError) as caught:
            t.expect("the heading says hi")
    render = caught.value.render()
    assert f"\nerror: AssertionError: Locator expected to have text 'Hi'\npage: {pages.url}/\n" in (
        render
    )
    assert "answered HTTP" not in render


# -- one entry per meaning: a second wording answered "SAME AS <n>" ------------------------------

HEADING_SAYS = (
    "def step(page, text) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text(text)\n'
)
ACCEPT_NAMED = (
    "def step(page, text) -> None:\n"
    '    page.get_by_role("button", name=f"Accept {text}").click(timeout=300)\n'
)
# code too large to list: its comment alone is past the listing's bound (CLOSEST_TOKENS)
LARGE_ACCEPT = ACCEPT.replace("-> None:\n", "-> None:\n    # " + "all of them " * 400 + "\n")
# the library a cookie step is generated beside: its closest steps, in the order a request lists
# them (the most alike first), none of which spells "the cookie banner"
COOKIE_STEPS = (
    ("action", "I open the shop", OPEN_SHOP),  # not near
    ("action", "I accept the cookies", ACCEPT),  # 1: does it
    ("action", "I accept the cookie popup", BROKEN_ACCEPT),  # 2: goes red
    ("action", "I accept all the cookies", LARGE_ACCEPT),  # near, but too large to list
    ("action", 'I accept the "analytics" cookies', ACCEPT_NAMED),  # 3: takes a value
)
BANNER = "I accept the cookie banner"


def listed(request_text: str) -> list[str]:
    """The numbered lines of the closest steps a generation request lists."""
    listing = request_text.split("THE LIBRARY'S CLOSEST STEPS (", 1)[1].split("EARLIER STEPS")[0]
    return re.findall(r"^\d+\. .*$", listing, re.MULTILINE)


def test_a_second_wording_answered_same_as_is_kept_as_a_wording_and_replayed_with_no_request(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(
        tmp_path / "cache",
        "t",
        ("action", "I open the shop", OPEN_SHOP),
        ("check", 'the heading says "Demo Shop"', HEADING_SAYS),
    )
    provider.on("generate", "Step 1 checks the same heading with the same value.\n\nSAME AS 1")
    provider.on("gate", CLEAN_GATE)
    for strict in (False, True):
        settings = config(shop, tmp_path, strict=strict)
        with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
            t.step("I open the shop")
            checked = t.expect('the main heading reads "Demo Shop"')
        assert checked.origin == ("replayed" if strict else "reused")
    assert [r.purpose for r in provider.requests] == ["generate", "gate"]  # none when strict
    # the request listed the closest step of its kind, with its code; the gate saw that code
    request = provider.requests_for("generate")[0].content("user")
    assert listed(request) == ['1. the heading says "{}" (its code takes text)']
    assert HEADING_SAYS.splitlines()[1] in request
    assert HEADING_SAYS.rstrip() in provider.requests_for("gate")[0].content("user")
    # one entry for both wordings, its origin and code as they were
    heading = [e for e in steps(cache) if e["kind"] == "check"]
    assert len(heading) == 1 and len(steps(cache)) == 2
    assert heading[0]["sentence"] == 'the heading says "{}"'
    assert heading[0]["wordings"] == ['the main heading reads "{}"']
    assert heading[0]["origin"] == "generated" and heading[0]["code"] == HEADING_SAYS.splitlines()


def test_an_entry_written_and_then_worded_in_one_run_counts_as_one_written(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    provider.on("generate", code_answer(OPEN_SHOP), code_answer(HEADING_SAYS), "SAME AS 1")
    provider.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("I open the shop")
        t.expect('the heading says "Demo Shop"')
        assert t.expect('the main heading reads "Demo Shop"').origin == "reused"
        assert t.runtime.engine.keeper.writes == 2  # the heading's entry once, with its wording
    assert len(steps(tmp_path / "cache")) == 2


def test_a_same_as_naming_no_listed_step_or_one_whose_parameters_do_not_fit_is_unparseable(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(tmp_path / "cache", "t", *COOKIE_STEPS)
    provider.on("generate", "SAME AS 4", "SAME AS 3", code_answer(ACCEPT))
    provider.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("I open the shop")
        banner = t.step(BANNER)
    assert listed(provider.requests_for("generate")[0].content("user")) == [
        "1. I accept the cookies (its code takes no parameters)",
        "2. I accept the cookie popup (its code takes no parameters)",
        '3. I accept the "{}" cookies (its code takes text)',
    ]
    assert [a.outcome for a in banner.history] == ["unparseable answer"] * 2
    assert banner.history[0].text.startswith(
        "the answer names step 4 (SAME AS 4), but the request listed 3 (numbered from 1)"
    )
    assert banner.history[1].text.startswith(
        "the answer names step 3 (SAME AS 3), 'I accept the \"{}\" cookies', whose code takes "
        "1 parameter (text); this step has 0 values"
    )
    # the cycle went on: the third answer's code is an entry of its own, no entry has a wording
    assert banner.origin == "generated"
    assert [r.purpose for r in provider.requests] == ["generate"] * 3 + ["gate"]
    assert BANNER in [e["sentence"] for e in steps(cache)]
    assert not any("wordings" in e for e in steps(cache))


def test_a_same_as_candidate_the_gate_refuses_or_that_goes_red_is_not_kept(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(tmp_path / "cache", "t", *COOKIE_STEPS)
    refused = json_answer(
        {"findings": [{"dimension": "adequacy", "severity": "high", "message": "not the banner"}]}
    )
    provider.on("generate", "SAME AS 1", "SAME AS 2", code_answer(ACCEPT))
    provider.on("gate", refused, CLEAN_GATE)
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("I open the shop")
        banner = t.step(BANNER)
    assert [a.outcome for a in banner.history] == ["gate violation", "red"]
    assert banner.history[1].code == BROKEN_ACCEPT
    assert banner.history[1].text.endswith(
        "(the code of the library's step 'I accept the cookie popup', named as the same)"
    )
    assert banner.origin == "generated"
    purposes = ["generate", "gate", "generate", "generate", "gate"]
    assert [r.purpose for r in provider.requests] == purposes
    assert not any("wordings" in e for e in steps(cache))
    assert BANNER in [e["sentence"] for e in steps(cache)]


def test_a_step_found_by_a_wording_heals_the_one_entry_of_all_its_wordings(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    cache = plant(tmp_path / "cache", "t", ("action", "I open the shop", OPEN_SHOP))
    store = CacheStore(tmp_path / "cache", validate=check_code)
    accept = CacheWrite(CacheKey("t", "action", "I accept the cookies"), BROKEN_ACCEPT, "generated")
    store.write(accept)
    entry = store.lookup(accept.key)
    assert entry is not None
    store.replace(
        CacheWrite(CacheKey("t", "action", BANNER), entry.code, "reused", wording_of=entry), None
    )
    provider.on("classify", verdict("rot", "the button was renamed"))
    provider.on("heal", code_answer(ACCEPT))
    provider.on("gate", CLEAN_GATE)
    for strict in (False, True):
        with PrettyPlay(
            "t", config(shop, tmp_path, strict=strict), browser=browser, provider=provider
        ) as t:
            t.step("I open the shop")
            banner = t.step(BANNER)
        assert banner.origin == ("replayed" if strict else "healed")
    assert [r.purpose for r in provider.requests] == ["classify", "heal", "gate"]
    accepting = [e for e in steps(cache) if e["sentence"] != "I open the shop"]
    assert len(accepting) == 1, accepting
    assert accepting[0]["sentence"] == "I accept the cookies"
    assert accepting[0]["wordings"] == [BANNER] and accepting[0]["origin"] == "healed"
    assert accepting[0]["code"] == ACCEPT.splitlines()


def test_a_step_finds_an_entry_by_its_wording_another_features_own_one_too_with_no_request(
    shop, tmp_path: Path, provider: ScriptedProvider, browser
) -> None:
    """A shared entry serves a step by its wording as by its sentence (a replay); an entry
    another feature keeps as its own is reused by a wording as by its sentence."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    heading = 'the heading says "{}"'
    store.keep(
        [
            StepEntry("check", heading, HEADING_SAYS, "generated", parameters=("text",),
                      wordings=('the main heading reads "{}"',)),
            StepEntry("check", 'the title is "{}"', HEADING_SAYS, "generated",
                      parameters=("text",), wordings=('the page is titled "{}"',),
                      feature="a.feature"),
        ]
    )  # fmt: skip
    plant(tmp_path / "cache", "t", ("action", "I open the shop", OPEN_SHOP))
    with PrettyPlay("t", config(shop, tmp_path), browser=browser, provider=provider) as t:
        t.step("I open the shop")
        shared = t.expect('the main heading reads "Demo Shop"')
        own = t.expect('the page is titled "Demo Shop"')
    assert shared.origin == "replayed" and own.origin == "reused"
    assert provider.requests == []
