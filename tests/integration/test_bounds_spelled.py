"""Secrets spelled past the redactor, tried as an attacker would: the app's own cookies read and
printed one letter per item, a secret the app stored as JSON with ``&`` escaped as ``\\u0026``
read through ``get_json``, and the same JSON in the storage lines of a request. Each attack runs
once as the LLM's answer and once planted in the cache and replayed strictly, on a real Chromium;
what leaves (behave's output, behave.json, JUnit, report.html, the requests the scripted server
received) is searched for the value in every spelling, by a decoder of this file's own."""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import PrettyPlay
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, Found, GreenRecord
from prettyplay_behave.safety.step_code import check_code
from tests.support.attacks import APP_PAGE, INCURABLE, MODES, attack, step
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.origins import TwoOrigins

SESSION = "s3cr3t-Session-7Hq2Zx9w"  # the app's session cookie: no expiry
REMEMBER = "rm-Token-4Kq7-Pw9Zx2"  # a cookie the app keeps a day, readable by its scripts
CODE = "Pa@ss&w0rd-7Hq2"


def exposed(value: str, text: str) -> bool:
    """Whether ``text`` spells ``value``: its letters and digits in order, in any case, once the
    text's HTML, JSON, Python and URL escapes are decoded (twice, for an escape escaped again)
    and everything else between them is dropped."""
    for _ in range(2):
        text = html.unescape(urllib.parse.unquote(text))
        text = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        text = re.sub(r"\\+x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
    letters = "".join(char for char in text.lower() if char.isalnum())
    wanted = "".join(char for char in value.lower() if char.isalnum())
    return wanted in letters or wanted[::-1] in letters


def spelled(value: str) -> str:
    """``value`` as ``str(list(value))`` writes it: one letter per item."""
    return str(list(value))


def test_the_check_of_this_file_finds_every_spelling_it_means() -> None:
    """The positive control of ``exposed``: each spelling the attacks use is found."""
    for value, text in (
        (SESSION, spelled(SESSION)),
        (SESSION, "-".join(SESSION)),
        (SESSION, html.escape(spelled(SESSION))),
        (SESSION, json.dumps(spelled(SESSION))),
        (SESSION, urllib.parse.quote(SESSION[::-1])),
        (CODE, json.dumps({"p": CODE}).replace("&", "\\u0026")),
    ):
        assert exposed(value, text), text
    assert not exposed(SESSION, spelled("${cookie sid}"))


# -- 1: the app's cookies, one letter per item, into every output of a behave run ---------------

ACCOUNT_PAGE = f'<title>Account</title><p role="status">Signed in: session {SESSION}</p>'
COOKIE_PAGE = f"""<title>App</title><h1>App</h1>
<script>
document.cookie = "sid={SESSION}; path=/";
document.cookie = "remember={REMEMBER}; path=/; max-age=86400";
</script>"""
FEATURE = """\
Feature: Cookies
  Scenario: The cookies spelled
    Given I open the app
    Then the cookies are spelled
"""
# The account page shows the session before step code reads its cookie: that text reaches Python
# as it is, and once the cookie is read, only the redaction of every spelling keeps it from
# leaving. (A replay that went red runs again: the value is known by then, and read redacted.)
SPELL_COOKIES = """\
page.goto("/account")
shown = page.get_by_role("status").inner_text()
sid = page.cookies.get("sid")
kept = page.cookies.get("remember")
assert False, str(list(sid)) + " " + str(list(kept)) + " " + str(list(shown)) + " " + "-".join(shown) + " " + str(list(shown[::-1])) + " " + "\\n".join(shown.upper())
"""  # noqa: E501
COOKIE_STEPS = {
    "I open the app": ("step", 'page.goto("/")'),
    "the cookies are spelled": ("expect", SPELL_COOKIES),
}
RUN_MODES = ["generated", "planted", "planted, with a key"]


@pytest.fixture
def origins() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages["/"] = APP_PAGE
        yield made


@pytest.mark.slow
@pytest.mark.parametrize("mode", RUN_MODES)
def test_the_apps_cookies_spelled_letter_by_letter_reach_no_output_report_junit_or_request(
    mode: str, origins: TwoOrigins, project, llm: ScriptedLLMServer
) -> None:
    """The cookies read as their placeholders; the session's value that the page shows, read
    before the cookie, is redacted in every spelling: no value leaves in ``list(value)``,
    joined, reversed or upper case."""
    origins.pages["/"] = COOKIE_PAGE
    origins.pages["/account"] = ACCOUNT_PAGE
    project.write("features/cookies.feature", FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    for sentence, (kind, body) in COOKIE_STEPS.items():
        if mode != "generated" or kind == "step":
            key = CacheKey("cookies.feature::The cookies spelled", kind, sentence)
            store.write(CacheWrite(key, step(body), "generated"))
    if mode == "generated":
        llm.on("generate", code_answer(step(SPELL_COOKIES)))
        llm.on("gate", CLEAN_GATE, repeat=True)
    llm.on("classify", INCURABLE, repeat=True)
    keyed = mode != "planted"
    strict = ["-D", "prettyplay.strict=true"] if mode != "generated" else []
    result = project.run(
        "-o", "-", "--no-logcapture", "--logging-level=DEBUG",
        "--junit", "--junit-directory=junit", "-f", "json", "-o", "out.json",
        "-f", "plain",
        "-D", f"prettyplay.base_url={origins.app}",
        "-D", "prettyplay.report_dir=report",
        "-D", "prettyplay.generation_attempts=1",
        *strict,
        env=llm.env if keyed else {},
    )  # fmt: skip
    assert result.returncode == 1, result
    # the session cookie's placeholder, one letter per item; the other cookie redacted
    assert spelled("${cookie sid}") in result.output, result
    assert spelled("${cookie remember}") in result.output, result
    if mode == "generated":  # the request before the step hid the cookies: the page's own
        # text of the session came into step code as its placeholder
        assert str(list("session ${cookie sid}"))[1:-1] in result.output, result
    files = [p for p in project.root.rglob("*") if p.is_file() and ".prettyplay" not in p.parts]
    names = {p.name for p in files} | {p.suffix for p in files}
    assert {"out.json", "report.html", ".xml"} <= names, names
    texts = {"behave's output": result.output}
    texts |= {str(p): p.read_text(encoding="utf-8", errors="replace") for p in files}
    if keyed:
        classify = llm.requests_for("classify")
        assert classify and "${cookie sid}" in classify[0].text
        texts |= {f"request {i}": json.dumps(r.body) for i, r in enumerate(llm.requests)}
    else:
        assert llm.requests == []
    for where, text in texts.items():
        for value in (SESSION, REMEMBER):
            assert not exposed(value, text), (value, where)


# -- the rule for cookies: a long value never reaches step code ----------------------------------

READ_COOKIES = """\
values = []
for name in ("sid", "locked", "remember", "theme"):
    values.append(page.cookies.get(name))
assert False, values
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_cookie_of_8_characters_or_more_reads_as_its_placeholder_a_short_one_as_it_is(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """A session cookie, an HttpOnly one that lasts a day, a persistent one readable by the
    page's scripts, and a short one (a theme), which is no session."""
    origins.pages["/"] = APP_PAGE + (
        f'<script>document.cookie = "sid={SESSION}; path=/";'
        f'document.cookie = "remember={REMEMBER}; path=/; max-age=86400";'
        'document.cookie = "theme=dark; path=/; max-age=86400";</script>'
    )
    browser_context_cookie = {
        "name": "locked", "value": "httponly-Value-5Jw8", "url": origins.app,
        "httpOnly": True, "expires": 4_000_000_000,
    }  # fmt: skip
    monkeypatch.setattr(
        "tests.support.attacks.PrettyPlay", _with_cookie(browser_context_cookie), raising=True
    )
    outcome = attack(mode, step(READ_COOKIES), origins, tmp_path, llm, monkeypatch, browser)
    assert outcome.error is not None
    text = str(outcome.error)
    assert "['${cookie sid}', '${cookie locked}', '${cookie remember}', 'dark']" in text, text
    for value in (SESSION, REMEMBER, "httponly-Value-5Jw8"):
        assert not exposed(value, text)
        assert all(not exposed(value, json.dumps(r.body)) for r in llm.requests)
    assert outcome.went_on


def _with_cookie(cookie: dict[str, object]) -> type:
    """PrettyPlay whose test context holds ``cookie`` from the start (set by the app's server
    in real life: an HttpOnly cookie cannot come from the page's scripts)."""

    class WithCookie(PrettyPlay):
        def __enter__(self) -> PrettyPlay:
            entered = super().__enter__()
            entered.page.context.add_cookies([cookie])  # type: ignore[list-item]
            return entered

    return WithCookie


def test_two_values_of_one_session_cookie_read_as_two_placeholders(
    origins: TwoOrigins, tmp_path: Path, llm, monkeypatch, browser
) -> None:
    """A session that changes (at login) stays told apart from the one before."""
    origins.pages["/"] = APP_PAGE + f'<script>document.cookie = "sid={SESSION}";</script>'
    origins.pages["/login"] = '<script>document.cookie = "sid=other-Session-3Kd8";</script>'
    code = step(
        'page.goto("/")\nbefore = page.cookies.get("sid")\npage.goto("/login")\n'
        'after = page.cookies.get("sid")\nassert False, [before, after, before != after]'
    )
    outcome = attack("planted", code, origins, tmp_path, llm, monkeypatch, browser)
    text = str(outcome.error)
    assert "['${cookie sid}', '${cookie sid (2)}', True]" in text, text


# -- 2: a secret the app stored as escaped JSON, through get_json and the storage lines ---------

ESCAPED = json.dumps({"user": "ann", "p": CODE}, separators=(",", ":")).replace("&", "\\u0026")
STORED_PAGE = APP_PAGE + f"<script>localStorage.setItem('draft', {json.dumps(ESCAPED)});</script>"
READ_JSON = """\
value = page.local_storage.get_json("draft")["p"]
assert False, str(list(value)) + " " + value + " " + "-".join(value[::-1])
"""
NAMES_CODE = "I read the draft kept for ${CODE}"


@pytest.mark.parametrize("mode", MODES)
def test_a_secret_the_app_stored_as_escaped_json_reads_back_redacted_once_decoded(
    mode: str, origins: TwoOrigins, tmp_path: Path, llm: ScriptedLLMServer, monkeypatch, browser
) -> None:
    """``{"p":"Pa@ss\\u0026w0rd-7Hq2"}``, unpadded: get_json decodes it to the secret, which
    must reach step code as its placeholder; and the request's storage lines show the JSON."""
    assert "\\u0026" in ESCAPED and ": " not in ESCAPED
    origins.pages["/"] = STORED_PAGE
    monkeypatch.setenv("CODE", CODE)
    outcome = attack(
        mode, step(READ_JSON), origins, tmp_path, llm, monkeypatch, browser, sentence=NAMES_CODE
    )
    assert outcome.error is not None
    text = str(outcome.error)
    assert spelled("${CODE}") + " ${CODE} " in text, text
    assert not exposed(CODE, text), text
    if mode == "generated":
        generate = llm.requests_for("generate")[0].text
        storage = [line for line in generate.splitlines() if 'local "draft"' in line]
        assert storage and "${CODE}" in storage[0], storage
        assert llm.requests_for("classify")
    for request in llm.requests:
        assert not exposed(CODE, json.dumps(request.body)), request.text
    assert outcome.went_on


def test_a_secret_the_storage_line_would_cut_in_two_is_redacted_whole_before_the_cut(
    origins: TwoOrigins, tmp_path: Path, llm: ScriptedLLMServer, monkeypatch, browser
) -> None:
    """A request's storage line shows the start of each value (80 characters): a secret that
    starts before the cut and ends after it is redacted first, so no start of it is shown."""
    stored = json.dumps({"user": "ann-" + "x" * 56, "p": CODE}, separators=(",", ":"))
    assert stored.index(CODE) < 80 < stored.index(CODE) + len(CODE)
    origins.pages["/"] = APP_PAGE + (
        f"<script>localStorage.setItem('draft', {json.dumps(stored)});</script>"
    )
    monkeypatch.setenv("CODE", CODE)
    code = step('assert page.local_storage.get("draft") is None')
    outcome = attack(
        "generated", code, origins, tmp_path, llm, monkeypatch, browser, sentence=NAMES_CODE
    )
    assert outcome.error is not None
    generate = llm.requests_for("generate")[0].text
    storage = [line for line in generate.splitlines() if 'local "draft"' in line]
    assert storage and storage[0].endswith('${CODE}"'), storage
    for request in llm.requests:
        assert not exposed(CODE[:8], json.dumps(request.body)), request.text


SHOWS_ITS_SESSION = """<title>Account</title>
<script>document.cookie = "sid=s3ss-7Hq2Zx9w-4411; path=/";</script>
<h1>Account</h1><p id="sid"></p>
<script>document.getElementById("sid").textContent = "session " + "s3ss-7Hq2Zx9w-4411";</script>"""


def test_a_page_that_shows_its_own_session_id_shows_no_request_the_id(
    tmp_path: Path, browser
) -> None:
    """No step read the cookie: the page's text alone would carry the id to the model."""
    from prettyplay_behave import PrettyConfig, PrettyPlay
    from tests.support.llm_server import CLEAN_GATE, code_answer
    from tests.support.pages import PageServer
    from tests.support.scripted_provider import ScriptedProvider

    with PageServer({"/": SHOWS_ITS_SESSION}) as account:
        provider = ScriptedProvider()
        provider.on("generate", code_answer(step('page.goto("/")')), step="I open my account")
        heading = 'expect(page.get_by_role("heading")).to_have_text("Account")'
        provider.on("generate", code_answer(step(heading)), step="the account shows")
        provider.on("gate", CLEAN_GATE, repeat=True)
        config = PrettyConfig(base_url=account.url, cache_dir=str(tmp_path / "cache"))
        with PrettyPlay("t", config, browser=browser, provider=provider) as t:
            t.step("I open my account")
            t.expect("the account shows")
    shown = "\n".join(r.text for r in provider.requests)
    assert "session ${cookie sid}" in shown  # the page's text, with the id as its placeholder
    assert "7Hq2Zx9w" not in shown


# -- 3: a secret the page shows past a cut, into the library, healed code and requests ----------

TOKEN = "ppcanary7Hq2Zx9wKd"
# What each element shows before the token, once it is saved: the echoed text and the renamed
# button put it across the 80 characters a record keeps of a text (16 and 15 of its characters
# inside them); Playwright's call log cuts the note's text at 50 (11 inside); the other
# button's rename leaves it past the cut.
SHOWN_BEFORE = {
    "found": "Found: " + "x" * 56 + " ",
    "echo": "Saved: " + "x" * 57 + " ",
    "note": "Saved: " + "x" * 30 + " ",
    "kept": "Kept: " + "x" * 72,
}
ECHO_PAGE = """<title>Echo</title><h1>Echo</h1>
<label>Token <input id="token"></label>
<button id="save">Save</button>
<button data-testid="found">Found it</button>
<button data-testid="kept">Keep it</button>
<p data-testid="echo"></p>
<p id="note"></p>
<script>
const shown = SHOWN;
document.getElementById("save").onclick = () => {
  const token = document.getElementById("token").value;
  for (const [id, before] of Object.entries(shown)) {
    const el = document.querySelector(`[data-testid="${id}"]`) || document.getElementById(id);
    el.textContent = before + token;
  }
};
</script>""".replace("SHOWN", json.dumps(SHOWN_BEFORE))
ECHO_FEATURE = """\
Feature: Echo
  Scenario: The token echoed
    Given I open the app
    When I save the token ${TOKEN}
    Then the echo shows it
    When I press the found button
    And I press the kept button
    Then the note says done
"""
ECHO_TEST = "echo.feature::The token echoed"
SAVE_TOKEN = (
    'page.get_by_label("Token").fill(secret("TOKEN"))\n'
    'page.get_by_role("button", name="Save").click()'
)
ECHO_SHOWN = 'expect(page.get_by_test_id("echo")).to_contain_text("Saved")'
ROT = json_answer(
    {"label": "rot", "explanation": "the button was renamed", "recommendation": "its test id"}
)


def planted_button(test_id: str, name: str) -> tuple[str, GreenRecord]:
    """The code of a step that presses a button by its name, and the record of its green run
    before the app renamed the button (its test id stays)."""
    locator = f'get_by_role("button", name="{name}")'
    found = Found(locator, "button", name, test_id, name, "button")
    return step(f"page.{locator}.click()"), GreenRecord("2026-12-01", "/", (found,))


def runs_of(value: str, length: int = 8) -> set[str]:
    """Every run of ``length`` characters of ``value`` and of it reversed, in lower case."""
    value = value.lower()
    return {
        text[i : i + length] for text in (value, value[::-1]) for i in range(len(text) - length + 1)
    }


@pytest.mark.slow
def test_a_secret_shown_past_a_cut_is_redacted_before_it_in_the_library_healed_code_and_requests(
    origins: TwoOrigins, project, llm: ScriptedLLMServer
) -> None:
    """The app echoes a typed token after some 70 characters, where the page's texts are cut
    (the record's 80, Playwright's call log's 50): a generated check keeps a record of the
    echo, a renamed button is healed (its name now holds the token, so no repair may spell
    it), another is repaired without the model, and a check fails on the note. The library,
    the healed code, every request, the log and the report hold no run of 8 of its characters
    in any case, forwards or backwards."""
    origins.pages["/"] = ECHO_PAGE
    project.write("features/echo.feature", ECHO_FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    for kind, sentence, code, green in (
        ("step", "I open the app", step('page.goto("/")'), None),
        ("step", "I save the token ${TOKEN}", step(SAVE_TOKEN), None),
        ("step", "I press the found button", *planted_button("found", "Found it")),
        ("step", "I press the kept button", *planted_button("kept", "Keep it")),
        ("expect", "the note says done",
         step('expect(page.locator("#note")).to_have_text("done")'), None),
    ):  # fmt: skip
        store.write(CacheWrite(CacheKey(ECHO_TEST, kind, sentence), code, "generated", green=green))
    llm.on("generate", code_answer(step(ECHO_SHOWN)))
    llm.on("gate", CLEAN_GATE, repeat=True)
    llm.on("classify", ROT, step="found button")
    llm.on("heal", code_answer(step('page.get_by_test_id("found").click()')))
    llm.on("classify", INCURABLE, step="the note")
    result = project.run(
        "-o", "-", "--no-logcapture", "--logging-level=DEBUG",
        "--junit", "--junit-directory=junit", "-f", "json", "-o", "out.json",
        "-D", f"prettyplay.base_url={origins.app}", "-D", "prettyplay.report_dir=report",
        "-D", "prettyplay.action_timeout_ms=2000", "-D", "prettyplay.expect_timeout_ms=1000",
        env={**llm.env, "TOKEN": TOKEN}, timeout=150,
    )  # fmt: skip
    assert result.returncode == 1, result
    purposes = [r.purpose for r in llm.requests]
    assert purposes == ["generate", "gate", "classify", "heal", "gate", "gate", "classify"], (
        purposes
    )
    # the paths it took: a record of the echo, the found button healed, the kept one repaired
    written = CacheStore(project.cache_dir, validate=check_code).library()
    entries = {e.sentence: e for e in written.entries}
    echo = entries["the echo shows it"]
    assert echo.origin == "generated" and echo.green is not None
    assert echo.green.found[0].text == SHOWN_BEFORE["echo"] + "${TOKEN}"
    found = entries["I press the found button"]
    assert found.origin == "healed" and 'get_by_test_id("found")' in found.code
    classify = llm.requests_for("classify")[0].text
    assert f'button "{SHOWN_BEFORE["found"]}${{TOKEN}}" [test id found]' in classify, classify
    kept = entries["I press the kept button"]
    assert kept.origin == "healed"
    assert f'get_by_role("button", name="{SHOWN_BEFORE["kept"]}").click()' in kept.code
    assert "judged without the model" in llm.requests_for("gate")[2].text
    assert "${TOKEN}…</p>" in result.output, result  # the note's text in the call log
    # nothing holds a run of the token's characters
    files = [path for path in project.root.rglob("*") if path.is_file()]
    assert {"out.json", "report.html"} <= {path.name for path in files}
    assert any(path.suffix == ".xml" for path in files)
    texts = {"behave's output": result.output}
    texts |= {str(path): path.read_text(encoding="utf-8", errors="replace") for path in files}
    texts |= {f"request {i}": json.dumps(r.body) for i, r in enumerate(llm.requests)}
    assert any("library" in name or ".prettyplay" in name for name in texts)
    for where, text in texts.items():
        leaked = [run for run in runs_of(TOKEN) if run in text.lower()]
        assert not leaked, (where, leaked)
