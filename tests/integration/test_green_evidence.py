"""What green code found: code written after its green run keeps what its locators
found; a later replay failure's requests say so, and a renamed control with one clear
candidate heals with the gate alone (in process, on the demo shop, with a scripted provider)."""

from __future__ import annotations

import faulthandler
import time
from pathlib import Path

import pytest

from prettyplay_behave import IncurableStepError, PrettyConfig, PrettyPlay, ProductDefectError
from prettyplay_behave.browser.tabs import Tabs
from prettyplay_behave.cache import (
    CacheKey,
    CacheStore,
    CacheWrite,
    Found,
    GreenRecord,
    StepEntry,
    today,
)
from prettyplay_behave.engine.renames import renamed_here
from prettyplay_behave.safety.step_code import check_code
from tests.support.attacks import HANG_S
from tests.support.caches import cache_text
from tests.support.changed_ui import CART
from tests.support.llm_server import CLEAN_GATE, code_answer, json_answer
from tests.support.pages import PageServer
from tests.support.scripted_provider import ScriptedProvider
from tests.support.shop_steps import ACCEPT, ADD_A_MUG, ONE_ITEM, OPEN_SHOP

STEPS = (
    ("step", "open the shop"),
    ("step", "accept the cookies"),
    ("step", "add a mug"),
    ("expect", "the cart link shows one item"),
)


def settings(url: str, tmp_path: Path) -> PrettyConfig:
    """A renamed control is red soon, yet a step that passes has time on a loaded machine."""
    cache = str(tmp_path / "cache")
    return PrettyConfig(base_url=url, cache_dir=cache, action_timeout_ms=2_000,
                        expect_timeout_ms=2_000)  # fmt: skip


def verdict(label: str, explanation: str) -> str:
    return json_answer({"label": label, "explanation": explanation, "recommendation": "-"})


def run(
    shop, tmp_path: Path, provider: ScriptedProvider, browser, steps: tuple[int, ...] = (0, 1, 2, 3)
) -> list[object]:
    done: list[object] = []
    with PrettyPlay("t", settings(shop.url, tmp_path), browser=browser, provider=provider) as t:
        for kind, sentence in (STEPS[number] for number in steps):
            done.append(getattr(t, kind)(sentence))
    return done


@pytest.fixture
def greened(fresh_shop, tmp_path: Path, browser) -> ScriptedProvider:
    """The steps generated and written on the shop as it was: one record each of green."""
    provider = ScriptedProvider()
    provider.on(
        "generate",
        *map(code_answer, (OPEN_SHOP, ACCEPT, ADD_A_MUG, ONE_ITEM)),
    )
    provider.on("gate", CLEAN_GATE, repeat=True)
    run(fresh_shop, tmp_path, provider, browser)
    return provider


def entries(tmp_path: Path) -> dict[str, StepEntry]:
    """The entries of the test's cache file, as a fresh store reads them, by sentence."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    return {e.sentence: e for e in store.library().entries}


def green_of(tmp_path: Path, sentence: str) -> GreenRecord:
    green = entries(tmp_path)[sentence].green
    assert green is not None, sentence
    return green


def test_written_code_keeps_what_its_locators_found(greened, fresh_shop, tmp_path: Path) -> None:
    green = green_of(tmp_path, "add a mug")
    # the app's page as a path: its port changes from run to run, and the file would with it
    assert (green.day, green.url) == (today(), "/")
    button = Found('get_by_role("button", name="Add to cart").first', "button", "Add to cart",
                   text="Add to cart", tag="button")  # fmt: skip
    assert green.found[0] == button
    assert green.found[1].locator == 'locator("[data-cart-message]")'
    assert green.found[1].role == "status" and "added to cart" in green.found[1].text
    link = green_of(tmp_path, "the cart link shows one item").found
    assert [(f.role, f.name, f.tag) for f in link] == [("link", "Cart (1)", "a")]


def test_a_rename_heals_with_the_gate_alone_and_a_check_is_judged_with_its_record(
    greened: ScriptedProvider, fresh_shop, tmp_path: Path, browser
) -> None:
    """On the changed shop: the cookie button's new name is like no name it had (classified
    and healed, its request listing what is like it); the cart button's is (the gate alone);
    the check is judged with its record, never rewritten."""
    fresh_shop.set_variant("changed-ui")
    provider = ScriptedProvider()
    provider.on("classify", verdict("rot", "the banner's button was renamed"))
    provider.on("heal", code_answer(CART["I accept the cookie banner"]))
    provider.on("gate", CLEAN_GATE, repeat=True)
    provider.on("classify", verdict("product_defect", "the cart link lost its name"))
    with pytest.raises(ProductDefectError, match="the cart link lost its name"):
        run(fresh_shop, tmp_path, provider, browser)
    purposes = [r.purpose for r in provider.requests]
    assert purposes == ["classify", "heal", "gate", "gate", "classify"]

    # no clear candidate: the heal request lists the elements most like what it found
    heal = provider.requests_for("heal")[0].content("user")
    assert '- get_by_role("button", name="Accept cookies")\n  then: button "Accept cookies"' in heal
    assert '  now: nothing\n  most like it on the page now: button "' in heal
    assert 'button "Allow all" (likeness' in heal

    # the cart button was renamed, and one element is clearly most like it: the gate alone
    gate = provider.requests_for("gate")[1].text
    assert "judged without the model" in gate
    assert 'get_by_role("button", name="Add to basket")' in gate
    kept = entries(tmp_path)["add a mug"]
    assert kept.origin == "healed"
    assert 'page.get_by_role("button", name="Add to basket").first.click()' in kept.code
    assert green_of(tmp_path, "add a mug").found[0].name == "Add to basket"  # its own record

    # the check: judged with what it found when it passed, never rewritten without the model
    # (a check's lost name may be the defect), though one element is clearly like it
    classify = provider.requests_for("classify")[1].content("user")
    assert f"(this is the cached code: it passed on {today()}, on /)" in classify
    assert '- get_by_role("link", name="Cart (1)")\n  then: link "Cart (1)"' in classify
    assert '  now: nothing\n  most like it on the page now: link "Basket (1)"' in classify


def test_a_rewrite_the_gate_refuses_goes_on_to_the_heal(
    greened: ScriptedProvider, fresh_shop, tmp_path: Path, browser
) -> None:
    fresh_shop.set_variant("changed-ui")
    provider = ScriptedProvider()
    refused = {"findings": [{"dimension": "adequacy", "severity": "high",
                             "message": "it adds another product"}]}  # fmt: skip
    provider.on("gate", json_answer(refused))
    provider.on("classify", verdict("rot", "the cart button was renamed"))
    provider.on("heal", code_answer(CART['I add the "Blue Mug" to the cart']))
    provider.on("gate", CLEAN_GATE)
    run(fresh_shop, tmp_path, provider, browser, steps=(0, 2))
    assert [r.purpose for r in provider.requests] == ["gate", "classify", "heal", "gate"]
    history = provider.requests_for("classify")[0].content("user")
    assert "attempt 1: gate violation" in history and "it adds another product" in history
    assert 'name="Add to basket").first.click()' in history  # the refused rewrite
    assert 'get_by_role("article", name="Blue Mug")' in entries(tmp_path)["add a mug"].code


ECHO_PAGE = """<title>Token</title><label>Token <input id="token"></label>
<button onclick="document.getElementById('echo').textContent =
  'Saved ' + document.getElementById('token').value">Save</button>
<p data-testid="echo" id="echo"></p>"""
SAVE_TOKEN = (
    "def step(page) -> None:\n"
    '    page.goto("/")\n'
    '    page.get_by_label("Token").fill(secret("TOKEN"))\n'
    '    page.get_by_role("button", name="Save").click()\n'
    '    expect(page.get_by_test_id("echo")).to_contain_text("Saved")\n'
)


def test_the_record_never_holds_a_secret(
    tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The field a secret was typed into is kept by its label, never its value; a text that
    shows the secret is kept redacted, as page text is."""
    monkeypatch.setenv("TOKEN", "tok-very-secret-123")
    provider = ScriptedProvider()
    provider.on("generate", code_answer(SAVE_TOKEN))
    provider.on("gate", CLEAN_GATE)
    with PageServer({"/": ECHO_PAGE}) as app:
        with PrettyPlay("t", settings(app.url, tmp_path), browser=browser, provider=provider) as t:
            t.step("save the token ${TOKEN}")
    found = green_of(tmp_path, "save the token ${TOKEN}").found
    assert [(f.role, f.name, f.text) for f in found] == [
        ("textbox", "Token", ""),
        ("button", "Save", "Save"),
        ("", "", "Saved ${TOKEN}"),
    ]
    assert found[2].test_id == "echo" and found[2].tag == "p"
    assert "very-secret" not in cache_text(tmp_path / "cache")


def shelf(buy: str) -> str:
    items = "".join(f"<li><h3>{name}</h3><button>{buy} {name}</button></li>"
                    for name in ("Coffee", "Tea"))  # fmt: skip
    return f"<title>Shelf</title><ul>{items}</ul><p role='status' id='s'></p>" + (
        "<script>for (const b of document.querySelectorAll('button')) b.onclick = () => "
        "document.getElementById('s').textContent = 'bought';</script>"
    )


BUY_TEA = (
    "def step(page) -> None:\n"
    '    page.goto("/")\n'
    '    tea = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Tea"))\n'
    '    tea.get_by_role("button", name="Buy Tea").click()\n'
)


def test_a_locator_made_from_another_is_kept_and_repaired_within_it(
    tmp_path: Path, browser
) -> None:
    """Candidates are looked for where the chain before the lost call leads (the Tea item),
    and the chain is spelt with the locator it was filtered by."""
    provider = ScriptedProvider()
    provider.on("generate", code_answer(BUY_TEA))
    provider.on("gate", CLEAN_GATE, repeat=True)
    with PageServer({"/": shelf("Buy")}) as app:
        for _ in ("as it was", "renamed"):
            with PrettyPlay(
                "t", settings(app.url, tmp_path), browser=browser, provider=provider
            ) as t:
                t.step("buy the tea")
            app.pages["/"] = shelf("Add")
    assert [r.purpose for r in provider.requests] == ["generate", "gate", "gate"]
    kept = entries(tmp_path)["buy the tea"]
    assert 'tea.get_by_role("button", name="Add Tea").click()' in kept.code
    locator = green_of(tmp_path, "buy the tea").found[0].locator
    assert locator == (
        'get_by_role("listitem").filter(has=page.get_by_role("heading", name="Tea"))'
        '.get_by_role("button", name="Add Tea")'
    )


def plant_with_record(tmp_path: Path, shop_url: str) -> None:
    """The cart step as a generating run on the reference shop keeps it, record and all."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    button = Found('get_by_role("button", name="Add to cart").first', "button", "Add to cart",
                   text="Add to cart", tag="button")  # fmt: skip
    record = GreenRecord(today(), shop_url + "/", (button,))
    store.write(CacheWrite(CacheKey("t", "step", "open the shop"), OPEN_SHOP, "generated"))
    store.write(
        CacheWrite(CacheKey("t", "step", "add a mug"), ADD_A_MUG, "generated", green=record)
    )


@pytest.mark.parametrize("where", ["strict", "group"])
def test_a_strict_run_never_reads_the_record_and_a_group_judges_with_it(
    where: str, fresh_shop, tmp_path: Path, browser
) -> None:
    """A strict run writes nothing, so it rewrites nothing, and it never reads the record (a
    file's data it needs not): its one classify request is told nothing of it; a group step's
    failure goes to the group's diagnosis, which carries the record."""
    plant_with_record(tmp_path, fresh_shop.url)
    fresh_shop.set_variant("changed-ui")
    provider = ScriptedProvider()
    judged = {"label": "product_defect", "explanation": "the cart button went",
              "recommendation": "-", "root_step": "add a mug"}  # fmt: skip
    provider.on("classify" if where == "strict" else "diagnose", json_answer(judged))
    config = settings(fresh_shop.url, tmp_path)
    if where == "strict":
        config = config.replace(strict=True)
    with PrettyPlay("t", config, browser=browser, provider=provider) as t:
        with pytest.raises(ProductDefectError, match="the cart button went"):
            if where == "strict":
                t.step("open the shop")
                t.step("add a mug")
            else:
                with t.group("buy a mug") as g:
                    g.step("open the shop")
                    g.step("add a mug")
    assert [r.purpose for r in provider.requests] == [
        "classify" if where == "strict" else "diagnose"
    ]
    text = provider.requests[0].content("user")
    if where == "strict":
        assert "this is the cached code: it passed on" not in text
        assert "most like it" not in text and "Add to basket" in text  # the page, not a record
        return
    assert f"(this is the cached code: it passed on {today()}" in text
    assert '  then: button "Add to cart"\n  now: nothing\n' in text
    assert 'most like it on the page now: button "Add to basket" (likeness 0.85); ' in text


WORK_PAGE = "<title>Work</title><h1>Work</h1><p>" + "a" * 34 + "b</p><button>Start</button>"
BACKTRACKING = Found('get_by_text(re.compile("(a+)+$"))', "paragraph", text="a" * 34, tag="p")
PRESS_GO = 'def step(page) -> None:\n    page.get_by_role("button", name="Go").click()\n'


def test_where_the_pages_script_cannot_be_stopped_the_read_closes_the_page_and_goes_on(
    tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser without a DevTools session (Firefox, WebKit): a read of the record that runs
    past action_timeout_ms closes the page; the step is judged without the record, and the
    test goes on in a fresh page."""
    monkeypatch.setattr("prettyplay_behave.browser.stop._devtools", lambda page: None)
    store = CacheStore(tmp_path / "cache", validate=check_code)
    store.write(CacheWrite(CacheKey("t", "step", "open the work page"), OPEN_SHOP, "generated"))
    record = GreenRecord("2026-12-01", "/", (BACKTRACKING,))
    store.write(CacheWrite(CacheKey("t", "step", "press go"), PRESS_GO, "generated", green=record))
    provider = ScriptedProvider()
    provider.on("classify", verdict("incurable", "the button went"))
    with PageServer({"/": WORK_PAGE}) as app:
        config = settings(app.url, tmp_path).replace(action_timeout_ms=1_000)
        with PrettyPlay("t", config, browser=browser, provider=provider) as t:
            t.step("open the work page")
            started = time.monotonic()
            faulthandler.dump_traceback_later(HANG_S, exit=True)
            try:
                with pytest.raises(IncurableStepError, match="cannot be healed"):
                    t.step("press go")
            finally:
                faulthandler.cancel_dump_traceback_later()
            seconds = time.monotonic() - started
            assert t.step("open the work page").outcome == "passed"  # on a fresh page
    assert seconds < 30, seconds
    classify = provider.requests_for("classify")[0].content("user")
    assert "this is the cached code: it passed on" not in classify


def test_a_planted_locator_that_backtracks_ends_a_renames_check_within_its_bound(
    page, pages
) -> None:
    """A rename a heal found is tried where the page shows it: its locators are counted on the
    page, and a locator of cached code is data a pull request can plant. One that backtracks in
    the page is stopped at the bound, and the rename counts as not shown."""
    # V8 backtracks on the planted pattern for hours: a run of "a"s not at the end of its text
    pages.pages["/"] = "<h1>Work</h1><p>" + "a" * 34 + "b</p><button>Start</button>"
    page.goto(pages.url + "/")
    faulthandler.dump_traceback_later(120, exit=True)  # a bound that breaks ends the test
    try:
        started = time.monotonic()
        tabs = Tabs(page)
        planted = ('locator("text=/(a+)+$/")', 'get_by_role("button", name="Start")')
        assert renamed_here(tabs, [planted], within_ms=1_000) is False
        assert time.monotonic() - started < 15
        assert tabs.page.get_by_role("heading").inner_text() == "Work"  # a page to go on with
    finally:
        faulthandler.cancel_dump_traceback_later()
