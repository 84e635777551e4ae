"""Judgments that remember green: code written after its green run keeps what its locators
found; a later replay failure's requests say so, and a renamed control with one clear
candidate heals with the gate alone (in process, on the demo shop, with a scripted provider)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay, ProductDefectError
from prettyplay_behave.cache import CacheStore, Found, GreenRecord, StepEntry, today
from prettyplay_behave.safety.step_code import check_code
from tests.support.llm_server import CLEAN_GATE, code_answer, json_answer
from tests.support.scripted_provider import ScriptedProvider
from tests.support.shop_steps import OPEN_SHOP

ADD_A_MUG = (
    "def step(page) -> None:\n"
    '    page.get_by_role("button", name="Add to cart").first.click()\n'
    '    expect(page.locator("[data-cart-message]")).not_to_be_empty()\n'
)
PRODUCTS_SHOWN = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", name="Products")).to_be_visible()\n'
)
STEPS = (("step", "open the shop"), ("step", "add a mug"), ("expect", "the products are listed"))


def run(shop, tmp_path: Path, provider: ScriptedProvider, browser) -> list[object]:
    settings = PrettyConfig(
        base_url=shop.url, cache_dir=str(tmp_path / "cache"), action_timeout_ms=2_000
    )
    done: list[object] = []
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        for kind, sentence in STEPS:
            done.append(getattr(t, kind)(sentence))
    return done


@pytest.fixture
def greened(fresh_shop, tmp_path: Path, browser) -> ScriptedProvider:
    """The steps generated and written on the shop as it was: one record each of green."""
    provider = ScriptedProvider()
    provider.on(
        "generate", code_answer(OPEN_SHOP), code_answer(ADD_A_MUG), code_answer(PRODUCTS_SHOWN)
    )
    provider.on("gate", CLEAN_GATE, repeat=True)
    run(fresh_shop, tmp_path, provider, browser)
    return provider


def entries(tmp_path: Path) -> dict[str, StepEntry]:
    """The entries of the test's cache file, as a fresh store reads them, by sentence."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    return {e.sentence: e for e in store.library(tmp_path / "cache" / "t.json").entries}


def green_of(tmp_path: Path, sentence: str) -> GreenRecord:
    green = entries(tmp_path)[sentence].green
    assert green is not None, sentence
    return green


def test_written_code_keeps_what_its_locators_found(greened, fresh_shop, tmp_path: Path) -> None:
    green = green_of(tmp_path, "add a mug")
    assert (green.day, green.url) == (today(), fresh_shop.url + "/")
    button = Found('get_by_role("button", name="Add to cart").first', "button", "Add to cart",
                   text="Add to cart", tag="button")  # fmt: skip
    assert green.found[0] == button
    assert green.found[1].locator == 'locator("[data-cart-message]")'
    assert green.found[1].role == "status" and "added to cart" in green.found[1].text
    heading = green_of(tmp_path, "the products are listed").found
    assert [(f.role, f.name, f.tag) for f in heading] == [("heading", "Products", "h2")]


def test_a_rename_heals_with_the_gate_alone_and_a_check_is_judged_with_its_record(
    greened: ScriptedProvider, fresh_shop, tmp_path: Path, browser
) -> None:
    fresh_shop.set_variant("changed-ui")
    provider = ScriptedProvider()
    provider.on("gate", CLEAN_GATE)
    defect = {"label": "product_defect", "explanation": "the list lost its heading",
              "recommendation": "-"}  # fmt: skip
    provider.on("classify", json_answer(defect))
    with pytest.raises(ProductDefectError, match="the list lost its heading"):
        run(fresh_shop, tmp_path, provider, browser)
    assert [r.purpose for r in provider.requests] == ["gate", "classify"]

    # the action: its button was renamed, and one element is most like it
    gate = provider.requests_for("gate")[0].text
    assert "judged without the model" in gate
    assert 'get_by_role("button", name="Add to basket")' in gate
    kept = entries(tmp_path)["add a mug"]
    assert kept.origin == "healed"
    assert 'page.get_by_role("button", name="Add to basket").first.click()' in kept.code
    assert green_of(tmp_path, "add a mug").found[0].name == "Add to basket"  # its own record

    # the check: never rewritten, judged with what it found when it passed
    classify = provider.requests_for("classify")[0].content("user")
    assert f"(this is the cached code: it passed on {today()}, on {fresh_shop.url}" in classify
    assert '- get_by_role("heading", name="Products")\n  then: heading "Products"' in classify
    assert "  now: nothing\n" in classify
    assert 'most like it on the page now: heading "' in classify
