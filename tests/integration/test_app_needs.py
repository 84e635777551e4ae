"""What real apps' tests need: web storage, cookies, the clock and the browser context's own
options, on a real Chromium, with the scripted server answering the code a competent model
writes; and the bounds of each, tried the way an attacker would."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import (
    CodePolicyError,
    ConfigError,
    IncurableStepError,
    PrettyConfig,
    PrettyPlay,
)
from prettyplay_behave.browser.session import BrowserSession, find_system_chromium
from prettyplay_behave.config import resolve_config
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import BehaveProject
from tests.support import code
from tests.support.code import step
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.origins import TwoOrigins
from tests.support.settings import api_config

# A tea shop whose cart lives in local storage: what it shows after a reload is what it stored.
SHOP = """<!doctype html><title>Tea shop</title><h1>Tea shop</h1>
<button data-testid="add-green">Add Green tea</button>
<button data-testid="add-mint">Add Mint tea</button>
<p data-testid="cart-count">Cart: 0 items</p>
<script>
  const cart = () => JSON.parse(localStorage.getItem("cart") || "[]");
  const show = () => { document.querySelector("[data-testid=cart-count]").textContent =
    `Cart: ${cart().length} items`; };
  for (const [id, name] of [["add-green", "Green tea"], ["add-mint", "Mint tea"]]) {
    document.querySelector(`[data-testid=${id}]`).onclick = () => {
      localStorage.setItem("cart", JSON.stringify([...cart(), name]));
      sessionStorage.setItem("last", name);
      show();
    };
  }
  show();
</script>"""
TODAY = """<!doctype html><title>Today</title>
<p>Today is <span id="weekday"></span></p>
<script>document.getElementById("weekday").textContent =
  new Date().toLocaleDateString("en-US", { weekday: "long", timeZone: "UTC" });</script>"""
STORES = """<!doctype html><title>Stores</title><h1>Store finder</h1>
<button onclick="navigator.geolocation.getCurrentPosition(
  (at) => { document.getElementById('where').textContent =
    `You are at ${at.coords.latitude.toFixed(2)}, ${at.coords.longitude.toFixed(2)}`; },
  () => { document.getElementById('where').textContent = 'Location refused'; })">Find me</button>
<p role="status" id="where"></p>"""
# A careless app that echoes the password it was given.
STAFF = """<!doctype html><title>Staff</title><h1>Staff area</h1>
<p id="echo">Signed in as qa with tea-for-two-42</p>
<iframe title="partner" src="{outside}/frame"></iframe>"""
LOGIN = """<!doctype html><title>Login</title>
<label>Password <input type="password" id="pw"
  oninput="localStorage.setItem('draft', this.value)"></label>"""
GREETS = 'expect(page.get_by_role("heading")).to_have_text("Staff area")'
SEED = 'page.local_storage.set_json("cart", ["Black tea"])'
ONE_ITEM = 'expect(page.get_by_test_id("cart-count")).to_have_text("Cart: 1 items")'
INCURABLE = json_answer({"label": "incurable", "explanation": "-", "recommendation": "-"})
PARTNER_FRAME = """<!doctype html><title>Help</title>
<iframe id="partner" title="partner" src="{outside}/frame"></iframe>"""


@pytest.fixture
def site() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages.update({
            "/shop": SHOP, "/today": TODAY, "/stores": STORES, "/staff": STAFF,
            "/login": LOGIN, "/help": PARTNER_FRAME,
        })  # fmt: skip
        made.protected["/staff"] = "qa:tea-for-two-42"
        yield made


# every test acts within 3 s and generates each step once; a red step ends with its own error
config = functools.partial(api_config, action_timeout_ms=3_000, generation_attempts=1)
answering = functools.partial(code.answering, classify=INCURABLE)


# -- web storage --------------------------------------------------------------------------------


def test_a_cart_kept_in_local_storage_survives_a_reload_and_is_read_back(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the tea shop": 'page.goto("/shop")',
        "add green tea and mint tea": (
            'page.get_by_test_id("add-green").click()\npage.get_by_test_id("add-mint").click()'
        ),
        "reload the page": "page.reload()",
        "the stored cart holds both teas": (
            'assert page.local_storage.get_json("cart") == ["Green tea", "Mint tea"], '
            'page.local_storage.get("cart")\n'
            'assert page.local_storage.keys() == ["cart"]\n'
            'assert page.session_storage.get("last") == "Mint tea"\n'
            'expect(page.get_by_test_id("cart-count")).to_have_text("Cart: 2 items")'
        ),
        "empty the stored cart": 'page.local_storage.remove("cart")\npage.reload()',
        "the cart is empty": (
            'assert page.local_storage.items() == []\n'
            'expect(page.get_by_test_id("cart-count")).to_have_text("Cart: 0 items")'
        ),
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        for sentence in ("open the tea shop", "add green tea and mint tea", "reload the page"):
            assert t.step(sentence).outcome == "passed"
        assert t.expect("the stored cart holds both teas").outcome == "passed"
        assert t.step("empty the stored cart").outcome == "passed"
        assert t.expect("the cart is empty").outcome == "passed"


def test_local_storage_seeded_before_the_page_loads_is_what_the_app_finds(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "the stored cart holds black tea": (
            'page.local_storage.set_json("cart", ["Black tea"])'
        ),
        "open the tea shop": 'page.goto("/shop")',
        "the cart shows 1 item": (
            'expect(page.get_by_test_id("cart-count")).to_have_text("Cart: 1 items")'
        ),
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        assert t.step("the stored cart holds black tea").outcome == "passed"
        assert t.page.url == "about:blank"  # seeded without a page of the app
        t.step("open the tea shop")
        assert t.expect("the cart shows 1 item").outcome == "passed"


def test_session_storage_before_a_page_loaded_is_refused_with_what_to_do(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {"remember the last tea": 'page.session_storage.set("last", "Mint tea")'})
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(Exception) as caught:
            t.step("remember the last tea")
    assert "session storage" in str(caught.value) or "session_storage" in str(caught.value)
    assert "open one first" in str(caught.value)


# -- the clock ----------------------------------------------------------------------------------


def test_a_fixed_clock_makes_the_page_show_that_days_weekday(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "the date is Friday 2 February 2024": 'page.clock.set_fixed_time("2024-02-02T10:00:00Z")',
        "open today's page": 'page.goto("/today")',
        "the page says today is Friday": 'expect(page.locator("#weekday")).to_have_text("Friday")',
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        assert t.step("the date is Friday 2 February 2024").outcome == "passed"
        t.step("open today's page")
        assert t.expect("the page says today is Friday").outcome == "passed"


# -- the context --------------------------------------------------------------------------------


def test_geolocation_and_its_permission_come_from_context_args(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the store finder": 'page.goto("/stores")',
        "ask where I am": 'page.get_by_role("button", name="Find me").click()',
        "the page shows where I am": (
            'expect(page.get_by_role("status")).to_have_text("You are at 52.52, 13.40")'
        ),
    })  # fmt: skip
    args = {"geolocation": {"latitude": 52.52, "longitude": 13.4}, "permissions": ["geolocation"]}
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", context_args=args), browser=browser
    ) as t:
        t.step("open the store finder")
        t.step("ask where I am")
        assert t.expect("the page shows where I am").outcome == "passed"


def test_basic_auth_from_a_secret_reaches_the_app_and_no_other_origin(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("STAFF_PASSWORD", "tea-for-two-42")
    answering(llm_env, {
        "open the staff area": 'page.goto("/staff")',
        "the staff area greets me": GREETS,
        "the page says who I am": 'assert False, page.locator("#echo").inner_text()',
    })  # fmt: skip
    args = {"http_credentials": {"username": "qa", "password": "${STAFF_PASSWORD}"}}
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", context_args=args, healing_attempts=0),
        browser=browser,
    ) as t:  # fmt: skip
        t.step("open the staff area")
        assert t.expect("the staff area greets me").outcome == "passed"
        with pytest.raises(Exception) as caught:
            t.expect("the page says who I am")
    assert "Signed in as qa with ${STAFF_PASSWORD}" in str(caught.value)
    assert "/frame" in site.hits  # the partner frame loaded, without the credentials
    assert not [hit for hit in site.hits if hit.startswith("Authorization")]
    assert all("tea-for-two-42" not in r.text for r in llm_env.requests)


def test_without_the_credentials_the_staff_area_stays_closed(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {"open the staff area": 'page.goto("/staff")'})
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", healing_attempts=0), browser=browser
    ) as t:
        # the app answers 401: the step lands on an error page, which is no green step
        with pytest.raises(IncurableStepError, match="answered HTTP 401"):
            t.step("open the staff area")


def test_expect_timeout_ms_is_the_wait_of_a_matcher_that_names_none(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the tea shop": 'page.goto("/shop")',
        "the cart shows 9 items": (
            'expect(page.get_by_test_id("cart-count")).to_have_text("Cart: 9 items")'
        ),
    })  # fmt: skip
    settings = config(site.app, tmp_path / "cache", expect_timeout_ms=700, healing_attempts=0)
    with PrettyPlay("t", config=settings, browser=browser) as t:
        t.step("open the tea shop")
        with pytest.raises(Exception) as caught:
            t.expect("the cart shows 9 items")
    assert "700ms" in str(caught.value)


# -- the bounds ---------------------------------------------------------------------------------


def test_cookies_are_read_by_name_for_the_apps_origin_only_and_redacted_on_the_way_out(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the tea shop": 'page.goto("/shop")',
        "the session cookie is set": (
            'assert page.cookies.get("theme") == "dark"\n'
            'assert page.cookies.get("partner_session") is None\n'
            'assert sorted(page.cookies.names()) == ["session", "theme"]\n'
            'assert page.cookies.get("theme", "/shop") == "dark"\n'
            'assert False, "session " + page.cookies.get("session")'
        ),
    })  # fmt: skip
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", healing_attempts=0), browser=browser
    ) as t:
        t.page.context.add_cookies([
            {"name": "session", "value": "s3cr3t-session-token", "url": site.app},
            {"name": "theme", "value": "dark", "url": site.app},
            {"name": "partner_session", "value": "partner-token-9", "url": site.outside},
        ])  # fmt: skip
        t.step("open the tea shop")
        with pytest.raises(Exception) as caught:
            t.expect("the session cookie is set")
    assert "session ${cookie session}" in str(caught.value)
    assert "s3cr3t-session-token" not in str(caught.value)
    assert all("s3cr3t-session-token" not in r.text for r in llm_env.requests)


def test_a_value_the_app_stored_from_a_secret_reads_back_redacted(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PASSWORD", "pp-correct-horse")
    answering(llm_env, {
        "open the login page": 'page.goto("/login")',
        "type the password ${PASSWORD}": 'page.get_by_label("Password").fill(secret("PASSWORD"))',
        "the draft is kept": (
            'value = page.local_storage.get("draft")\n'
            'assert False, list(value) + [page.local_storage.items()]'
        ),
        # step code itself sees the placeholder, not the value (not only what leaves it)
        "the draft reads as its placeholder": (
            'assert page.local_storage.get("draft") == "${PASSWORD}"'
        ),
    })  # fmt: skip
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", healing_attempts=0), browser=browser
    ) as t:
        t.step("open the login page")
        assert t.step("type the password ${PASSWORD}").outcome == "passed"
        with pytest.raises(Exception) as caught:
            t.expect("the draft is kept")
        assert t.expect("the draft reads as its placeholder").outcome == "passed"
    text = str(caught.value)
    assert "$" in text and "pp-correct-horse" not in text and "'p', 'p', '-'" not in text
    assert all("correct-horse" not in r.text for r in llm_env.requests)


@pytest.mark.parametrize(
    ("code", "refused"),
    [
        ('page.fill("#pw", secret("PASSWORD"))\nx = page.local_storage.get("draft")', "read"),
        ('page.local_storage.set("token", secret("PASSWORD"))', "cannot read the page back"),
        ('x = page.local_storage\nx.set("token", secret("PASSWORD"))', "cannot read the page back"),
        ("page.evaluate(\"localStorage.getItem('k')\")", "page.local_storage"),
        ("page.context.cookies()", "'context'"),
        ("page.local_storage._page._target.context.cookies()", "'_page'"),
    ],
)
def test_step_code_reaches_no_other_origins_storage_and_no_secret_read_back(
    code: str, refused: str
) -> None:
    with pytest.raises(CodePolicyError) as caught:
        check_code(step(code))
    assert refused in str(caught.value) or refused in caught.value.problem


def test_the_proxies_refuse_what_the_policy_cannot_see(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the help page": 'page.goto("/help")',
        "read the partner frame's storage": (
            'page.frame_locator("#partner").local_storage.get("k")'
        ),
        "read the partner's cookie": f'page.cookies.get("partner_session", "{site.outside}/")',
    })  # fmt: skip
    settings = config(site.app, tmp_path / "cache", healing_attempts=0)
    with PrettyPlay("t", config=settings, browser=browser) as t:
        t.step("open the help page")
        t.page.context.add_cookies([
            {"name": "partner_session", "value": "partner-token-9", "url": site.outside}
        ])  # fmt: skip
        with pytest.raises(Exception) as frame:
            t.step("read the partner frame's storage")
        with pytest.raises(Exception) as cookie:
            t.step("read the partner's cookie")
    assert "frame_locator.local_storage is not available" in str(frame.value)
    assert f"page.cookies: {site.outside} is outside allowed_origins" in str(cookie.value)
    assert "partner-token-9" not in str(cookie.value)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ('{"proxy": {"server": "http://127.0.0.2:3128"}}', "proxy cannot be set"),
        ('{"base_url": "http://127.0.0.2"}', "base_url cannot be set"),
        ('{"record_har_path": "/tmp/all.har"}', "typed secrets"),
        ('{"http_credentials": {"username": "qa", "password": "plain"}}', "${NAME}"),
        ('{"extra_http_headers": {"Authorization": "Bearer ${TOKEN}"}}', "every origin"),
        ('{"geolocaton": {"latitude": 1, "longitude": 2}}', "did you mean geolocation"),
    ],
)
def test_context_args_that_would_widen_the_bounds_are_a_config_error_at_start(
    args: str, named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(defines={"prettyplay.context_args": args})
    assert caught.value.key == "context_args" and named in caught.value.problem
    assert "plain" not in str(caught.value)  # a password is never shown


def test_credentials_for_another_origin_are_refused_when_the_context_opens(
    site: TwoOrigins, monkeypatch: pytest.MonkeyPatch, browser
) -> None:
    monkeypatch.setenv("STAFF_PASSWORD", "tea-for-two-42")
    args = {
        "http_credentials": {
            "username": "qa", "password": "${STAFF_PASSWORD}", "origin": site.outside,
        }
    }  # fmt: skip
    test_config = PrettyConfig(base_url=site.app, context_args=args).for_test()
    with pytest.raises(ConfigError) as caught:
        BrowserSession(PrettyConfig(), browser).context_options(test_config, None)
    assert "may go only to the test's origins" in caught.value.problem
    assert site.outside in caught.value.problem


def test_an_unset_credential_variable_names_itself_before_the_context_opens(
    site: TwoOrigins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser
) -> None:
    monkeypatch.delenv("STAFF_PASSWORD", raising=False)
    args = {"http_credentials": {"username": "qa", "password": "${STAFF_PASSWORD}"}}
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", context_args=args), browser=browser
    ) as t:
        with pytest.raises(ConfigError) as caught:
            t.page  # noqa: B018 (the test's context opens with its page)
    assert "set the environment variable STAFF_PASSWORD" in str(caught.value)


def test_a_channel_that_is_not_installed_is_a_config_error_naming_it(playwright) -> None:
    session = BrowserSession(PrettyConfig(browser_channel="msedge"), playwright=playwright)
    try:
        with pytest.raises(ConfigError) as caught:
            session.browser  # noqa: B018
    finally:
        session.close()
    assert caught.value.key == "browser_channel" and "msedge" in caught.value.problem


def test_the_chromium_channel_runs_the_full_browser_not_its_headless_shell(playwright) -> None:
    full = find_system_chromium(headless=False)
    session = BrowserSession(PrettyConfig(browser_channel="chromium"), playwright=playwright)
    try:
        assert session._executable("/nowhere/playwright-chromium") == full
        assert session.browser.new_page().evaluate("1 + 1") == 2
    finally:
        session.close()
    default = BrowserSession(PrettyConfig())
    assert default._executable("/nowhere/playwright-chromium") == find_system_chromium()


# -- a real behave run: generated once, then replayed strictly ----------------------------------

FEATURE = """\
Feature: What the tea shop's tests need

  Scenario: The cart survives a reload
    Given I open the tea shop
    When I add green tea and mint tea
    And I reload the page
    Then local storage keeps both teas in the cart

  Scenario: A cart stored before the shop opens
    Given local storage holds a cart with black tea
    When I open the tea shop
    Then the cart shows 1 items

  Scenario: Today's weekday under a fixed clock
    Given the date is Friday 2 February 2024
    When I open today's page
    Then the page says today is Friday

  @prettyplay.context_args={"geolocation":{"latitude":52.52,"longitude":13.4}}
  Scenario: The store finder knows where I am
    When I open the store finder
    And I ask where I am
    Then the page shows where I am

  @staff
  Scenario: The staff area behind basic auth
    When I open the staff area
    Then the staff area greets me
"""
# What a competent model writes for each sentence.
ANSWERS = {
    "I open the tea shop": 'page.goto("/shop")',
    "I add green tea and mint tea": (
        'page.get_by_test_id("add-green").click()\npage.get_by_test_id("add-mint").click()'
    ),
    "I reload the page": "page.reload()",
    "local storage keeps both teas in the cart": (
        'assert page.local_storage.get_json("cart") == ["Green tea", "Mint tea"]'
    ),
    "local storage holds a cart with black tea": SEED,
    "the cart shows 1 items": ONE_ITEM,
    "the date is Friday 2 February 2024": 'page.clock.set_fixed_time("2024-02-02T10:00:00Z")',
    "I open today's page": 'page.goto("/today")',
    "the page says today is Friday": 'expect(page.locator("#weekday")).to_have_text("Friday")',
    "I open the store finder": 'page.goto("/stores")',
    "I ask where I am": 'page.get_by_role("button", name="Find me").click()',
    "the page shows where I am": (
        'expect(page.get_by_role("status")).to_have_text("You are at 52.52, 13.40")'
    ),
    "I open the staff area": 'page.goto("/staff")',
    "the staff area greets me": GREETS,
}  # fmt: skip
# The permission comes from the hook, the credentials for @staff scenarios too.
ENVIRONMENT = """\
from prettyplay_behave.behave import use_prettyplay


def prettyplay_context_args(context, scenario, args):
    args = {**args, "permissions": ["geolocation"]}
    if "staff" in scenario.effective_tags:
        args["http_credentials"] = {"username": "qa", "password": "${STAFF_PASSWORD}"}
    return args


use_prettyplay(globals())
"""


def test_a_behave_run_generates_storage_clock_and_context_steps_then_replays_them_strictly(
    site: TwoOrigins, project: BehaveProject, llm: ScriptedLLMServer
) -> None:
    project.write("features/environment.py", ENVIRONMENT)
    project.write("features/tea.feature", FEATURE)
    for sentence, body in ANSWERS.items():
        llm.on("generate", code_answer(step(body)), step=sentence)
    llm.on("gate", CLEAN_GATE, repeat=True)
    secret = {"STAFF_PASSWORD": "tea-for-two-42"}
    base = ("-D", f"prettyplay.base_url={site.app}")
    cold = project.run(*base, env={**llm.env, **secret})
    assert cold.returncode == 0, cold
    assert "5 scenarios passed, 0 failed" in cold.output
    assert len(llm.requests_for("generate")) == len(ANSWERS)
    # the request showed what the shop kept, and the contract taught how to read it
    check = next(r for r in llm.requests_for("generate") if "keeps both teas" in str(r.step))
    assert 'local "cart": "[\\"Green tea\\",\\"Mint tea\\"]"' in check.content("user")
    assert "page.local_storage" in check.content("system")
    assert "tea-for-two-42" not in cold.output
    assert all("tea-for-two-42" not in r.text for r in llm.requests)

    llm.reset()
    replay = project.run(*base, "-D", "prettyplay.strict=true", env=secret)
    assert replay.returncode == 0, replay
    assert "5 scenarios passed, 0 failed" in replay.output and "0 requests" in replay.output
    assert llm.requests == []
    without = project.run(*base, "-D", "prettyplay.strict=true", "--tags=@staff")
    assert without.returncode != 0
    assert "set the environment variable STAFF_PASSWORD" in without.output
