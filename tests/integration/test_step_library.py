"""The cache learns steps, not rows: the project's step library, as a real suite changes.

Real behave runs against a small to-do app, the real openai client against the scripted server:
rows swapped and added, scenarios renamed, one tag or one scenario run alone, all replay with
zero requests under strict; sentences that differ only in their values cost one generation; two
features that share steps keep each step once, and a heal of a shared step rewrites one file; a
step judged a product defect is kept red until the app is fixed; a rename that breaks
several sentences is healed once; prune and drop take their liveness from the feature files;
the per-feature files of formats 1 and 2 migrate to the library the examples replay; two git
branches that add different steps merge without a conflict."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, file_name
from prettyplay_behave.parameters import parameterize
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import ROOT, BehaveProject, copy_examples, new_project
from tests.support.behave_runs import run_prettyplay
from tests.support.caches import plant, steps
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)
from tests.support.pages import PageServer
from tests.support.todo_app import CODE, FIELD, TYPING, step_code, todo_page
from tests.support.todo_app import RENAMED_FIELD as RENAMED

pytestmark = pytest.mark.slow

FEATURE = """\
Feature: Todos
  Background:
    Given I open the todo app

  Scenario Outline: Add a todo
    When I add a todo "<item>"
    Then the list shows "<item>"
    And the counter shows "1 item left"

    Examples:
      | item         |
      | buy milk     |
      | feed the cat |

  @smoke
  Scenario: Complete a todo
    When I add a todo "water the plants"
    And I complete the todo "water the plants"
    Then the todo "water the plants" is completed
    And the counter shows "0 items left"

  Scenario: Delete a todo
    When I add a todo "call Ann"
    And I add a todo "pay the rent"
    And I delete the todo "call Ann"
    Then the list shows "pay the rent"
    And the counter shows "1 item left"
"""
# seven sentence templates: the Background's and six that differ only in their values
TEMPLATES = 7


@pytest.fixture
def app() -> Iterator[PageServer]:
    with PageServer({"/": todo_page()}) as server:
        yield server


def generated(request: RecordedRequest) -> str:
    return code_answer(step_code(parameterize(str(request.step)).template))


def todo_project(project: BehaveProject, llm: ScriptedLLMServer, feature: str = FEATURE) -> Path:
    """The project with the to-do feature; its cache folder."""
    project.write("features/todos.feature", feature)
    llm.on("generate", generated, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    return project.cache_dir


# the feature's seven templates, each as its kind and a sentence of it
FEATURE_STEPS = (
    ("action", "I open the todo app"), ("action", 'I add a todo "x"'),
    ("check", 'the list shows "x"'), ("check", 'the counter shows "x"'),
    ("action", 'I complete the todo "x"'), ("action", 'I delete the todo "x"'),
    ("check", 'the todo "x" is completed'),
)  # fmt: skip


def plant_library(project: BehaveProject, llm: ScriptedLLMServer) -> Path:
    """The project with the to-do feature and the library its cold run writes (the first test
    below shows that run writing these entries), planted without the run; its cache folder."""
    cache = todo_project(project, llm)
    planted = [(kind, s, step_code(parameterize(s).template)) for kind, s in FEATURE_STEPS]
    plant(cache, "todos.feature::Add a todo", *planted)
    return cache


def step_codes(cache: Path) -> set[tuple[str, str, str, str]]:
    """Each entry of the library as its kind, sentence template, code and feature (none for a
    shared entry)."""
    return {
        (e["kind"], e["sentence"], "\n".join(e["code"]), e.get("feature", "")) for e in steps(cache)
    }


def library_bytes(cache_dir: Path) -> dict[str, bytes]:
    """Each library file's bytes, by its name."""
    return {path.name: path.read_bytes() for path in (cache_dir / "steps").glob("*.py")}


def run(project: BehaveProject, app: PageServer, *args: str, llm: ScriptedLLMServer | None = None):
    env = llm.env if llm is not None else {}
    return project.run("-D", f"prettyplay.base_url={app.url}", *args, env=env)


def strict(project: BehaveProject, app: PageServer, *args: str):
    """A strict run with no LLM configured at all: zero requests, whatever happens."""
    return run(project, app, "-D", "prettyplay.strict=true", *args)


def test_values_are_parameters_so_each_sentence_template_costs_one_generation(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    cache = todo_project(project, llm)
    cold = run(project, app, llm=llm)
    assert cold.returncode == 0, cold
    assert len(llm.requests_for("generate")) == TEMPLATES
    assert len(llm.requests_for("gate")) == TEMPLATES
    # the code takes the values: one entry per template, none specific to a value
    library = steps(cache)
    assert len(library) == TEMPLATES
    assert not any("values" in e or "scenario" in e for e in library)
    # the library the later tests plant in place of this run
    planted = new_project(project.root.parent / "planted")
    assert step_codes(cache) == step_codes(plant_library(planted, llm))
    adding = next(e for e in library if e["sentence"] == 'I add a todo "{}"')
    assert adding["parameters"] == ["value"] and adding["model"] == "gpt-4.1-mini"
    # the request named the parameters and the signature that takes them
    first = llm.requests_for("generate")[1]
    assert '  item = "buy milk"' in first.content("user")
    assert "def step(page, item) -> None:" in first.content("system")


def test_rows_swapped_and_added_a_scenario_renamed_one_tag_or_scenario_replay_with_no_request(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    plant_library(project, llm)
    edited = (
        FEATURE.replace("      | buy milk     |\n      | feed the cat |\n",
                        "      | feed the cat |\n      | walk the dog |\n      | buy milk     |\n")
        .replace("Scenario: Complete a todo", "Scenario: Finish a todo")
    )  # fmt: skip
    assert edited.count("walk the dog") == 1 and "Finish a todo" in edited
    project.write("features/todos.feature", edited)
    llm.reset()
    # the feature named as a path runs all of it, as a run of the whole folder does
    everything = strict(project, app, "features/todos.feature")
    assert everything.returncode == 0, everything
    assert "5 scenarios passed, 0 failed" in everything.output
    assert "0 requests" in everything.output and "0 generated" in everything.output
    for selection in (("--tags=@smoke",), ("-n", "Delete a todo")):
        alone = strict(project, app, *selection)
        assert alone.returncode == 0, (selection, alone)
        assert "0 failed" in alone.output, selection
    assert llm.requests == []


# a red check waits half a second for what it expects, not 5, and that is its one try: the
# settle window is as long (the app draws each change at once, so a green check needs no more)
RED_AT_ONCE = ("-D", "prettyplay.expect_timeout_ms=500", "-D", "prettyplay.settle_ms=500")


def test_a_step_judged_a_product_defect_is_remembered_red_until_the_app_is_fixed(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    cache = plant_library(project, llm)
    app.pages["/"] = todo_page("broken")
    defect = {"label": "product_defect", "explanation": "the counter counts one too many",
              "recommendation": "fix the counter"}  # fmt: skip
    llm.reset()
    llm.on("classify", json_answer(defect), repeat=True)
    judged = run(project, app, *RED_AT_ONCE, llm=llm)
    assert judged.returncode == 1, judged
    assert "ProductDefectError: the product does not do what the step says" in judged.output
    judgements = len(llm.requests_for("classify"))
    assert judgements >= 1 and {r.purpose for r in llm.requests} == {"classify"}
    red = [e for e in steps(cache) if "verdict" in e]
    assert red and {e["verdict"]["label"] for e in red} == {"product_defect"}
    assert {e["sentence"] for e in red} == {'the counter shows "{}"'}

    llm.reset()  # still broken: every red step fails with its stored verdict, and asks nothing
    for again in (
        run(project, app, *RED_AT_ONCE, llm=llm),
        strict(project, app, *RED_AT_ONCE),
    ):
        assert again.returncode == 1, again
        assert "the verdict of an earlier run: no request was made" in again.output
        assert "explanation: the counter counts one too many" in again.output
        assert "... failed" in again.output  # a behave failure, not an error
    assert llm.requests == []
    listed = run_prettyplay(project.root, ["cache", "list"])
    assert "RED: product_defect: the counter counts one too many" in listed.stdout
    assert listed.stdout.splitlines()[-1].endswith(f", {len(red)} red"), listed.stdout

    app.pages["/"] = todo_page("normal")  # fixed
    fixed = run(project, app, *RED_AT_ONCE, llm=llm)
    assert fixed.returncode == 0, fixed
    assert "turned green (kept red) todos.feature::" in fixed.output
    assert llm.requests == []
    assert not [e for e in steps(cache) if "verdict" in e or "scenario" in e]


RENAMED_FEATURE = """\
Feature: Typing
  Scenario: The new todo field
    Given I open the todo app
    When I type "milk" into the new todo field
    Then the new todo field says "milk"
    When I clear the new todo field
    Then the new todo field is empty
    When I add a todo "bread"
    Then the list shows "bread"
"""
# five sentences on the new-todo field: the typing steps and the add
ON_THE_FIELD = {**TYPING, 'I add a todo "{}"': CODE['I add a todo "{}"']}


def code_of(template: str, body: str) -> str:
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    return f"def step(page{', value' if '{}' in template else ''}) -> None:\n{lines}"


def test_a_rename_that_breaks_five_sentences_costs_at_most_four_requests(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    project.write("features/typing.feature", RENAMED_FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    test = "typing.feature::The new todo field"
    planted = {
        **ON_THE_FIELD,
        **{t: CODE[t] for t in ("I open the todo app", 'the list shows "{}"')},
    }
    for template, body in planted.items():
        kind = "check" if template.startswith("the ") else "action"
        sentence = template.replace("{}", "x")
        store.write(
            CacheWrite(CacheKey(test, kind, sentence), code_of(template, body), "generated")
        )
    app.pages["/"] = todo_page("renamed")
    rot = {"label": "rot", "explanation": "the field's placeholder is new", "recommendation": "-"}
    llm.on("classify", json_answer(rot))
    first = 'I type "{}" into the new todo field'
    llm.on("heal", code_answer(code_of(first, ON_THE_FIELD[first].replace(FIELD, RENAMED))))
    llm.on("gate", CLEAN_GATE, repeat=True)
    # the broken field's fill waits out this timeout before it is red
    result = run(project, app, "-D", "prettyplay.action_timeout_ms=3000", llm=llm)
    assert result.returncode == 0, result
    assert [r.purpose for r in llm.requests] == ["classify", "heal", "gate", "gate"]
    batch = llm.requests[3].content("user")
    assert "PROPOSED ENTRIES" in batch and batch.count("\nentry ") == len(ON_THE_FIELD) - 1
    heal = batch.split("THE HEAL'S CODE")[1].split("LOCATORS IT RENAMED")[0]
    assert RENAMED in heal and FIELD not in heal  # the code the heal wrote, not the one it replaced
    healed = {e["sentence"]: e for e in steps(project.cache_dir, "typing.feature")}
    for template in ON_THE_FIELD:
        assert healed[template]["origin"] == "healed", template
        assert RENAMED in "\n".join(healed[template]["code"]) and FIELD not in str(healed[template])
    assert "healed with the rename that healed 'I type \"milk\" into the new todo field'" in (
        result.output
    )
    llm.reset()
    assert strict(project, app).returncode == 0 and llm.requests == []


REWORDED = """\
Feature: Todos
  Background:
    Given I open the todo app

  Scenario: Shows
    When I add a todo "buy milk"
    Then the list should contain "buy milk"

  Scenario: In other words
    When I add a todo "feed the cat"
    Then the list should contain an item with text "feed the cat"

  Scenario: In other words again
    When I add a todo "walk the dog"
    Then the list should contain an item with text "walk the dog"
"""


def test_a_second_wording_answered_same_as_is_one_entry_that_later_steps_find_with_no_request(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    """One behave run: the generation request the server received lists the closest check with
    its code; the answer SAME AS keeps the new sentence as a wording of that entry, which the
    next scenario finds with no request, and which counts as live; cache drop forgets it."""
    project.write("features/todos.feature", REWORDED)
    store = CacheStore(project.cache_dir, validate=check_code)
    contains = 'the list should contain "{}"'
    planted = {
        "I open the todo app": CODE["I open the todo app"],
        'I add a todo "{}"': CODE['I add a todo "{}"'],
        contains: CODE['the list shows "{}"'],
    }
    for template, body in planted.items():
        kind = "check" if template.startswith("the ") else "action"
        key = CacheKey("todos.feature::Shows", kind, template.replace("{}", "x"))
        store.write(CacheWrite(key, code_of(template, body), "generated"))
    llm.on("generate", "The first listed step checks the same list.\n\nSAME AS 1")
    llm.on("gate", CLEAN_GATE)
    result = run(project, app, llm=llm)
    assert result.returncode == 0, result
    assert "3 scenarios passed, 0 failed" in result.output
    assert [r.purpose for r in llm.requests] == ["generate", "gate"]  # the third: no request
    request = llm.requests_for("generate")[0]
    assert request.step == 'the list should contain an item with text "feed the cat"'
    listing = request.content("user").split("THE LIBRARY'S CLOSEST STEPS")[1]
    assert listing.split("\n")[1] == f"1. {contains} (its code takes value)"
    assert code_of(contains, CODE['the list shows "{}"']).rstrip() in listing
    assert "SAME AS" in request.content("system")
    library = steps(project.cache_dir, "todos.feature")
    assert [e["sentence"] for e in library if e["kind"] == "check"] == [contains]
    check = next(e for e in library if e["kind"] == "check")
    assert check["wordings"] == ['the list should contain an item with text "{}"']
    assert check["origin"] == "generated" and len(library) == 3
    assert "1 reused" in result.output and "0 obsolete" in result.output
    # a wording dropped: the entry stays, serving its own sentence only
    worded = 'the list should contain an item with text "x"'
    dropped = run_prettyplay(project.root, ["cache", "drop", worded])
    assert dropped.returncode == 0, dropped
    assert f"1 wording of {worded!r} deleted" in dropped.stdout
    library = steps(project.cache_dir, "todos.feature")
    assert len(library) == 3 and not any("wordings" in e for e in library)


def test_prune_keeps_every_live_entry_whatever_a_run_left_and_drop_removes_one(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    cache = plant_library(project, llm)
    before = library_bytes(cache)
    feature = project.features / "todos.feature"
    # rename a scenario, run strict (it passes: its steps are the library's), revert, prune
    feature.write_text(FEATURE.replace("Scenario: Delete a todo", "Scenario: Remove a todo"))
    assert strict(project, app).returncode == 0
    feature.write_text(FEATURE)
    kept = run_prettyplay(project.root, ["cache", "prune"])
    assert kept.returncode == 0 and "0 obsolete entries deleted" in kept.stdout, kept
    assert library_bytes(cache) == before
    # a step taken out of the feature makes its entry obsolete, and prune deletes exactly it
    feature.write_text(
        FEATURE.replace(
            '    Then the todo "water the plants" is completed\n    And the counter',
            "    Then the counter",
        )
    )
    pruned = run_prettyplay(project.root, ["cache", "prune"])
    assert "1 obsolete entry deleted" in pruned.stdout, pruned
    # its file went, and no lock file is among the steps (the library has one, beside them)
    assert len(library_bytes(cache)) == len(before) - 1
    assert list((cache / "steps").glob("*.lock")) == []
    assert {e["sentence"] for e in steps(cache)} == {
        parameterize(s).template
        for s in ('I add a todo "x"', 'the list shows "x"', 'the counter shows "x"',
                  'I complete the todo "x"', 'I delete the todo "x"', "I open the todo app")
    }  # fmt: skip
    # drop one sentence: its next run writes it again, with one generation
    dropped = run_prettyplay(project.root, ["cache", "drop", 'I add a todo "x"'])
    assert dropped.returncode == 0 and "1 entry of 'I add a todo \"x\"' deleted" in dropped.stdout
    assert 'I add a todo "{}"' not in {e["sentence"] for e in steps(cache)}
    llm.reset()
    llm.on("generate", generated, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    again = run(project, app, llm=llm)
    assert again.returncode == 0, again
    assert [str(r.step) for r in llm.requests_for("generate")] == ['I add a todo "buy milk"']
    nothing = run_prettyplay(project.root, ["cache", "drop", "I never wrote this"])
    assert nothing.returncode == 1


@pytest.mark.parametrize("version", [1, 2])
def test_the_examples_old_caches_migrate_and_replay_with_no_request(
    tmp_path: Path, version: int
) -> None:
    root = copy_examples(tmp_path)
    cache_dir = root / "features" / ".prettyplay"
    shutil.rmtree(cache_dir)
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / f"format{version}"
    shutil.copytree(fixture, cache_dir)
    old = {p.relative_to(cache_dir): json.loads(p.read_text()) for p in cache_dir.rglob("*.json")}
    assert {document["format"] for document in old.values()} == {version}
    migrate = ["cache", "migrate"]
    # a file in a format it does not know stops the migration, named, and nothing is deleted
    unknown = cache_dir / "shop" / "later.feature.json"
    unknown.write_text('{"format": 9, "steps": []}')
    refused = run_prettyplay(root, migrate)
    assert refused.returncode == 1, refused
    assert f"{Path('features/.prettyplay/shop/later.feature.json')}: cache format 9 is newer" in (
        refused.stderr
    )
    assert len(list(cache_dir.rglob("*.json"))) == len(old) + 1
    assert not (cache_dir / "steps").exists()
    unknown.unlink()

    done = run_prettyplay(root, migrate)
    assert done.returncode == 0 and "4 files migrated" in done.stdout, done
    assert not list(cache_dir.rglob("*.json"))
    library = steps(cache_dir)
    codes = {tuple(e["code"]) for e in library}
    for relative, document in old.items():  # nothing lost: every code of every file is kept
        tests = document.get("tests", {}).values()
        entries = document["steps"] if version == 2 else [e for test in tests for e in test]
        assert all(tuple(e["code"]) in codes for e in entries), relative
    assert sorted(p.relative_to(cache_dir) for p in cache_dir.rglob("*") if p.is_dir()) == [
        Path("steps")
    ]  # the old files' folders went with them
    # the repository's own examples, migrated from format 2: their library is this one (byte
    # for byte from format 2; the same entries, field for field, from format 1), and it replays
    # strictly with no request (test_behave_replay runs it)
    committed = ROOT / "features" / ".prettyplay"
    if version == 2:
        assert library_bytes(cache_dir) == library_bytes(committed)
    else:
        assert steps(cache_dir) == steps(committed)
    again = run_prettyplay(root, migrate)
    assert "0 files migrated" in again.stdout


MORE = """\
Feature: More todos
  Scenario: Add one more
    Given I open the todo app
    When I add a todo "walk the dog"
    Then the list shows "walk the dog"
    And the counter shows "1 item left"
"""


def test_two_features_sharing_steps_keep_each_step_once_and_a_heal_rewrites_one_file(
    project: BehaveProject, app: PageServer, llm: ScriptedLLMServer
) -> None:
    cache = todo_project(project, llm)
    project.write("features/more.feature", MORE)
    cold = run(project, app, llm=llm)
    assert cold.returncode == 0, cold
    # each step once, whatever feature uses it: a file a step, an entry a file, no copies
    assert len(llm.requests_for("generate")) == TEMPLATES
    assert "0 reused" in cold.output
    before = library_bytes(cache)
    assert len(before) == TEMPLATES
    library = steps(cache)
    assert len(library) == TEMPLATES and not any("feature" in e for e in library)

    app.pages["/"] = todo_page("renamed")  # the new-todo field's placeholder changes
    llm.reset()
    rot = {"label": "rot", "explanation": "the field's placeholder is new", "recommendation": "-"}
    llm.on("classify", json_answer(rot))
    adding = 'I add a todo "{}"'
    llm.on("heal", code_answer(step_code(adding).replace(FIELD, RENAMED)))
    llm.on("gate", CLEAN_GATE, repeat=True)
    healed = run(project, app, "-D", "prettyplay.action_timeout_ms=3000", llm=llm)
    assert healed.returncode == 0, healed
    assert len(llm.requests_for("heal")) == 1
    after = library_bytes(cache)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert changed == [file_name(("action", adding, ""))] and set(after) == set(before)
    assert RENAMED in after[changed[0]].decode() and FIELD not in after[changed[0]].decode()
    llm.reset()
    assert strict(project, app).returncode == 0 and llm.requests == []


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=QA", "-c", "user.email=qa@example.com", *args],
        capture_output=True,
        text=True,
    )


def test_two_git_branches_adding_different_steps_merge_without_a_conflict(tmp_path: Path) -> None:
    cache_dir = tmp_path / "features" / ".prettyplay"

    def add(test: str, kind: str, template: str) -> None:
        """Keep the step's code as a run of ``test`` writes it."""
        store = CacheStore(cache_dir, validate=check_code)
        key = CacheKey(test, kind, template.replace("{}", "x"))
        store.write(CacheWrite(key, step_code(template), "generated"))

    def commit(message: str) -> None:
        assert git(tmp_path, "add", "-A").returncode == 0
        assert git(tmp_path, "commit", "-qm", message).returncode == 0

    assert git(tmp_path, "init", "-q", "-b", "main").returncode == 0
    add("todos.feature::Add", "action", "I open the todo app")
    commit("base")
    assert git(tmp_path, "checkout", "-qb", "complete").returncode == 0
    add("todos.feature::Complete", "action", 'I complete the todo "{}"')
    commit("a step to complete a todo")
    assert git(tmp_path, "checkout", "-q", "main").returncode == 0
    assert git(tmp_path, "checkout", "-qb", "delete").returncode == 0
    add("more.feature::Delete", "action", 'I delete the todo "{}"')
    add("more.feature::Delete", "check", 'the list shows "{}"')
    commit("steps to delete a todo")

    merged = git(tmp_path, "merge", "--no-edit", "complete")
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout, merged
    store = CacheStore(cache_dir, validate=check_code)
    assert store.broken() == {}
    assert sorted(e.sentence for e in store.library().entries) == [
        'I complete the todo "{}"', 'I delete the todo "{}"', "I open the todo app",
        'the list shows "{}"',
    ]  # fmt: skip
    for test, sentence in (("a.feature::S", 'I complete the todo "y"'),
                           ("b.feature::S", 'I delete the todo "y"')):  # fmt: skip
        assert store.lookup(CacheKey(test, "action", sentence)) is not None
