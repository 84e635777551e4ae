"""Real pages: dialogs, frames, tabs, uploads, downloads and context settings, on a real
Chromium, with the scripted server answering the code a competent model writes."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from prettyplay_behave import (
    CodePolicyError,
    ConfigError,
    IncurableStepError,
    PrettyConfig,
    PrettyPlay,
)
from prettyplay_behave.safety.step_code import check_code
from tests.support.code import answering, step
from tests.support.llm_server import ScriptedLLMServer, json_answer
from tests.support.origins import FRAME_TEXT, TwoOrigins
from tests.support.settings import api_config

CONFIRM_PAGE = """<title>Unsubscribe</title><h1>Newsletter</h1>
<button onclick="document.getElementById('status').textContent =
  confirm('Unsubscribe from the newsletter?') ? 'You are unsubscribed.' : 'Nothing changed.'">
Unsubscribe</button>
<p role="status" id="status"></p>"""
FRAMES_PAGE = """<title>Help</title><h1>Help</h1>
<iframe title="questions" src="/questions"></iframe>
<iframe title="partner frame" src="{outside}/frame"></iframe>"""
QUESTIONS = """<title>Questions</title><p>Returns are free for 30 days.</p>
<iframe name="contact" src="/contact"></iframe>"""
CONTACT = "<title>Contact</title><p>Write to help@shop.test</p>"
OPENER = """<title>Deals</title><h1>Deals</h1>
<script>addEventListener("load", () => window.open("/deal", "_blank"));</script>"""
DEAL = "<title>Deal</title><h1>Deal of the day</h1><p>Half price on tea</p>"
LINKS = """<title>Shop</title><h1>Shop</h1>
<a href="/terms" target="_blank">Terms (new tab)</a>
<button onclick="window.open('{outside}/popup')">Partner offer</button>"""
TERMS = "<title>Terms</title><h1>Terms of sale</h1>"
UPLOAD = """<title>Returns</title><h1>Returns</h1>
<label>Receipt <input type="file" id="receipt" onchange="document.getElementById('chosen')
  .textContent = [...this.files].map((f) => f.name).join(', ')"></label>
<p role="status" id="chosen"></p>"""
DOWNLOAD = """<title>Invoices</title><h1>Invoices</h1>
<a href="/invoice.txt" download="invoice-1001.txt">Download invoice</a>"""


@pytest.fixture
def site() -> Iterator[TwoOrigins]:
    with TwoOrigins() as made:
        made.pages.update({
            "/unsubscribe": CONFIRM_PAGE, "/help": FRAMES_PAGE, "/questions": QUESTIONS,
            "/contact": CONTACT, "/deals": OPENER, "/deal": DEAL, "/shop": LINKS,
            "/terms": TERMS, "/returns": UPLOAD, "/invoices": DOWNLOAD,
            "/invoice.txt": "invoice 1001: 2 teas",
        })  # fmt: skip
        yield made


# every test acts within 3 s and generates each step once
config = functools.partial(api_config, action_timeout_ms=3_000, generation_attempts=1)


# -- dialogs ------------------------------------------------------------------------------------


def test_a_step_accepts_the_confirm_dialog_that_guards_a_form(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the newsletter page": 'page.goto("/unsubscribe")',
        "unsubscribe and confirm": (
            'page.once("dialog", lambda dialog: dialog.accept())\n'
            'page.get_by_role("button", name="Unsubscribe").click()'
        ),
        "the page says I am unsubscribed": (
            'expect(page.get_by_role("status")).to_have_text("You are unsubscribed.")'
        ),
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        t.step("open the newsletter page")
        t.step("unsubscribe and confirm")
        assert t.expect("the page says I am unsubscribed").outcome == "passed"


def test_a_dialog_nobody_handles_is_dismissed_and_named(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the newsletter page": 'page.goto("/unsubscribe")',
        "press unsubscribe": 'page.get_by_role("button", name="Unsubscribe").click()',
        "the page says nothing changed": (
            'expect(page.get_by_role("status")).to_have_text("Nothing changed.")'
        ),
    })  # fmt: skip
    reports = tmp_path / "reports"
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", report_dir=str(reports)), browser=browser
    ) as t:
        t.step("open the newsletter page")
        pressed = t.step("press unsubscribe")
        t.expect("the page says nothing changed")
    note = "a confirm dialog opened ('Unsubscribe from the newsletter?'); no handler took it"
    assert [n for n in pressed.notes if note in n]  # the step's outcome
    report = (reports / "report-t.html").read_text()
    shown = re.findall(r'<div class="muted note">(.*?)</div>', report)
    assert [n for n in map(html.unescape, shown) if note in n]  # and on its row of the report
    after = llm_env.requests_for("generate")[2].content("user")
    assert f"since the last step: {note}, so it was dismissed" in after  # the next request


# -- frames -------------------------------------------------------------------------------------


def test_text_inside_same_origin_nested_and_cross_origin_frames_is_read_and_shown(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the help page": 'page.goto("/help")',
        "the help frames answer my questions": (
            'questions = page.frame_locator("iframe[title=\'questions\']")\n'
            'expect(questions.get_by_text("Returns are free")).to_be_visible()\n'
            'contact = questions.frame_locator("iframe[name=\'contact\']")\n'
            'expect(contact.get_by_text("help@shop.test")).to_be_visible()\n'
            'partner = page.frame_locator("iframe[title=\'partner frame\']")\n'
            f'expect(partner.locator("#inside")).to_have_text("{FRAME_TEXT}")'
        ),
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        t.step("open the help page")
        assert t.expect("the help frames answer my questions").outcome == "passed"
    shown = llm_env.requests_for("generate")[1].content("user")
    for text in ('iframe "questions"', "Returns are free for 30 days.", 'iframe "contact"',
                 "help@shop.test", 'iframe "partner frame"', FRAME_TEXT):  # fmt: skip
        assert text in shown, text


# -- tabs ---------------------------------------------------------------------------------------


def test_a_popup_opened_on_load_is_the_page_of_the_next_step(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the deals": 'page.goto("/deals")',
        "the deal of the day is shown": (
            'expect(page.get_by_role("heading", level=1)).to_have_text("Deal of the day")'
        ),
        "go back to the first tab": "page.switch_to_tab(0)",
        "the deals page is shown": (
            'expect(page.get_by_role("heading", level=1)).to_have_text("Deals")'
        ),
    })  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        t.step("open the deals")
        t.expect("the deal of the day is shown")
        t.step("go back to the first tab")
        t.expect("the deals page is shown")
    request = llm_env.requests_for("generate")[1].content("user")
    assert f"URL: {site.app}/deal\n" in request and "Half price on tea" in request
    assert "tab 0: Deals" in request and "tab 1: Deal" in request


def test_a_new_tab_follows_a_link_and_a_popup_elsewhere_is_refused(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the shop page": 'page.goto("/shop")',
        "open the terms": 'page.get_by_role("link", name="Terms (new tab)").click()',
        "the terms are shown": (
            'expect(page.get_by_role("heading", level=1)).to_have_text("Terms of sale")'
        ),
        "read the terms in a popup": (
            "page.switch_to_tab(0)\n"
            "with page.expect_popup() as popup_info:\n"
            '    page.get_by_role("link", name="Terms (new tab)").click()\n'
            'expect(popup_info.value.get_by_role("heading", level=1)).to_have_text("Terms of sale")'
        ),
        "take the partner offer": (
            "page.switch_to_tab(0)\n"
            'page.get_by_role("button", name="Partner offer").click()'
        ),
    })  # fmt: skip
    llm_env.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                        "recommendation": "-"}))  # fmt: skip
    with PrettyPlay("t", config=config(site.app, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop page")
        t.step("open the terms")
        t.expect("the terms are shown")
        t.step("read the terms in a popup")
        with pytest.raises(Exception, match="was blocked: its origin is outside"):
            t.step("take the partner offer")
    assert site.hits == []


# -- files --------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "receipt.pdf").write_bytes(b"%PDF-1.4 a receipt")
    (folder / "escape.txt").symlink_to("/etc/passwd")
    return folder


def test_an_upload_comes_from_files_dir(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, files: Path, browser
) -> None:
    answering(llm_env, {
        "open the returns page": 'page.goto("/returns")',
        "attach the receipt": 'page.set_input_files("#receipt", "receipt.pdf")',
        "the receipt is attached": 'expect(page.get_by_role("status")).to_have_text("receipt.pdf")',
    })  # fmt: skip
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", files_dir=str(files)), browser=browser
    ) as t:
        t.step("open the returns page")
        t.step("attach the receipt")
        assert t.expect("the receipt is attached").outcome == "passed"


@pytest.mark.parametrize(
    ("name", "refusal", "seen_in_the_code"),
    [
        ("/etc/passwd", "is an absolute path", True),
        ("../x", "leaves files_dir", True),
        ("escape.txt", "leads outside files_dir", False),  # a link to /etc/passwd
    ],
)
def test_an_upload_from_outside_files_dir_is_refused(
    site: TwoOrigins, tmp_path: Path, files: Path, llm_env: ScriptedLLMServer,
    name: str, refusal: str, seen_in_the_code: bool, browser,
) -> None:  # fmt: skip
    literal = step(f'page.set_input_files("#receipt", "{name}")')
    if seen_in_the_code:
        with pytest.raises(CodePolicyError, match=refusal):
            check_code(literal)
    else:
        check_code(literal)  # a link cannot be seen in the code: it is refused when it runs
    # a name built at run time is refused when the step runs
    answering(llm_env, {
        "open the returns page": 'page.goto("/returns")',
        "attach the receipt": f'name = "{name}" + ""\npage.set_input_files("#receipt", name)',
    })  # fmt: skip
    llm_env.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                        "recommendation": "-"}))  # fmt: skip
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", files_dir=str(files)), browser=browser
    ) as t:
        t.step("open the returns page")
        with pytest.raises(IncurableStepError) as caught:
            t.step("attach the receipt")
        assert t.page.get_by_role("status").inner_text() == ""  # nothing was read or chosen
    assert f"CodePolicyError: set_input_files: {name!r} {refusal}" in caught.value.details


def test_an_upload_through_a_files_dir_that_is_a_link_is_refused(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    """A link planted for the files folder itself (a pull request adds one as easily as a file)
    would make every name inside it a file outside the project: nothing is uploaded through it,
    and the file it reaches is never read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "receipt.pdf").write_text("the user's own file\n")
    linked = tmp_path / "project" / "files"
    linked.parent.mkdir()
    linked.symlink_to(outside)
    answering(llm_env, {
        "open the returns page": 'page.goto("/returns")',
        "attach the receipt": 'page.set_input_files("#receipt", "receipt.pdf")',
    })  # fmt: skip
    llm_env.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                        "recommendation": "-"}))  # fmt: skip
    settings = config(site.app, tmp_path / "cache", files_dir=str(linked))
    with PrettyPlay("t", config=settings, browser=browser) as t:
        t.step("open the returns page")
        with pytest.raises(IncurableStepError) as caught:
            t.step("attach the receipt")
        assert t.page.get_by_role("status").inner_text() == ""  # nothing was chosen
    assert f"files_dir {linked} is a symbolic link (to {outside})" in caught.value.details


def test_a_download_is_checked_by_name_and_kept_in_report_dir(
    site: TwoOrigins, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    answering(llm_env, {
        "open the invoices": 'page.goto("/invoices")',
        "the invoice downloads as invoice-1001.txt": (
            "with page.expect_download() as download_info:\n"
            '    page.get_by_role("link", name="Download invoice").click()\n'
            'assert download_info.value.suggested_filename == "invoice-1001.txt"'
        ),
    })  # fmt: skip
    reports = tmp_path / "reports"
    with PrettyPlay(
        "t", config=config(site.app, tmp_path / "cache", report_dir=str(reports)), browser=browser
    ) as t:
        t.step("open the invoices")
        assert t.expect("the invoice downloads as invoice-1001.txt").outcome == "passed"
    saved = reports / "t" / "downloads" / "invoice-1001.txt"
    assert saved.read_text() == "invoice 1001: 2 teas"


# -- contexts -----------------------------------------------------------------------------------


def test_a_storage_state_starts_a_test_logged_in(shop, tmp_path: Path, browser) -> None:
    from prettyplay_behave.demo.server import PASSWORD

    state = tmp_path / "ann.json"
    with closing(browser.new_context(base_url=shop.url)) as context:  # a login, saved once
        page = context.new_page()
        page.goto("/login")
        page.get_by_label("Email").fill("ann@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("button", name="Log out").wait_for()
        context.storage_state(path=str(state))
    settings = {"base_url": shop.url, "cache_dir": str(tmp_path / "cache")}
    with PrettyPlay(
        "t", config=PrettyConfig(**settings, storage_state=str(state)), browser=browser
    ) as t:
        t.page.goto("/")
        assert t.page.get_by_role("button", name="Log out").is_visible()
    with PrettyPlay(
        "t", config=PrettyConfig(**settings), browser=browser
    ) as t:  # the same test, no state
        t.page.goto("/")
        assert not t.page.get_by_role("button", name="Log out").is_visible()


def test_a_device_gives_a_mobile_viewport_and_user_agent(shop, tmp_path: Path, playwright) -> None:
    phone = PrettyConfig(base_url=shop.url, cache_dir=str(tmp_path / "cache"), device="iPhone 13")
    with PrettyPlay("t", config=phone, playwright=playwright) as t:
        t.page.goto("/")
        assert t.page.viewport_size == {"width": 390, "height": 664}
        assert "iPhone" in t.page.evaluate("navigator.userAgent")
        assert t.page.evaluate("matchMedia('(pointer: coarse)').matches")


def test_a_bad_device_or_state_file_names_key_value_and_source(
    project, shop, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        PrettyConfig(storage_state=str(tmp_path / "missing.json"))
    assert (caught.value.key, caught.value.source) == ("storage_state", "PrettyConfig")
    assert "expected a readable Playwright storage-state file" in str(caught.value)
    project.write("features/shop.feature", "Feature: F\n  Scenario: S\n    Given I open the shop\n")
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.device=Nokia 3310"
    )
    assert result.returncode == 1, result
    assert (
        "ConfigError: setting 'device' = 'Nokia 3310' (from command line -D): Playwright knows no "
        "such device" in result.output
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = project.run("-D", f"prettyplay.storage_state={broken}")
    assert result.returncode == 1
    assert f"setting 'storage_state' = '{broken}' (from command line -D)" in result.output
