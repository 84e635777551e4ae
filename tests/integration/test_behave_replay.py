"""behave runs that replay the committed cache: green with zero LLM requests, strict misses,
refused cache entries, and user step definitions and hooks that keep working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prettyplay_behave.cache import file_name
from tests.conftest import BehaveProject, copy_examples
from tests.escapes import ESCAPES
from tests.support.caches import cache_bytes, plant, steps
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.shop_steps import HEADING, OPEN_SHOP

FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    Then the heading says Demo Shop
"""


def cache_files(folder: Path) -> dict[str, bytes]:
    """Every cache file below ``folder`` with its bytes (lock files left out)."""
    return cache_bytes(folder)


SHOP_FILE = Path("steps") / file_name(("action", "I open the shop", ""))


@pytest.mark.slow
def test_the_examples_replay_green_with_zero_llm_requests(
    tmp_path: Path, llm: ScriptedLLMServer
) -> None:
    root = copy_examples(tmp_path)
    before = cache_files(root / "features" / ".prettyplay")
    project = BehaveProject(root)
    result = project.run(env=llm.env)
    assert result.returncode == 0, result
    assert "13 scenarios passed, 0 failed" in result.output
    assert llm.requests == []
    assert cache_files(root / "features" / ".prettyplay") == before


def test_strict_miss_names_step_and_cache_file_with_zero_requests(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", FEATURE)
    plant(project.cache_dir, "shop.feature::Visit", ("step", "I open the shop", OPEN_SHOP))
    before = cache_files(project.cache_dir)
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.strict=true", env=llm.env
    )
    assert result.returncode == 1, result
    assert "IncurableStepError: no cached code for this step (strict: replay only)" in result.output
    assert "step: the heading says Demo Shop" in result.output
    assert str(Path("features/.prettyplay/steps")) in result.output
    assert llm.requests == []
    assert cache_files(project.cache_dir) == before


TWO_SCENARIOS = """\
Feature: Shop
  @strict
  Scenario: Strict visit
    Given I open the shop
    Then the heading says Demo Shop

  Scenario: Visit
    Given I open the shop
    Then the heading says Demo Shop
"""


def test_strict_tag_applies_to_one_scenario(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", TWO_SCENARIOS)
    llm.on("generate", code_answer(OPEN_SHOP), step="I open the shop")
    llm.on("generate", code_answer(HEADING), step="the heading says Demo Shop")
    llm.on("gate", CLEAN_GATE, repeat=True)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env)
    assert result.returncode == 1, result
    assert "1 scenario passed, 0 failed, 1 error, 0 skipped" in result.output
    strict = result.output[: result.output.index("Scenario: Visit")]
    untagged = result.output[result.output.index("Scenario: Visit") :]
    # the tagged scenario is replay only: its first step has no cached code and asks nothing
    assert "Given I open the shop ... error" in strict
    assert "IncurableStepError: no cached code for this step (strict: replay only)" in strict
    assert "step: I open the shop" in strict
    assert "serves it (its template 'I open the shop', in scenario 'Strict visit')" in strict
    # the untagged one generates both steps with the LLM and passes
    assert "Given I open the shop ... passed" in untagged
    assert "Then the heading says Demo Shop ... passed" in untagged
    assert [(r.purpose, r.step) for r in llm.requests] == [
        ("generate", "I open the shop"),
        ("gate", "I open the shop"),
        ("generate", "the heading says Demo Shop"),
        ("gate", "the heading says Demo Shop"),
    ]
    written = steps(project.cache_dir, "shop.feature")
    assert sorted(e["sentence"] for e in written) == [
        "I open the shop",
        "the heading says Demo Shop",
    ]


def test_a_miss_without_llm_names_the_settings(project: BehaveProject, shop) -> None:
    project.write("features/shop.feature", FEATURE)
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert "ProviderUnavailableError" in result.output
    assert "OPENAI_API_KEY" in result.output
    assert not project.cache_dir.exists()


@pytest.mark.parametrize("escape", ["import_os", "evaluate", "goto_file"])
def test_a_planted_escape_is_refused_by_behave_and_never_runs(
    project: BehaveProject, shop, escape: str
) -> None:
    project.write("features/shop.feature", FEATURE)
    library_file = project.cache_dir / SHOP_FILE
    library_file.parent.mkdir(parents=True)
    library_file.write_text(
        "# prettyplay step library (format 3): read by prettyplay without importing it.\n\n\n"
        '@step(kind="action", sentence="I open the shop", origin="generated")\n'
        + ESCAPES[escape].rstrip("\n")
        + "\n"
    )
    original = library_file.read_bytes()
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert "CacheError" in result.output
    assert SHOP_FILE.name in result.output and "I open the shop" in result.output
    assert library_file.read_bytes() == original


def test_a_planted_escape_in_an_old_file_is_refused_by_behave_and_never_runs(
    project: BehaveProject, shop
) -> None:
    escape = "import_os"
    project.write("features/shop.feature", FEATURE)
    cache_file = project.cache_dir / "shop.feature.json"
    cache_file.parent.mkdir(parents=True)
    document = {
        "format": 1,
        "tests": {
            "Visit": [
                {
                    "code": ESCAPES[escape].splitlines(),
                    "kind": "step",
                    "occurrence": 1,
                    "origin": "generated",
                    "sentence": "I open the shop",
                }
            ]
        },
    }
    cache_file.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    original = cache_file.read_bytes()
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert "CacheError" in result.output
    assert "shop.feature.json" in result.output and "I open the shop" in result.output
    assert cache_file.read_bytes() == original


@pytest.mark.parametrize("marker", ["truncated", "conflict"])
def test_a_corrupt_cache_file_is_reported_and_left_untouched(
    project: BehaveProject, shop, marker: str
) -> None:
    project.write("features/shop.feature", FEATURE)
    plant(project.cache_dir, "shop.feature::Visit", ("step", "I open the shop", OPEN_SHOP))
    cache_file = project.cache_dir / SHOP_FILE
    text = cache_file.read_text()
    if marker == "truncated":
        text = text[: len(text) // 2]
    else:
        text = "<<<<<<< HEAD\n" + text + "=======\n" + text + ">>>>>>> branch\n"
    cache_file.write_text(text)
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert "CacheError" in result.output and SHOP_FILE.name in result.output
    assert cache_file.read_text() == text


def test_user_step_definitions_and_hooks_keep_working(project: BehaveProject, shop) -> None:
    project.write(
        "features/shop.feature",
        """\
        Feature: Shop
          Scenario: Visit
            Given I open the shop
            When I note the title
            And I do something generic
            Then the heading says Demo Shop
        """,
    )
    project.write(
        "features/environment.py",
        """\
        from prettyplay_behave.behave import use_prettyplay

        def before_all(context):
            context.log = ["before_all"]

        def before_scenario(context, scenario):
            context.log.append("before_scenario page=" + str(context.page.url))

        def after_scenario(context, scenario):
            context.log.append("after_scenario page=" + str(not context.page.is_closed()))
            with open("hooks.log", "w") as log:
                log.write(repr(context.log))

        use_prettyplay(globals())
        """,
    )
    project.write(
        "features/steps/user_steps.py",
        """\
        from behave import step, when

        @when("I note the title")
        def note_title(context):
            context.log.append("user step saw " + context.page.title())

        @step("I do something generic")
        def generic(context):
            context.log.append("user generic step")
        """,
    )
    plant(
        project.cache_dir, "shop.feature::Visit",
        ("step", "I open the shop", OPEN_SHOP), ("expect", "the heading says Demo Shop", HEADING),
    )  # fmt: skip
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 0, result
    assert (project.root / "hooks.log").read_text() == repr(
        [
            "before_all",
            "before_scenario page=about:blank",
            "user step saw Home · Demo Shop",
            "user generic step",
            "after_scenario page=True",
        ]
    )


def test_bad_settings_fail_at_start_naming_key_value_and_source(project: BehaveProject) -> None:
    project.write("features/shop.feature", FEATURE)
    result = project.run("-D", "prettyplay.speed=140")
    assert result.returncode == 1, result
    assert "ConfigError" in result.output
    assert "'speed' = '140' (from command line -D): expected 0 to 100" in result.output


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        # a run-wide key: a tag could only be ignored
        ("prettyplay.model=other", "setting 'model' = 'other' (from tag @prettyplay.model=other "
         "of scenario 'Tagged'): a run-wide setting cannot be set per scenario"),
        # a per-test key with a bad value
        ("prettyplay.healing_attempts=many", "setting 'healing_attempts' = 'many' (from tag "
         "@prettyplay.healing_attempts=many of scenario 'Tagged'): expected a whole number"),
    ],
)  # fmt: skip
def test_a_bad_scenario_tag_stops_the_run_before_any_scenario(
    project: BehaveProject, shop, tag: str, message: str
) -> None:
    project.write(
        "features/shop.feature",
        f"""\
        Feature: Shop
          Scenario: First
            Given I open the shop

          @{tag}
          Scenario: Tagged
            Given I open the shop
        """,
    )
    plant(project.cache_dir, "shop.feature::First", ("step", "I open the shop", OPEN_SHOP))
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert f"ConfigError: {message}" in result.output
    assert "0 scenarios passed" in result.output  # not even the untagged one ran
