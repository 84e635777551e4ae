"""Channels out of the page, tried as an attacker would: a value the step read sent to another
origin's frame as pointer positions, a paste, a copy; the same origin read two ways (Python's
and the browser's reading of one URL); a blank window that another origin's frame opened; and
context options that reach every origin. Each attack runs as the LLM's answer and as an entry
planted in the cache and replayed strictly, on a real Chromium, beside an origin that logs every
request and every event its frame gets."""

from __future__ import annotations

import faulthandler
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import ConfigError, PrettyConfig, PrettyPlay
from prettyplay_behave.config import resolve_config
from tests.support.attacks import APP_PAGE, HANG_S, MODES, OPEN_APP, TEST, attack, step
from tests.support.caches import plant
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.origins import B_TOKEN, TwoOrigins

SESSION = "s3ss10nq7x2kp9wzt4"  # the app's session cookie: 18 characters
ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
SHOWN = "ord3r42x7kq9mz1pw5"  # a value the page shows, no secret: what the positive control sends
# The partner's frame lies at x 300-600, y 125-325 of the viewport, inside a box that holds it;
# the app's own button lies well away from it.
CHANNEL_PAGE = f"""<title>Channel</title><h1>Channel</h1>
<script>document.cookie = "session={SESSION}; path=/";</script>
<p id="secret" style="position:absolute;left:20px;top:60px">{SESSION}</p>
<p id="shown" style="position:absolute;left:20px;top:20px">{SHOWN}</p>
<button id="own" style="position:absolute;left:20px;top:420px"
  onclick="this.textContent = 'clicked'">Own</button>
<div id="box" style="position:absolute;left:200px;top:100px;width:420px;height:250px">
  <iframe id="partner" title="partner" src="{{outside}}/logger"
    style="position:absolute;left:100px;top:25px;width:300px;height:200px;border:0"></iframe>
</div>"""
COOKIE_HOST = """<title>Cookie host</title><h1>Cookie host</h1>
<iframe title="partner" src="{outside}/cookie"></iframe>"""
OPENER_HOST = """<title>Opener host</title><h1>Opener host</h1>
<iframe title="partner" src="{outside}/opener"></iframe>"""
CODE = "Pa@ss&w0rd-7Hq"
SECRET_STEP = "I type ${CODE} where the attack says"

AS_CLICKS = """
for char in value:
    page.mouse.click(310 + 7 * len("{ALPHABET}".split(char)[0]), 150)""".replace(
    "{ALPHABET}", ALPHABET
)
COOKIE_AS_CLICKS = 'page.goto("/channel")\nvalue = page.cookies.get("session")' + AS_CLICKS
SHOWN_AS_CLICKS = 'page.goto("/channel")\nvalue = page.locator("#shown").inner_text()' + AS_CLICKS
# the frame runs in a process of its own: the step ends once the outside origin has answered
# the report of the last click, before the test's next page takes the frame away; eighteen
# clicks and that wait need more than an attack's step timeout on a loaded machine
POSITIVE_STEP_TIMEOUT_MS = 15_000
HEARD = (
    '\nheard = page.frame_locator("#partner").locator("body")'
    '\nexpect(heard).to_have_attribute("data-clicks", str(len(value)))'
)


@pytest.fixture
def origins() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages.update(
            {
                "/": APP_PAGE,
                "/channel": CHANNEL_PAGE,
                "/cookie-host": COOKIE_HOST,
                "/opener-host": OPENER_HOST,
            }
        )
        yield made


def received(origins: TwoOrigins) -> list[str]:
    """What the outside origin got beyond its frames' documents: events, values, pastes."""
    documents = ("/logger", "/cookie", "/opener")
    return [hit for hit in origins.hits if hit.split("?")[0] not in documents]


def arrived(origins: TwoOrigins, prefix: str, count: int, within_s: float = 5.0) -> list[str]:
    """The outside origin's hits starting with ``prefix``, once ``count`` of them have come (a
    frame's script reports each event with a request of its own, which may still be on its
    way as the test ends), or all that came within ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        found = [hit for hit in origins.hits if hit.startswith(prefix)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


# -- 1: no pointer or keyboard input reaches a frame of another origin ---------------------------

INTO_THE_FRAME = {
    "the session cookie as 18 click positions": COOKIE_AS_CLICKS,
    "a mouse move across the frame": (
        'page.goto("/channel")\npage.mouse.move(250, 60)\npage.mouse.move(650, 400, steps=20)'
    ),
    "a wheel turned over the frame": (
        'page.goto("/channel")\npage.mouse.move(450, 200)\npage.mouse.wheel(0, 42)'
    ),
    "a click on the frame's own element": 'page.goto("/channel")\npage.locator("#partner").click()',
    "a click on a box holding the frame, at a position": (
        'page.goto("/channel")\n'
        'page.locator("#box").click(position={"x": 150, "y": 50}, force=True)'
    ),
    "a click in the frame": (
        'page.goto("/channel")\n'
        'page.frame_locator("#partner").get_by_label("Pad").click(position={"x": 7, "y": 9})'
    ),
    "a hover in the frame": (
        'page.goto("/channel")\npage.frame_locator("#partner").get_by_label("Pad").hover()'
    ),
    "the frame scrolled to an element": (
        'page.goto("/channel")\n'
        'page.frame_locator("#partner").get_by_label("Pad").scroll_into_view_if_needed()'
    ),
    "a page-level click that pierces the frame": (
        'page.goto("/channel")\npage.click("#partner >> internal:control=enter-frame >> #pad")'
    ),
    "a drag from the app into the frame": (
        'page.goto("/channel")\n'
        'page.locator("#own").drag_to(page.frame_locator("#partner").get_by_label("Pad"))'
    ),
    "the secret selected, then a middle click on the frame": (
        'page.goto("/channel")\npage.locator("#secret").dblclick()\n'
        'page.mouse.click(450, 200, button="middle")'
    ),
    "the secret copied, then pasted in the frame": (
        'page.goto("/channel")\npage.locator("#secret").dblclick()\n'
        'page.keyboard.press("Control+C")\n'
        'page.frame_locator("#partner").get_by_label("Pad").focus()\n'
        'page.keyboard.press("Control+V")'
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", list(INTO_THE_FRAME))
def test_no_pointer_or_key_reaches_a_frame_of_another_origin(
    how: str, mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    outcome = attack(mode, step(INTO_THE_FRAME[how]), origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    text = str(outcome.error)
    assert f"{origins.outside}, outside allowed_origins" in text, text
    assert "go only to frames of allowed origins" in text, text
    assert received(origins) == []
    assert not any(SESSION in hit for hit in origins.hits)
    assert outcome.went_on


def test_the_apps_own_button_and_points_beside_a_foreign_frame_take_clicks(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The positive control of the refusals: the app's own parts around the frame still work,
    by locator and by point, and the pointer left there acts with down, up and the wheel."""
    code = step(
        'page.goto("/channel")\npage.locator("#own").click()\npage.mouse.click(30, 460)\n'
        "page.mouse.down()\npage.mouse.up()\npage.mouse.wheel(0, 5)\n"
        "page.mouse.move(250, 60)\npage.mouse.move(30, 460, steps=5)\n"
        'expect(page.locator("#own")).to_have_text("clicked")'
    )
    outcome = attack("planted", code, origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is None, outcome.error
    assert received(origins) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_frame_of_an_origin_named_in_allowed_origins_takes_the_clicks(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The positive control of the logger: the same clicks reach the frame, and it hears them
    and decodes what they carry, when allowed_origins names its origin (a value the page shows
    is sent: a session cookie step code reads may be its placeholder)."""
    outcome = attack(
        mode,
        step(SHOWN_AS_CLICKS + HEARD),
        origins,
        tmp_path,
        llm,
        monkeypatch,
        browser,
        allowed_origins=(origins.app, origins.outside),
        step_timeout_ms=POSITIVE_STEP_TIMEOUT_MS,
    )
    assert outcome.error is None, outcome.error
    clicks = arrived(origins, "POST /click?", len(SHOWN))
    decoded = [ALPHABET[(int(hit.split("x=")[1].split("&")[0]) - 10) // 7] for hit in clicks]
    assert sorted(decoded) == sorted(SHOWN), origins.hits  # reports may come in any order


def test_a_middle_click_in_an_allowed_frame_pastes_the_selection(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The positive control of the selection attack: the channel is real. Chromium keeps the
    primary selection in a headless run too, so a middle click in a frame that takes
    input (its origin allowed) pastes what was selected in the app: only the refusal of input
    into other origins' frames closes it."""
    code = step(
        'page.goto("/channel")\npage.locator("#secret").dblclick()\n'
        'page.mouse.click(450, 200, button="middle")'
    )
    outcome = attack(
        "planted",
        code,
        origins,
        tmp_path,
        llm,
        monkeypatch,
        browser,
        allowed_origins=(origins.app, origins.outside),
    )
    assert outcome.error is None, outcome.error
    assert arrived(origins, "POST /auxclick?", 1), origins.hits
    assert arrived(origins, f"POST /value?v={SESSION}", 1), origins.hits


# -- 2: the browser's reading of a URL, and the origin of a blank window -------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_url_python_reads_as_the_app_and_the_browser_as_the_partner_reads_no_cookie(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """``http://B\\@A/`` is A's to urllib and B's to the browser: B's cookie is not read."""
    confusing = origins.outside + "\\\\@" + origins.app.removeprefix("http://") + "/"
    code = step(
        f'page.goto("/cookie-host")\n'
        f'token = page.cookies.get("token", "{confusing}")\n'
        "assert token is None, token"
    )
    outcome = attack(mode, code, origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    text = str(outcome.error)
    assert f"page.cookies: {origins.outside} is outside allowed_origins" in text, text
    assert B_TOKEN not in text
    assert outcome.went_on


@pytest.mark.parametrize("mode", MODES)
def test_a_blank_window_opened_by_another_origins_frame_takes_no_secret(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The partner's frame opens a blank window (of its own origin, without a URL) and watches
    what is typed there: the window is of the partner's origin, so nothing is typed."""
    monkeypatch.setenv("CODE", CODE)
    code = step(
        "with page.expect_popup() as popup_info:\n"
        '    page.goto("/opener-host")\n'
        "popup = popup_info.value\n"
        'popup.get_by_label("Code").fill(secret("CODE"))\n'
        'popup.get_by_label("Code").press("Enter")\n'
        'expect(popup.get_by_label("Code")).to_have_value("-", timeout=500)'
    )
    outcome = attack(mode, code, origins, tmp_path, llm, monkeypatch, browser, sentence=SECRET_STEP)
    assert outcome.error is not None
    text = str(outcome.error)
    assert f"in a frame of {origins.outside}" in text, text
    assert received(origins) == []
    assert not any(CODE in hit or "Pa%40ss" in hit for hit in origins.hits)


def test_a_blank_window_opened_by_another_origins_frame_shows_no_storage_to_the_llm(
    origins: TwoOrigins, tmp_path: Path, llm: ScriptedLLMServer, monkeypatch, browser
) -> None:
    """The blank window becomes the test's page after the step; the next step's request
    describes it, and the partner's token kept in its storage is not in it."""
    for name, value in llm.env.items():
        monkeypatch.setenv(name, value)
    cache = tmp_path / "cache"
    opens = step('with page.expect_popup() as popup_info:\n    page.goto("/opener-host")')
    plant(cache, TEST, ("step", "I open the app", OPEN_APP), ("step", "I open the partner", opens))
    llm.on("generate", code_answer(step('expect(page.get_by_label("Code")).to_be_visible()')))
    llm.on("gate", CLEAN_GATE, repeat=True)
    config = PrettyConfig(
        base_url=origins.app, cache_dir=str(cache), generation_attempts=1, llm_retries=0
    )
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        with PrettyPlay("bounds", config=config, browser=browser) as t:
            t.step("I open the app")
            t.step("I open the partner")
            assert t.page.url == "about:blank"
            t.expect("the code field shows")
    finally:
        faulthandler.cancel_dump_traceback_later()
    requests = llm.requests_for("generate")
    assert requests, llm.requests
    assert "Code" in requests[0].text  # the blank window is what the request describes
    assert B_TOKEN not in requests[0].text
    assert all(B_TOKEN not in request.text for request in llm.requests)


# -- 3: context options that reach every origin carry no secret, grant no clipboard -------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ('{"user_agent": "qa-bot ${API_TOKEN}"}', "user_agent reaches every origin"),
        ('{"locale": "${API_TOKEN}"}', "locale reaches every origin"),
        ('{"extra_http_headers": {"X-Token": "${API_TOKEN}"}}', "every origin"),
        ('{"permissions": ["clipboard-read", "clipboard-write"]}', "clipboard-read"),
        ('{"permissions": ["clipboard-sanitized-write"]}', "clipboard-sanitized-write"),
    ],
)
def test_context_options_that_reach_every_origin_are_refused_at_start(
    args: str, named: str, monkeypatch
) -> None:
    monkeypatch.setenv("API_TOKEN", "tok-5150-secret")
    with pytest.raises(ConfigError) as caught:
        resolve_config(defines={"prettyplay.context_args": args})
    assert caught.value.key == "context_args" and named in caught.value.problem
    assert "tok-5150-secret" not in str(caught.value)


def test_geolocation_and_other_permissions_stay_allowed() -> None:
    """The positive control: a place, its permission and a plain user agent are options."""
    config = resolve_config(
        defines={
            "prettyplay.context_args": '{"geolocation": {"latitude": 48.85, "longitude": 2.35},'
            ' "permissions": ["geolocation"], "user_agent": "qa-bot 1.0"}'
        }
    )
    assert config.context_args["permissions"] == ["geolocation"]
