"""Steps that remember: a value one step's code keeps with ``remember`` and a later step's code
compares with ``recall``, generated and then replayed strictly with no request; an unknown
name, a secret, and a group's recovery that runs a remembering step again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import IncurableStepError, PrettyConfig, PrettyPlay
from tests.conftest import BehaveProject
from tests.support.caches import cache_text, plant, steps
from tests.support.code import step
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.pages import PageServer
from tests.support.scripted_provider import ScriptedProvider
from tests.support.todo_app import todo_page

OPEN = 'page.goto("/")'
ADD = (
    'page.get_by_placeholder("What needs to be done?").fill(item)\n'
    'page.get_by_placeholder("What needs to be done?").press("Enter")'
)
NOTE = (
    'left = page.get_by_test_id("count").inner_text()\n'
    'remember("items left", int(left.split(" ")[0]))'
)
GROWN = (
    'left = recall("items left")\n'
    'expect(page.get_by_test_id("count")).to_have_text(re.compile(f"^{left + 1} items? left"))'
)
# a red check waits 1 s for its count, not 5: the settle window is as long (its one try)
RED_MS = 1_000
FEATURE = """\
Feature: Todos
  Scenario: One more
    Given I open the todo app
    And I add a todo "feed the cat"
    And I note how many items are left
    When I add a todo "buy milk"
    Then the count has grown by one
"""
ANSWERS = {
    "I open the todo app": step(OPEN),
    "I add a todo": "def step(page, item) -> None:\n"
    + "".join(f"    {line}\n" for line in ADD.splitlines()),
    "I note how many items are left": step(NOTE),
    "the count has grown by one": step(GROWN),
}


@pytest.fixture
def app() -> Iterator[PageServer]:
    with PageServer({"/": todo_page()}) as server:
        yield server


def scripted(llm: ScriptedLLMServer | ScriptedProvider) -> None:
    for sentence, code in ANSWERS.items():
        llm.on("generate", code_answer(code), step=sentence)
    llm.on("gate", CLEAN_GATE, repeat=True)


@pytest.mark.slow
def test_a_remembered_count_is_generated_then_replayed_strictly_with_no_request(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    project.write("features/todos.feature", FEATURE)
    scripted(llm)
    cold = project.run("-D", f"prettyplay.base_url={app.url}", env=llm.env)
    assert cold.returncode == 0, cold
    # the check's request showed what the earlier step remembered, and by which step
    check = next(r for r in llm.requests_for("generate") if r.step == "the count has grown by one")
    assert '- "items left" = 1 (remembered by the step "I note how many items are left")' in (
        check.content("user")
    )
    assert 'remember("name", value)' in check.content("system")
    # the memory is never written to the cache: only the code that remembers
    assert "items left" in json.dumps(steps(project.cache_dir))
    assert '"1"' not in cache_text(project.cache_dir)
    llm.reset()
    warm = project.run("-D", f"prettyplay.base_url={app.url}", "-D", "prettyplay.strict=true")
    assert warm.returncode == 0, warm
    assert llm.requests == []
    assert "5 steps: 5 replayed" in warm.output


def test_a_check_against_a_remembered_value_fails_when_the_value_is_not_met(
    app: PageServer, tmp_path: Path, browser
) -> None:
    provider = ScriptedProvider()
    scripted(provider)
    provider.on("classify", json_answer({"label": "product_defect", "explanation": "no new item",
                                         "recommendation": "-"}))  # fmt: skip
    config = PrettyConfig(base_url=app.url, cache_dir=str(tmp_path / "cache"),
                          expect_timeout_ms=RED_MS, settle_ms=RED_MS)  # fmt: skip
    with PrettyPlay("t", config, browser=browser, provider=provider) as t:
        t.step("I open the todo app")
        t.step('I add a todo "feed the cat"')
        t.step("I note how many items are left")
        assert t.state.memory.items()[0].value == 1
        with pytest.raises(Exception, match="no new item"):  # nothing was added
            t.expect("the count has grown by one")


def test_a_recall_of_an_unknown_name_fails_naming_it_and_what_was_remembered(
    app: PageServer, tmp_path: Path, browser
) -> None:
    provider = ScriptedProvider()
    scripted(provider)
    provider.on("generate", code_answer(step('recall("item count")')), step="the count is kept")
    provider.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                         "recommendation": "-"}))  # fmt: skip
    config = PrettyConfig(base_url=app.url, cache_dir=str(tmp_path / "cache"),
                          generation_attempts=1)  # fmt: skip
    with PrettyPlay("t", config, browser=browser, provider=provider) as t:
        t.step("I open the todo app")
        t.step("I note how many items are left")
        with pytest.raises(IncurableStepError) as caught:
            t.expect("the count is kept")
    assert (
        "MemoryUseError: recall('item count'): nothing was remembered under 'item count'; "
        "remembered: 'items left' (by the step 'I note how many items are left')"
    ) in caught.value.render()


@pytest.mark.parametrize(
    "value",
    [
        'page.get_by_label("Code").input_value()',  # read back after a secret was typed
        'page.get_by_label("Code").input_value().upper()',
        '"-".join(["tea", "for", "two", "42"])',  # spelled out of pieces of its value
        # the placeholder the value read back became, spelled past its own shape
        'list(page.get_by_label("Code").input_value())',
        'page.get_by_label("Code").input_value()[::-1]',
    ],
    ids=["read back", "another spelling", "spelled in pieces", "letter by letter", "reversed"],
)
def test_a_secret_is_never_remembered(
    value: str, tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODE", "tea-for-two-42")
    page = '<title>Login</title><label>Code <input id="code"></label>'
    with PageServer({"/": page}) as login:
        provider = ScriptedProvider()
        provider.on("generate", code_answer(step(OPEN)), step="I open the login")
        typing = 'page.get_by_label("Code").fill(secret("CODE"))'
        provider.on("generate", code_answer(step(typing)), step="I type ${CODE}")
        provider.on("generate", code_answer(step(f'remember("code", {value})')), step="I note")
        provider.on("gate", CLEAN_GATE, repeat=True)
        provider.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                             "recommendation": "-"}))  # fmt: skip
        config = PrettyConfig(base_url=login.url, cache_dir=str(tmp_path / "cache"),
                              generation_attempts=1)  # fmt: skip
        with PrettyPlay("t", config, browser=browser, provider=provider) as t:
            t.step("I open the login")
            t.step("I type ${CODE} as the code")
            with pytest.raises(Exception) as caught:
                t.step("I note the code")
            assert t.state.memory.items() == []
    assert "a secret is never remembered" in str(caught.value)
    assert "tea-for-two-42" not in json.dumps([r.body for r in provider.requests])


def test_a_group_recovery_runs_the_remembering_step_again(
    app: PageServer, tmp_path: Path, browser
) -> None:
    """The group's root step is the one that remembers: the recovery runs it again, so the
    check after it compares with what the new code remembered."""
    provider = ScriptedProvider()
    root = {"label": "recoverable", "root_step": "I note how many items are left",
            "explanation": "the note remembered a wrong count", "recommendation": "-"}  # fmt: skip
    provider.on("gate", CLEAN_GATE, repeat=True)
    provider.on("diagnose", json_answer(root))
    # the first note remembers a count that is off by ten: the check after it goes red
    wrong = NOTE.replace('int(left.split(" ")[0])', 'int(left.split(" ")[0]) + 10')
    provider.on("generate", code_answer(step(wrong)), step="I note how many items are left")
    for sentence, code in ANSWERS.items():  # then every request (the recovery's too) is right
        provider.on(None, code_answer(code), step=sentence, repeat=True)
    config = PrettyConfig(base_url=app.url, cache_dir=str(tmp_path / "cache"),
                          expect_timeout_ms=RED_MS, settle_ms=RED_MS)  # fmt: skip
    with PrettyPlay("t", config, browser=browser, provider=provider) as t:
        t.step("I open the todo app")
        t.step('I add a todo "feed the cat"')
        with t.group("count what is added") as g:
            g.step("I note how many items are left")
            g.step('I add a todo "buy milk"')
            checked = g.expect("the count has grown by one")
        assert checked.outcome == "passed after recovery"
        # the note ran again: what it remembers now is one less than the count after the add,
        # no longer the count off by ten the first code remembered
        count = int(t.page.get_by_test_id("count").inner_text().split(" ")[0])
        assert [(r.name, r.value) for r in t.state.memory.items()] == [("items left", count - 1)]
    assert [r.purpose for r in provider.requests].count("diagnose") == 1


class CompareWithTheNote:
    """A steering part that runs the check against what the note remembered."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []

    def steer(self, stuck) -> bool:
        attempt = stuck.gate(stuck.execute(step(GROWN)), "compare with the note")
        self.outcomes.append(str(attempt.outcome))
        if attempt.outcome != "green":
            return False
        stuck.keep(step(GROWN), "compare with the note")
        return True


def test_a_steered_turn_recalls_what_an_earlier_step_remembered(
    app: PageServer, tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)  # steering never opens in CI; this run stands outside
    provider = ScriptedProvider()
    provider.on("generate", code_answer(step("assert False, 'no idea'")), step="the count has")
    scripted(provider)
    provider.on("classify", json_answer({"label": "incurable", "explanation": "-",
                                         "recommendation": "-"}))  # fmt: skip
    part = CompareWithTheNote()
    config = PrettyConfig(base_url=app.url, cache_dir=str(tmp_path / "cache"), interactive=True,
                          generation_attempts=1)  # fmt: skip
    with PrettyPlay("t", config, browser=browser, provider=provider, steering=part) as t:
        t.step("I open the todo app")
        t.step("I note how many items are left")
        t.step('I add a todo "buy milk"')
        checked = t.expect("the count has grown by one")
    assert part.outcomes == ["green"] and checked.origin == "steered"


BEHAVE_FEATURE = """\
Feature: Todos remembered
  Scenario: A name nobody remembered
    Given I open the todo app
    And I note how many items are left
    Then the total is what was noted

  Scenario: A secret
    Given I open the login
    When I type ${CODE} as the code
    Then I note the code

  @group
  Scenario: A group that counts again
    Given I open the todo app
    And I add a todo "feed the cat"
    And I count the items
    When I add a todo "buy milk"
    Then the count has grown by one
"""
LOGIN = '<title>Login</title><label>Code <input id="code"></label>'


@pytest.mark.slow
def test_a_behave_run_names_an_unknown_name_refuses_a_secret_and_recovers_a_group(
    project: BehaveProject, llm: ScriptedLLMServer
) -> None:
    with PageServer({"/": todo_page(), "/login": LOGIN}) as app:
        project.write("features/todos.feature", BEHAVE_FEATURE)
        llm.on("gate", CLEAN_GATE, repeat=True)
        incurable = {"label": "incurable", "explanation": "-", "recommendation": "-"}
        llm.on("classify", json_answer(incurable), repeat=True)
        root = {"label": "recoverable", "root_step": "I count the items",
                "explanation": "the count is off", "recommendation": "-"}  # fmt: skip
        llm.on("diagnose", json_answer(root))
        llm.on("generate", code_answer(step('recall("total")')), step="the total is")
        llm.on("generate", code_answer(step('page.goto("/login")')), step="I open the login")
        typing = 'page.get_by_label("Code").fill(secret("CODE"))'
        llm.on("generate", code_answer(step(typing)), step="I type ${CODE}")
        noted = 'remember("code", page.get_by_label("Code").input_value())'
        llm.on("generate", code_answer(step(noted)), step="I note the code", repeat=True)
        # the group's first count is off by ten; its recovery writes the right one
        wrong = NOTE.replace('int(left.split(" ")[0])', 'int(left.split(" ")[0]) + 10')
        llm.on("generate", code_answer(step(wrong)), step="I count the items")
        llm.on(None, code_answer(step(NOTE)), step="I count the items", repeat=True)
        for sentence, code in ANSWERS.items():
            llm.on(None, code_answer(code), step=sentence, repeat=True)
        result = project.run(
            "-D", f"prettyplay.base_url={app.url}", "-D", "prettyplay.generation_attempts=1",
            "-D", f"prettyplay.expect_timeout_ms={RED_MS}", "-D", f"prettyplay.settle_ms={RED_MS}",
            env={**llm.env, "CODE": "tea-for-two-42"},
        )  # fmt: skip
    assert result.returncode == 1, result
    assert (
        "recall('total'): nothing was remembered under 'total'; remembered: 'items left' (by "
        "the step 'I note how many items are left')"
    ) in result.output
    assert "remember('code', ...): the value holds a secret" in result.output
    assert "tea-for-two-42" not in result.output
    assert "1 scenario passed, 0 failed, 2 error" in result.output, result
    assert 'File "<step code ' in result.output  # the step code's own line, where it raised
    assert len(llm.requests_for("diagnose")) == 1


# a page that keeps changing (so it settles only once it is done) and then shows "ready"
LATE = """<title>Late</title><p id="progress">0</p>
<script>let n = 0; const tick = setInterval(() => {
  document.getElementById("progress").textContent = String(++n);
  if (n < 40) return;
  clearInterval(tick);
  const ready = document.createElement("p"); ready.dataset.testid = "ready";
  ready.textContent = "ready"; document.body.append(ready);
}, 10)</script>"""
# remembers, then goes red, while the page is not ready; remembers nothing once it is
EARLY_OR_NOTHING = step(
    """
    if page.get_by_test_id("ready").count() == 0:
        remember("early", 1)
        assert False, "not ready yet"
    """
)


def test_what_a_red_try_remembered_is_gone_with_it(tmp_path: Path, browser) -> None:
    with PageServer({"/": LATE}) as late:
        cache = tmp_path / "cache"
        plant(cache, "t", ("step", "I open the page", step(OPEN)))
        plant(cache, "t", ("step", "I wait until it is ready", EARLY_OR_NOTHING))
        config = PrettyConfig(base_url=late.url, cache_dir=str(cache), strict=True)
        with PrettyPlay("t", config, browser=browser) as t:
            t.step("I open the page")
            waited = t.step("I wait until it is ready", tries=2)  # red at once, green settled
            assert waited.outcome == "passed"
            assert t.state.memory.items() == []
