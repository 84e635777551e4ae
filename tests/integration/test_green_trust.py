"""A verdict stays with the step it judged, a heal keeps what its entry served and names what it
stopped checking (in process, on a real page, with a scripted provider): a red pin serves the
values it failed with; the same entry failing the same way under another wording takes the
verdict with no request, saying whose it was; a heal keeps the entry's wordings; a heal's gate
sees the assertions it drops, and ``cache diff`` and the report name them."""

from __future__ import annotations

import dataclasses
import io
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay, ProductDefectError, RedStepError
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from prettyplay_behave.cache_diff import diff
from prettyplay_behave.runtime import Runtime
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import BehaveProject
from tests.support.caches import cache_text
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)
from tests.support.pages import PageServer
from tests.support.scripted_provider import ScriptedProvider

FORM = """<!doctype html><title>Grade book</title>
<label>Name <input name="name" value="John Doe"></label>
<label>Grade <input name="grade" value=""></label>
<button>New game</button>
"""
FIELD_EMPTY = (
    "def step(page, field) -> None:\n"
    "    page.goto('/')\n"
    "    expect(page.get_by_label(field)).to_have_value('', timeout=500)\n"
)
RESET_TEXT = (
    "def step(page) -> None:\n"
    "    page.goto('/')\n"
    '    expect(page.get_by_role("button", name="Reset")).to_have_text('
    're.compile("reset", re.I), timeout=500)\n'
)
ENABLED_ONLY = (
    "def step(page) -> None:\n"
    "    page.goto('/')\n"
    '    expect(page.get_by_role("button", name="New game")).to_be_enabled()\n'
)
NEW_TEXT = (
    "def step(page) -> None:\n"
    "    page.goto('/')\n"
    '    expect(page.get_by_role("button", name="New game")).to_have_text('
    're.compile("new game", re.I))\n'
)


def verdict(label: str, explanation: str) -> str:
    return json_answer({"label": label, "explanation": explanation, "recommendation": "-"})


@pytest.fixture
def form() -> Iterator[PageServer]:
    with PageServer({"/": FORM}) as server:
        yield server


def config(form: PageServer, tmp_path: Path) -> PrettyConfig:
    return PrettyConfig(
        base_url=form.url, cache_dir=str(tmp_path / "cache"), action_timeout_ms=2_000,
        expect_timeout_ms=500,
    )  # fmt: skip


def plant(tmp_path: Path, kind: str, sentence: str, code: str, *wordings: str) -> CacheStore:
    """A shared entry of the library (as a behave run writes), with ``wordings``."""
    store = CacheStore(tmp_path / "cache", validate=check_code)
    store.write(CacheWrite(CacheKey("form.feature::A student", kind, sentence), code, "generated"))
    entry = store.library().entries[-1]
    if wordings:
        from dataclasses import replace

        store.keep([replace(entry, wordings=wordings)])
    return store


def test_a_red_pin_serves_the_values_it_failed_with_and_claims_no_other_value(
    form: PageServer, tmp_path: Path, browser
) -> None:
    plant(tmp_path, "check", 'the "{}" field should be empty', FIELD_EMPTY)
    provider = ScriptedProvider()
    provider.on("classify", verdict("product_defect", "the form keeps the name after an add"))
    for run in ("judged", "replayed"):
        with PrettyPlay("t", config(form, tmp_path), browser=browser, provider=provider) as t:
            with pytest.raises(ProductDefectError, match="keeps the name"):
                t.expect('the "Name" field should be empty')
            grade = t.expect('the "Grade" field should be empty')
        assert grade.outcome == "passed" and not grade.turned_green, run
        assert grade.cached is not None and grade.cached.verdict is None, run
    assert [r.purpose for r in provider.requests] == ["classify"]  # the replay asked nothing
    library = cache_text(tmp_path / "cache")
    assert "values=('Name',)" in library or 'values=("Name",)' in library
    assert library.count('verdict="product_defect"') == 1


def test_the_same_entry_failing_the_same_way_under_another_wording_takes_the_verdict(
    form: PageServer, tmp_path: Path, browser
) -> None:
    plant(tmp_path, "check", "the reset button is shown", RESET_TEXT, "I see the reset button")
    provider = ScriptedProvider()
    provider.on("classify", verdict("product_defect", "the Reset button is gone"))
    runtime = Runtime(config(form, tmp_path), browser=browser, provider=provider)
    errors = []
    try:
        for test, sentence in (("a", "the reset button is shown"), ("b", "I see the reset button")):
            with PrettyPlay(test, runtime=runtime) as t:
                with pytest.raises(ProductDefectError) as raised:
                    t.expect(sentence)
                errors.append(str(raised.value))
    finally:
        runtime.close()
    assert [r.purpose for r in provider.requests] == ["classify"]
    assert "the verdict given to 'the reset button is shown' in 'a'" in errors[1]
    assert "the verdict given to" not in errors[0]
    # both red pins are kept in the file of the entry they failed: the wording's too
    library = CacheStore(tmp_path / "cache", validate=check_code)
    assert len(list(library.library_dir.glob("*.py"))) == 1
    assert sum(e.red for e in library.library().entries) == 2


def test_a_heal_keeps_the_entry_s_wordings_and_every_wording_replays_the_healed_code(
    form: PageServer, tmp_path: Path, browser
) -> None:
    plant(tmp_path, "check", "the reset button is shown", RESET_TEXT, "I see reset")
    provider = ScriptedProvider()
    provider.on("classify", verdict("rot", "the button was renamed New game"))
    provider.on("heal", code_answer(NEW_TEXT))
    provider.on("gate", CLEAN_GATE)
    with PrettyPlay("t", config(form, tmp_path), browser=browser, provider=provider) as t:
        healed = t.expect("the reset button is shown")
        worded = t.expect("I see reset")
    assert (healed.origin, worded.origin) == ("healed", "replayed")
    assert worded.code == NEW_TEXT
    fresh = CacheStore(tmp_path / "cache", validate=check_code)
    [entry] = [e for e in fresh.library().entries if e.origin == "healed"]
    assert entry.wordings == ("I see reset",) and entry.code == NEW_TEXT


def dropped_section(request: RecordedRequest) -> str:
    user = request.content("user")
    return user.split("dropped (checked by the replaced code, not by the candidate):")[1]


def gate_on_dropped_assertions(request: RecordedRequest) -> str:
    """A gate that refuses a candidate dropping the text check the sentence names."""
    if "to_have_text(" not in request.content("user").split("candidate:")[1].split("dropped")[0]:
        finding = {"dimension": "adequacy", "severity": "high",
                   "message": "the text check of the button was dropped"}  # fmt: skip
        return json_answer({"findings": [finding]})
    return CLEAN_GATE


def test_a_heal_that_drops_an_assertion_is_shown_so_to_its_gate_and_named_by_cache_diff(
    form: PageServer, tmp_path: Path, browser
) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    plant(tmp_path, "check", "the page should display a reset button", RESET_TEXT)
    commit = ("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the library")
    for args in (("add", "-A"), commit):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True)
    provider = ScriptedProvider()
    provider.on("classify", verdict("rot", "the button was relabelled New game"))
    provider.on("heal", code_answer(ENABLED_ONLY), code_answer(NEW_TEXT))
    provider.on("gate", gate_on_dropped_assertions, repeat=True)
    with PrettyPlay("t", config(form, tmp_path), browser=browser, provider=provider) as t:
        healed = t.expect("the page should display a reset button")
    assert healed.origin == "healed" and healed.code == NEW_TEXT
    reset = "to_have_text(re.compile('reset', re.I), timeout=500)"
    heal = provider.requests_for("heal")[0].content("user")
    assert f"- {reset}" in heal.split("ASSERTIONS OF THE CODE BEING REPLACED")[1]
    refused, kept = provider.requests_for("gate")
    assert "- to_be_enabled()" in refused.content("user").split("candidate:")[1]
    assert reset in dropped_section(refused) and reset in dropped_section(kept)
    shown = io.StringIO()
    assert diff(tmp_path / "cache", "HEAD", shown) == 1
    assert f"assertions dropped: {reset}" in shown.getvalue()


def test_a_red_pin_that_turns_green_serves_the_step_with_every_value(
    form: PageServer, tmp_path: Path, browser
) -> None:
    """A step judged red before the library had code for it keeps that code red, pinned to its
    scenario and values; once the app is fixed and it goes green, its code is the step's entry
    for every value, so a new value needs no request."""
    provider = ScriptedProvider()
    provider.on("generate", code_answer(FIELD_EMPTY))
    provider.on("classify", verdict("product_defect", "the form keeps the name after an add"))
    settings = config(form, tmp_path)
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        with pytest.raises(ProductDefectError):
            t.expect('the "Name" field should be empty')
    form.pages["/"] = FORM.replace('value="John Doe"', 'value=""')  # the defect is fixed
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        assert t.expect('the "Name" field should be empty').turned_green
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        grade = t.expect('the "Grade" field should be empty')
    assert grade.origin == "replayed" and grade.code == FIELD_EMPTY
    assert [r.purpose for r in provider.requests] == ["generate", "classify"]
    [entry] = CacheStore(tmp_path / "cache", validate=check_code).library().entries
    assert (entry.scenario, entry.values, entry.verdict) == (None, None, None)


# -- no vacuous pass: a check green only where it sees what it saw -----------------------------

BOOK_BEFORE = """<!doctype html><title>Grade book</title><h1>Grade book</h1>
<ul aria-label="Students"><li>Ann Lee: 90</li><li>John Doe: 85</li></ul>
<ul aria-label="Errors"></ul>
"""
# the same release: the student list became a div of divs, and a grade of 105 is accepted
BOOK_AFTER = """<!doctype html><title>Grade book</title><h1>Grade book</h1>
<div class="students"><div class="student">Ann Lee: 90</div><div class="student">John Doe: 85</div>
<div class="student">Bob Brown: 105</div></div>
<ul aria-label="Errors"></ul>
"""
BOOK_FEATURE = """\
Feature: Grade book
  Scenario: No invalid grade is listed
    Given I open the grade book
    Then the error list is empty
    And the student list does not contain "Bob Brown: 105"
"""
NOT_LISTED = (
    "def step(page, text) -> None:\n"
    '    items = page.get_by_role("listitem")\n'
    "    expect(items.filter(has_text=text)).to_have_count(0)\n"
)
NONE_LISTED = (
    "def step(page) -> None:\n"
    '    errors = page.get_by_role("list", name="Errors").get_by_role("listitem")\n'
    "    expect(errors).to_have_count(0)\n"
)
HEALED = (
    "def step(page, text) -> None:\n"
    '    students = page.locator(".student")\n'
    "    expect(students.filter(has_text=text)).to_have_count(0, timeout=500)\n"
)


def book_generated(llm: ScriptedLLMServer) -> None:
    llm.on("generate", code_answer('def step(page) -> None:\n    page.goto("/")\n'), step="open")
    llm.on("generate", code_answer(NOT_LISTED), step="does not contain")
    llm.on("generate", code_answer(NONE_LISTED), step="error list")
    llm.on("gate", CLEAN_GATE, repeat=True)


@pytest.mark.slow
def test_a_check_of_a_list_that_is_gone_is_not_green_and_its_heal_catches_the_defect(
    project: BehaveProject, llm: ScriptedLLMServer
) -> None:
    """A UI change and a bug in one release: the check that the list has no "Bob Brown: 105"
    counted list items that no longer exist, so 0 equalled 0. Its record kept what the list it
    filters found when it went green; a replay that finds none of them is red, strict or not;
    healed, it looks at the new list and finds the defect. The check that the error list is
    empty found nothing then, so it sets no such expectation, and stays green."""
    project.write("features/book.feature", BOOK_FEATURE)
    book_generated(llm)
    with PageServer({"/": BOOK_BEFORE}) as app:
        base = ("-D", f"prettyplay.base_url={app.url}", "-D", "prettyplay.expect_timeout_ms=500")
        cold = project.run(*base, env=llm.env)
        assert cold.returncode == 0, cold
        library = cache_text(project.cache_dir)
        assert "must_find" in library and '"count": 2' in library, library
        app.pages["/"] = BOOK_AFTER
        strict = project.run(*base, "-D", "prettyplay.strict=true")  # no LLM at all
        llm.reset()
        llm.on("classify", verdict("rot", "the student list became a div of divs"))
        llm.on("heal", code_answer(HEALED))
        llm.on("classify", verdict("product_defect", "a grade of 105 is accepted"))
        healing = project.run(*base, env=llm.env)
    assert strict.returncode == 1, strict
    assert 'And the student list does not contain "Bob Brown: 105" ... failed' in strict.output
    assert (
        'passed without seeing what it saw when it last went green: get_by_role("listitem") '
        "found 2 elements on "
    ) in strict.output, strict
    assert "Then the error list is empty ... passed" in strict.output, strict
    assert healing.returncode == 1, healing
    assert "ProductDefectError" in healing.output and "a grade of 105 is accepted" in (
        healing.output
    ), healing
    assert "Then the error list is empty ... passed" in healing.output, healing
    assert [r.purpose for r in llm.requests] == ["classify", "heal", "classify"]
    first_classify = llm.requests_for("classify")[0].content("user")
    assert "passed without seeing what it saw" in first_classify
    assert 'get_by_role("listitem")' in llm.requests_for("heal")[0].content("user")


HIDDEN_BEFORE = """<!doctype html><title>Grades</title>
<h2 data-testid="error" hidden>Grade too high</h2>
<ul><li>Ann Lee: 90</li><li>John Doe: 85</li></ul>
"""
HIDDEN_AFTER = """<!doctype html><title>Grades</title>
<h2 data-testid="grade-error">Grade too high</h2>
<div><div>Ann Lee: 90</div><div>John Doe: no grade</div></div>
"""
NO_ERROR = 'def step(page) -> None:\n    expect(page.get_by_test_id("error")).to_be_hidden()\n'
EVERY_GRADE = (
    "def step(page) -> None:\n"
    '    for student in page.get_by_role("listitem").all():\n'
    '        expect(student).not_to_have_text("no grade")\n'
)


def test_a_hidden_check_whose_test_id_went_and_a_loop_over_a_list_that_went_are_not_green(
    pages: PageServer, tmp_path: Path, browser
) -> None:
    """``to_be_hidden`` of an element that was there (hidden) passes on nothing once its test id
    is renamed, and a loop over a list that is gone runs no check: each one's record keeps what
    it must find again, and a strict replay that finds none of it fails."""
    pages.pages["/"] = HIDDEN_BEFORE
    provider = ScriptedProvider()
    provider.on("generate", code_answer('def step(page) -> None:\n    page.goto("/")\n'))
    provider.on("generate", code_answer(NO_ERROR), code_answer(EVERY_GRADE))
    provider.on("gate", CLEAN_GATE, repeat=True)
    settings = config(pages, tmp_path)
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        t.step("I open the grades")
        t.expect("no error is shown")
        t.expect("every student has a grade")
    records = {
        e.sentence: e.green for e in CacheStore(tmp_path / "cache", check_code).library().entries
    }
    hidden, listed = records["no error is shown"], records["every student has a grade"]
    assert hidden is not None and [(f.locator, f.count, f.must_find) for f in hidden.found] == [
        ('get_by_test_id("error")', 1, True)
    ]
    assert listed is not None and [(f.locator, f.count, f.must_find) for f in listed.found] == [
        ('get_by_role("listitem")', 2, True)
    ]
    pages.pages["/"] = HIDDEN_AFTER
    strict = dataclasses.replace(settings, strict=True)
    for sentence in ("no error is shown", "every student has a grade"):
        with PrettyPlay("t", strict, browser=browser, provider=provider) as t:
            t.step("I open the grades")
            with pytest.raises(RedStepError, match="passed without seeing what it saw"):
                t.expect(sentence)


def test_a_link_followed_to_an_error_page_is_red_unless_the_sentence_expects_one(
    pages: PageServer, tmp_path: Path, browser
) -> None:
    """A document a link led to (not a goto, whose answer the engine sees) is asked of the
    page: a 404 ends the step red; a sentence that expects an error page keeps it green."""
    pages.pages["/"] = '<a href="/prices">Prices</a>'
    follow = 'def step(page) -> None:\n    page.get_by_role("link", name="Prices").click()\n'
    provider = ScriptedProvider()
    provider.on("generate", code_answer('def step(page) -> None:\n    page.goto("/")\n'))
    provider.on("generate", code_answer(follow), code_answer(follow), code_answer(follow))
    provider.on("classify", verdict("product_defect", "the price list is gone"))
    provider.on("gate", CLEAN_GATE, repeat=True)
    settings = dataclasses.replace(config(pages, tmp_path), generation_attempts=1)
    with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
        t.step("I open the shop")
        with pytest.raises(ProductDefectError) as red:
            t.step("I open the price list")
        t.step("I open the shop")
        assert t.step("I follow the prices link to the not found page").origin == "generated"
    assert f"the page's document was answered HTTP 404: {pages.url}/prices" in str(red.value)
