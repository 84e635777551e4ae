"""The bounds of step code inside the page, tried as an attacker would: typing, secrets and files
sent into a frame of another origin, waits that run in the page's own JavaScript, and secrets read
back from the page in other spellings. Each attack runs once as the LLM's answer and once planted
in the cache and replayed strictly, on a real Chromium, beside an origin that logs what it gets."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from html import escape
from pathlib import Path

import pytest

from prettyplay_behave.browser.stop import GRACE_S
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from prettyplay_behave.safety.limits import MAX_TYPED_KEYS
from prettyplay_behave.safety.step_code import check_code
from tests.support.attacks import (
    APP_PAGE,
    BUSY_TIMEOUT_MS,
    INCURABLE,
    MARGIN_S,
    MODES,
    STEP_TIMEOUT_MS,
    attack,
    step,
)
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.origins import TwoOrigins

CODE = "Pa@ss&w0rd-7Hq"
SECRET_STEP = "I type ${CODE} where the attack says"
PARTNER_HOST = """<title>Checkout</title><h1>Checkout</h1>
<label>Own <input id="own"></label>
<iframe id="partner" title="partner" src="{outside}/partner"></iframe>"""
TO_PARTNER = 'partner = page.frame_locator("#partner")\n'


@pytest.fixture
def origins() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages.update(
            {"/": APP_PAGE, "/checkout": PARTNER_HOST, "/aaa": "<p>" + "a" * 34 + "!</p>"}
        )
        yield made


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "session.json").write_text('{"cookies": [{"name": "session", "value": "s3cr3t"}]}')
    return folder


def leaked_to_partner(origins: TwoOrigins) -> list[str]:
    """What the partner frame's own script reported: keys, values, files, posts."""
    return [hit for hit in origins.hits if not hit.startswith("/partner")]


# -- 1: typing, secrets and files reach only frames of allowed origins ---------------------------

INTO_THE_FRAME = {
    "a secret filled in, then Enter": (
        TO_PARTNER + 'partner.get_by_label("Code").fill(secret("CODE"))\n'
        'partner.get_by_label("Code").press("Enter")'
    ),
    "plain text filled in": TO_PARTNER + 'partner.get_by_label("Code").fill("4242")',
    "a secret typed key by key": (
        TO_PARTNER + 'partner.get_by_label("Code").press_sequentially(secret("CODE"))'
    ),
    "keys typed where the frame has the focus": (
        TO_PARTNER + 'partner.get_by_label("Code").click()\npage.keyboard.type(secret("CODE"))'
    ),
    "a key pressed where the frame has the focus": (
        TO_PARTNER + 'partner.get_by_label("Code").focus()\npage.keyboard.press("a")'
    ),
    "a kept storage state uploaded": (
        TO_PARTNER + 'partner.get_by_label("File").set_input_files("session.json")'
    ),
    "a page-level fill that pierces the frame": (
        'page.fill("#partner >> internal:control=enter-frame >> #code", "4242")'
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", list(INTO_THE_FRAME))
def test_nothing_is_typed_or_uploaded_into_a_frame_of_another_origin(
    how: str,
    mode: str,
    origins: TwoOrigins,
    files: Path,
    tmp_path: Path,
    llm,
    monkeypatch,
    browser,
) -> None:
    monkeypatch.setenv("CODE", CODE)
    code = step('page.goto("/checkout")\n' + INTO_THE_FRAME[how])
    outcome = attack(
        mode,
        code,
        origins,
        tmp_path,
        llm,
        monkeypatch,
        browser,
        sentence=SECRET_STEP,
        files_dir=str(files),
    )
    assert outcome.error is not None
    text = str(outcome.error)
    assert "outside allowed_origins; typed text and files go only to frames" in text, text
    assert origins.outside in text
    assert leaked_to_partner(origins) == []
    assert outcome.went_on


# The app itself puts the focus into the partner's field (as a payment widget's host does): no
# click or focus of the step's own moved it there, so only the keyboard's check stands between
# the keys and the frame.
FOCUSED_PARTNER_HOST = PARTNER_HOST.replace(
    'src="{outside}/partner">',
    'src="{outside}/partner" onload="this.focus()">',
)


def test_keys_typed_where_the_app_put_the_focus_into_a_foreign_frame_are_refused(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    monkeypatch.setenv("CODE", CODE)
    origins.pages["/focused"] = FOCUSED_PARTNER_HOST
    code = step('page.goto("/focused")\npage.keyboard.type(secret("CODE"))')
    outcome = attack(
        "planted", code, origins, tmp_path, llm, monkeypatch, browser, sentence=SECRET_STEP
    )
    assert outcome.error is not None
    text = str(outcome.error)
    assert "keyboard.type: the element is in a frame of" in text, text
    assert leaked_to_partner(origins) == []


def test_the_apps_own_field_beside_a_foreign_frame_takes_typing_and_a_secret(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    monkeypatch.setenv("CODE", CODE)
    code = step(
        'page.goto("/checkout")\npage.get_by_label("Own").fill(secret("CODE"))\n'
        'page.keyboard.press("End")'
    )
    outcome = attack(
        "planted", code, origins, tmp_path, llm, monkeypatch, browser, sentence=SECRET_STEP
    )
    assert outcome.error is None
    assert leaked_to_partner(origins) == []


def test_a_payment_frame_of_an_allowed_origin_takes_what_is_typed_into_it(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """The documented way: the payment provider's origin is named in allowed_origins."""
    code = step('page.goto("/checkout")\n' + INTO_THE_FRAME["plain text filled in"])
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
    assert outcome.error is None
    assert "/value?v=4242" in origins.hits


# -- 2: a wait in the page's own JavaScript, a download, a long typing: stopped on time ----------

IN_THE_PAGE = {
    "a backtracking pattern in expect": (
        'page.get_by_label("Query").fill("a" * 34 + "!")\n'
        'expect(page.get_by_label("Query")).to_have_value(re.compile("^(a+)+$"))'
    ),
    "a backtracking pattern in a count": (
        'page.goto("/aaa")\npage.get_by_text(re.compile("^(a+)+$")).count()'
    ),
    "a long typing": (
        f'page.get_by_label("Query").focus()\npage.keyboard.type("a" * {MAX_TYPED_KEYS - 100})'
    ),
    "a download that never finishes": (
        'page.goto("/slow")\nwith page.expect_download() as download_info:\n'
        '    page.get_by_role("link", name="Slow").click()\n'
        "name = download_info.value.suggested_filename"
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", list(IN_THE_PAGE))
def test_a_wait_inside_the_page_is_stopped_at_the_step_timeout_and_the_test_goes_on(
    how: str, mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    origins.pages["/slow"] = '<title>Slow</title><a href="/slow-download">Slow</a>'
    # the other attacks keep the page busy until their stop; a download only waits, and needs
    # the time to begin on a loaded machine before the stop may name it
    download = how == "a download that never finishes"
    timeout = STEP_TIMEOUT_MS if download else BUSY_TIMEOUT_MS
    outcome = attack(
        mode,
        step(IN_THE_PAGE[how]),
        origins,
        tmp_path,
        llm,
        monkeypatch,
        browser,
        report_dir=str(tmp_path / "report"),
        step_timeout_ms=timeout,
    )
    assert outcome.error is not None
    text = str(outcome.error)
    assert f"step_timeout_ms={timeout}" in text, text
    if download:
        assert "the download 'slow.bin' did not finish" in text, text
    else:
        assert "still waiting in the browser" in text, text
    assert outcome.seconds < timeout / 1000 + GRACE_S + MARGIN_S, outcome.seconds
    assert outcome.went_on


@pytest.mark.parametrize("mode", MODES)
def test_typing_past_the_key_cap_is_refused_before_a_key_is_sent(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    code = step('page.get_by_label("Query").focus()\npage.keyboard.type("a" * 20000)')
    outcome = attack(mode, code, origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    assert f"at most {MAX_TYPED_KEYS:,} keys (not 20,000)" in str(outcome.error)
    assert outcome.seconds < STEP_TIMEOUT_MS / 1000 + MARGIN_S
    assert outcome.went_on


# -- 3: a secret read back from the page reaches nothing in any spelling ------------------------

PASSWORD = "Pw@9&Zx4-Kq7"
LOGIN = """<title>Login</title><h1>Login</h1>
<form action="/welcome" method="get"><label>Password <input name="pw" type="text"></label>
<button>Log in</button></form>"""
FEATURE = """\
Feature: Login
  Scenario: A password read back
    Given I open the login page
    When I log in with ${PASSWORD}
    Then the page shows the password I typed
"""
READ_BACK = """\
value = page.get_by_label("Echo").input_value()
doubled = ""
for char in value:
    doubled += char + char
shown = page.get_by_role("status").inner_text()
assert False, str(list(value)) + " " + doubled + " " + " ".join(shown) + " " + page.url + " " + page.content()
"""  # noqa: E501
LOGIN_STEPS = {
    "I open the login page": ("step", 'page.goto("/login")'),
    "I log in with ${PASSWORD}": (
        "step",
        'page.get_by_label("Password").fill(secret("PASSWORD"))\n'
        'page.get_by_role("button", name="Log in").click()\npage.wait_for_url("**/welcome*")',
    ),
    "the page shows the password I typed": ("expect", READ_BACK),
}


def welcome(query: str) -> str:
    """The app's page after the GET form: the password in the URL, a field and the text."""
    typed = urllib.parse.parse_qs(urllib.parse.urlsplit(query).query).get("pw", [""])[0]
    return (
        f'<title>Welcome</title><label>Echo <input value="{escape(typed)}"></label>'
        f'<p role="status">{escape(typed)}</p>'
    )


def spellings(value: str) -> dict[str, str]:
    doubled = "".join(char * 2 for char in value)
    return {
        "as typed": value,
        "as a list": str(list(value)),
        "doubled": doubled,
        "separated": " ".join(value),
        "percent-encoded": urllib.parse.quote(value, safe=""),
        "form-encoded": urllib.parse.quote_plus(value),
        "html-escaped": escape(value),
        "reversed": value[::-1],
        "upper case": value.upper(),
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_secret_read_back_reaches_no_output_report_junit_allure_or_request(
    mode: str, origins: TwoOrigins, project, llm: ScriptedLLMServer
) -> None:
    """A later step reads a field, a text and the URL holding the password (which the app's own
    GET form put there percent-encoded) and fails with them in every spelling."""
    origins.pages["/login"] = LOGIN
    origins.dynamic["/welcome"] = welcome
    project.write("features/login.feature", FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    for sentence, (kind, body) in LOGIN_STEPS.items():
        if mode == "planted" or kind == "step":
            key = CacheKey("login.feature::A password read back", kind, sentence)
            store.write(CacheWrite(key, step(body), "generated"))
    if mode == "generated":
        llm.on("generate", code_answer(step(READ_BACK)))
        llm.on("gate", CLEAN_GATE, repeat=True)
    llm.on("classify", INCURABLE, repeat=True)
    strict = ["-D", "prettyplay.strict=true"] if mode == "planted" else []
    result = project.run(
        "-o",
        "-",
        "--no-logcapture",
        "--logging-level=DEBUG",
        "--junit",
        "--junit-directory=junit",
        "-f",
        "allure_behave.formatter:AllureFormatter",
        "-o",
        "allure",
        "-f",
        "json",
        "-o",
        "out.json",
        "-f",
        "plain",
        "-D",
        f"prettyplay.base_url={origins.app}",
        "-D",
        "prettyplay.report_dir=report",
        "-D",
        "prettyplay.generation_attempts=1",
        *strict,
        env={**llm.env, "PASSWORD": PASSWORD},
    )
    assert result.returncode == 1, result
    assert "['$', '{', 'P', 'A', 'S', 'S', 'W', 'O', 'R', 'D', '}']" in result.output, result
    classify = llm.requests_for("classify")[0].text
    assert "${PASSWORD}" in classify
    files = [p for p in project.root.rglob("*") if p.is_file() and ".prettyplay" not in p.parts]
    kinds = {p.suffix for p in files}
    assert {".xml", ".html", ".json"} <= kinds, kinds
    assert any(p.parent.name == "allure" for p in files), files
    for name, spelling in spellings(PASSWORD).items():
        for request in llm.requests:
            assert spelling not in json.dumps(request.body, ensure_ascii=False), name
        assert spelling not in result.output, name
        for path in files:
            assert spelling.encode() not in path.read_bytes(), (name, path)
    assert not re.search(re.escape(PASSWORD), result.output, re.IGNORECASE)
