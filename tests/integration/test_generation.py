"""The generation loop against the scripted server: real Chromium, the real openai client."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from prettyplay_behave import (
    ConfigError,
    IncurableStepError,
    PrettyPlay,
    ProviderUnavailableError,
)
from tests.conftest import BehaveProject
from tests.support.caches import cache_text, steps
from tests.support.llm_server import (
    CLEAN_GATE,
    ScriptedLLMServer,
    code_answer,
    delay,
    json_answer,
    server_error,
    unauthorized,
)
from tests.support.settings import api_config
from tests.support.shop_steps import ACCEPT, HEADING, OPEN_SHOP, SHOP_FEATURE


def test_a_generated_step_is_executed_gated_and_cached(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        run = t.step("open the shop")
        assert (run.origin, t.page.url) == ("generated", shop.url + "/")
    stored = steps(tmp_path / "cache", "visit")[0]
    assert stored["code"] == OPEN_SHOP.splitlines()
    assert (stored["origin"], stored["model"]) == ("generated", "gpt-4.1-mini")
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate"]
    for request in llm_env.requests:
        assert request.headers["x-prettyplay-purpose"] == request.purpose
        assert request.step == "open the shop"
    # the second run replays with zero requests
    llm_env.reset()
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        assert t.step("open the shop").origin == "replayed"
    assert llm_env.requests == []


def test_the_request_holds_sentence_url_snapshot_and_scenario(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("generate", code_answer(ACCEPT), step="accept the cookie banner")
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        t.step("accept the cookie banner")
    request = llm_env.requests_for("generate")[1]
    user = request.content("user")
    assert "accept the cookie banner" in user
    assert shop.url + "/" in user
    opening = user.index('<untrusted-page-data id="')
    closing = user.index("</untrusted-page-data id=")
    assert opening < user.index('button "Accept cookies"') < closing
    assert "- open the shop" in user  # the scenario so far
    assert "untrusted" in request.content("system").lower()


def test_bad_answers_join_the_history_and_ride_the_next_request(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    escape = "def step(page) -> None:\n    page.evaluate(\"document.title = 'pwned'\")\n"
    failing = (
        "def step(page) -> None:\n"
        '    page.get_by_role("button", name="No such button").click(timeout=300)\n'
    )
    llm_env.on(
        "generate",
        "I would open the shop.",  # no code at all
        code_answer(escape),
        code_answer(failing),
        code_answer(OPEN_SHOP),
        step="open the shop",
    )
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay(
        "visit",
        config=api_config(shop.url, tmp_path / "cache", generation_attempts=4),
        browser=browser,
    ) as t:
        run = t.step("open the shop")
        assert t.page.title() != "pwned"  # the refused code never ran
    assert [a.outcome for a in run.history] == [
        "unparseable answer",
        "policy violation",
        "red",
    ]
    requests = llm_env.requests_for("generate")
    assert len(requests) == 4
    last = requests[-1].content("user")
    assert "I would open the shop." in last
    assert "page.evaluate(\"document.title = 'pwned'\")" in last
    assert "evaluate" in last and "policy violation" in last
    assert 'name="No such button"' in last and "Call log:" in last
    # every later request carries every earlier record
    assert "unparseable answer" in requests[1].content("user")
    assert "policy violation" in requests[2].content("user")


def test_a_long_outcome_is_never_truncated(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    message = "x" * 5000
    failing = f'def step(page) -> None:\n    assert False, "{message}"\n'
    llm_env.on("generate", code_answer(failing), code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("gate", CLEAN_GATE)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
    assert message in llm_env.requests_for("generate")[1].content("user")


def test_a_high_gate_finding_blocks_the_write_and_the_loop_goes_on(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, caplog: pytest.LogCaptureFixture, browser
) -> None:
    fake = 'def step(page) -> None:\n    page.goto("/?fake")\n'
    llm_env.on("generate", code_answer(fake), code_answer(OPEN_SHOP), step="open the shop")
    high = {"dimension": "adequacy", "severity": "high", "message": "fakes the page"}
    low = {"dimension": "instructions", "severity": "low", "message": "prefer roles"}
    llm_env.on("gate", json_answer({"findings": [high]}), json_answer({"findings": [low]}))
    caplog.set_level(logging.WARNING, logger="prettyplay")
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        run = t.step("open the shop")
    assert [a.outcome for a in run.history] == ["gate violation"]
    assert "fakes the page" in run.history[0].text
    assert steps(tmp_path / "cache", "visit")[0]["code"] == OPEN_SHOP.splitlines()
    warnings = [r for r in caplog.records if getattr(r, "event", "") == "gate_finding"]
    assert len(warnings) == 1 and "prefer roles" in warnings[0].getMessage()
    assert "gate violation" in llm_env.requests_for("generate")[1].content("user")


def test_a_malformed_gate_verdict_writes_nothing_and_ends_terminal(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("gate", '{"findings": [', repeat=True)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(IncurableStepError, match="compliance gate could not judge"):
            t.step("open the shop")
    assert cache_text(tmp_path / "cache") == ""
    assert len(llm_env.requests) == 3  # the code, the gate, the gate asked again


def test_an_exhausted_generation_budget_is_terminal(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", "no code here", repeat=True)
    verdict = {"label": "incurable", "explanation": "no code came", "recommendation": "rephrase"}
    llm_env.on("classify", json_answer(verdict))
    with PrettyPlay(
        "visit",
        config=api_config(shop.url, tmp_path / "cache", generation_attempts=2),
        browser=browser,
    ) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
    assert caught.value.render().startswith(
        "IncurableStepError: the generation budget is exhausted\n---\nstep: open the shop"
    )
    assert [r.purpose for r in llm_env.requests] == ["generate", "generate", "classify"]
    assert cache_text(tmp_path / "cache") == ""


@pytest.mark.parametrize("failure", ["5xx", "refused", "timeout"])
def test_a_provider_that_is_down_ends_the_step_in_bounded_time(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, monkeypatch, failure: str, browser
) -> None:
    timeout, retries = 1.0, 1
    if failure == "5xx":
        llm_env.on("generate", server_error(), repeat=True)
    elif failure == "timeout":
        llm_env.on("generate", delay(30, code_answer(OPEN_SHOP)), repeat=True)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    config = api_config(shop.url, tmp_path / "cache", llm_timeout=timeout, llm_retries=retries)
    with PrettyPlay("visit", config=config, browser=browser) as t:
        assert t.page.url == "about:blank"  # the browser is up before the clock starts
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match="unavailable"):
            t.step("open the shop")
        elapsed = time.monotonic() - started
    # each attempt gave up at llm_timeout, long before the server's 30 s answer
    assert elapsed < 15
    if failure != "refused":
        assert len(llm_env.requests_for("generate")) == retries + 1
    assert cache_text(tmp_path / "cache") == ""


def test_a_refused_key_names_the_setting(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", unauthorized(), repeat=True)
    with PrettyPlay(
        "visit", config=api_config(shop.url, tmp_path / "cache", llm_retries=2), browser=browser
    ) as t:
        with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
            t.step("open the shop")
    assert len(llm_env.requests) == 1
    assert cache_text(tmp_path / "cache") == ""


def test_max_llm_calls_stops_the_run(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("generate", code_answer(ACCEPT), step="accept the cookie banner")
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay(
        "visit", config=api_config(shop.url, tmp_path / "cache", max_llm_calls=2), browser=browser
    ) as t:
        t.step("open the shop")
        with pytest.raises(ProviderUnavailableError, match="max_llm_calls=2"):
            t.step("accept the cookie banner")
    assert len(llm_env.requests) == 2


def test_a_new_feature_is_generated_by_behave_and_replayed_with_zero_requests(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", SHOP_FEATURE)
    llm.on("generate", code_answer(OPEN_SHOP), step="I open the shop")
    llm.on("generate", code_answer(ACCEPT), step="I accept the cookie banner")
    llm.on("generate", code_answer(HEADING), step="the heading says Demo Shop")
    llm.on("gate", CLEAN_GATE, repeat=True)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env)
    assert result.returncode == 0, result
    assert [r.purpose for r in llm.requests] == ["generate", "gate"] * 3
    assert sorted(e["sentence"] for e in steps(project.cache_dir, "shop.feature")) == [
        "I accept the cookie banner",
        "I open the shop",
        "the heading says Demo Shop",
    ]
    llm.reset()
    again = project.run("-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.strict=true")
    assert again.returncode == 0, again
    assert llm.requests == []


def test_behave_reports_a_provider_that_is_down(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", SHOP_FEATURE)
    llm.on("generate", server_error(), repeat=True)
    result = project.run(
        "-D",
        f"prettyplay.base_url={shop.url}",
        "-D",
        "prettyplay.llm_retries=1",
        env=llm.env,
    )
    assert result.returncode == 1, result
    assert "ProviderUnavailableError" in result.output and "unavailable" in result.output
    assert cache_text(project.cache_dir) == ""


CART = 'expect(page.get_by_role("link", name=re.compile("^Cart"))).to_have_text'
# Each checks the count before and after its click, so neither passes in the other's place
# (a miss first tries the code that went green for the same sentence).
ADD_THE_MUG = (
    "def step(page) -> None:\n"
    f'    {CART}("Cart (0)", timeout=1000)\n'
    '    mug = page.get_by_role("listitem").filter(has_text="Blue Mug")\n'
    '    mug.get_by_role("button", name="Add to cart").click()\n'
    f'    {CART}("Cart (1)")\n'
)
ADD_THE_TEA = (
    "def step(page) -> None:\n"
    f'    {CART}("Cart (1)", timeout=1000)\n'
    '    tea = page.get_by_role("listitem").filter(has_text="Green Tea")\n'
    '    tea.get_by_role("button", name="Add to cart").click()\n'
    f'    {CART}("Cart (2)")\n'
)
NEXT_PRODUCT = "add the next product to the cart"


def order_two_products(t: PrettyPlay) -> list[str]:
    """The same sentence twice: two steps, two cache entries; what the cart holds after."""
    t.step("open the shop")
    t.step("accept the cookie banner")
    first = t.step(NEXT_PRODUCT)
    second = t.step(NEXT_PRODUCT)
    assert (first.key.occurrence, second.key.occurrence) == (1, 2)
    t.page.goto("/cart")
    return t.page.get_by_role("list", name="Cart items").get_by_role("listitem").all_inner_texts()


def test_a_repeated_sentence_shares_its_entry_and_an_occurrence_needing_other_code_pins_it(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("generate", code_answer(ACCEPT), step="cookie")
    llm_env.on("generate", code_answer(ADD_THE_MUG), step="next product")
    fixable = {"label": "fixable", "explanation": "the cart holds one", "recommendation": "-"}
    llm_env.on("classify", json_answer(fixable), step="next product")
    llm_env.on("heal", code_answer(ADD_THE_TEA), step="next product")
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    with PrettyPlay(
        "shopping", config=api_config(shop.url, tmp_path / "cache"), browser=browser
    ) as t:
        generated = order_two_products(t)
    assert [" ".join(item.split()[:2]) for item in generated] == ["Blue Mug", "Green Tea"]
    # the second occurrence replayed the entry the first wrote, and its heal knows what ran
    heal = llm_env.requests_for("heal")[0].content("user")
    assert f"- {NEXT_PRODUCT} (action, passed)" in heal
    stored = {
        e.get("occurrence", "shared"): e["code"]
        for e in steps(tmp_path / "cache", "shopping")
        if e["sentence"] == NEXT_PRODUCT
    }
    assert stored == {"shared": ADD_THE_MUG.splitlines(), 2: ADD_THE_TEA.splitlines()}

    llm_env.reset()
    strict = api_config(shop.url, tmp_path / "cache", strict=True)
    with PrettyPlay("shopping", config=strict, browser=browser) as t:
        assert order_two_products(t) == generated
    assert llm_env.requests == []
