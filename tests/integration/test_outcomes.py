"""Honest outcomes where users look: a regression is a behave *failure* in behave's output,
JUnit, its JSON formatter and Allure, while what is not the app's answer stays an *error*."""

from __future__ import annotations

import base64
import functools
import json
import socket
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave import (
    IncurableStepError,
    PrettyConfig,
    PrettyPlay,
    ProviderUnavailableError,
    RedStepError,
)
from tests.conftest import BehaveProject
from tests.support import caches
from tests.support.llm_server import (
    CLEAN_GATE,
    ScriptedLLMServer,
    code_answer,
    json_answer,
    server_error,
)
from tests.support.settings import api_config
from tests.support.shop_steps import BROKEN_ACCEPT, HEADING, OPEN_SHOP

ALLURE = ("-f", "allure_behave.formatter:AllureFormatter", "-o", "allure-results")
JSON = ("-f", "json", "-o", "out.json")
JUNIT = ("--junit", "--junit-directory=junit")

# the examples' check, edited to expect what the shop does not show: a regression
REGRESSED = HEADING.replace('"Demo Shop")', '"Demo Shop 2", timeout=500)')
ROT = {"label": "rot", "explanation": "the heading changed", "recommendation": "heal it"}

STRICT_FEATURE = """\
Feature: Shop
  Scenario: Regression
    Given I open the shop
    Then the heading says Demo Shop

  Scenario: Never written
    Given I open the shop
    When I dance on the counter
"""


def junit_counts(folder: Path) -> dict[str, int]:
    suites = [ElementTree.parse(path).getroot() for path in folder.glob("*.xml")]
    return {key: sum(int(s.get(key, 0)) for s in suites) for key in ("failures", "errors")}


def json_steps(path: Path) -> dict[str, dict[str, Any]]:
    """behave's JSON output: each step by its scenario and sentence."""
    return {
        f"{element['name']}: {step['name']}": step
        for feature in json.loads(path.read_text())
        for element in feature["elements"]
        for step in element["steps"]
    }


def allure_results(folder: Path) -> dict[str, dict[str, Any]]:
    found = (json.loads(p.read_text()) for p in folder.glob("*-result.json"))
    return {result["name"]: result for result in found}


def test_a_regression_under_strict_is_a_failure_and_a_missing_entry_an_error(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", STRICT_FEATURE)
    caches.plant(
        project.cache_dir,
        "shop.feature::Regression",
        ("action", "I open the shop", OPEN_SHOP),
        ("check", "the heading says Demo Shop", REGRESSED),
    )
    llm.on("classify", json_answer(ROT))
    result = project.run(
        "-o", "-", *JSON, *ALLURE, *JUNIT,
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.strict=true", env=llm.env,
    )  # fmt: skip
    assert result.returncode == 1, result
    # behave: the regression failed, the step that was never written is an error
    assert "1 scenario passed" not in result.output
    assert "0 scenarios passed, 1 failed, 1 error, 0 skipped" in result.output, result
    assert "Then the heading says Demo Shop ... failed" in result.output, result
    assert "ASSERT FAILED: RedStepError: the cached step failed (strict: replay only)" in (
        result.output
    ), result
    assert "When I dance on the counter ... error" in result.output, result
    assert len(llm.requests_for("classify")) == 1 and len(llm.requests) == 1
    # JUnit: one failure, one error
    assert junit_counts(project.root / "junit") == {"failures": 1, "errors": 1}
    junit = "".join(p.read_text() for p in (project.root / "junit").glob("*.xml"))
    assert "RedStepError: the cached step failed (strict: replay only)" in junit
    assert "explanation: the heading changed" in junit
    # behave's JSON: the failure carries its message, the error its own status
    steps = json_steps(project.root / "out.json")
    failed = steps["Regression: the heading says Demo Shop"]["result"]
    assert failed["status"] == "failed"
    message = "\n".join(failed["error_message"])
    assert "RedStepError: the cached step failed (strict: replay only)" in message
    assert "Demo Shop 2" in message
    assert steps["Never written: I dance on the counter"]["result"]["status"] == "error"
    # the failure's picture, with no report_dir: in behave's JSON and in Allure
    (embedding,) = steps["Regression: the heading says Demo Shop"]["embeddings"]
    assert embedding["mime_type"] == "image/png"
    picture = base64.b64decode(embedding["data"])
    assert picture.startswith(b"\x89PNG")
    # Allure: the regression failed, the missing entry broke the test
    results = allure_results(project.root / "allure-results")
    assert results["Regression"]["status"] == "failed"
    assert "RedStepError" in results["Regression"]["statusDetails"]["message"]
    assert results["Never written"]["status"] == "broken"
    check = next(s for s in results["Regression"]["steps"] if s["name"].endswith("Demo Shop"))
    (shown,) = [a for a in check["attachments"] if a["name"] == "failure"]
    assert shown["type"] == "image/png"
    assert (project.root / "allure-results" / shown["source"]).read_bytes() == picture
    assert not (project.root / "reports").exists()


HONEST_FEATURE = """\
Feature: Shop
  Scenario: Unwritable
    Given I open the shop
    When I teleport to the moon

  Scenario: Broken link
    Given I open the shop
    When I open the price list
"""
TO_A_MISSING_PAGE = 'def step(page) -> None:\n    page.goto("/price-list")\n'
DEFECT = {"label": "product_defect", "explanation": "the price list is gone",
          "recommendation": "restore the page"}  # fmt: skip


def test_a_step_that_cannot_be_written_errs_on_every_run_and_an_error_page_is_red(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    """The same outcome on the run that asked and on every later one: a CANNOT answer is an
    error (nothing of the app was judged), kept in the library as such; an action whose page
    ends on an HTTP 404 document is red, never green, and its failure says so."""
    project.write("features/shop.feature", HONEST_FEATURE)
    caches.plant(
        project.cache_dir, "shop.feature::Unwritable", ("action", "I open the shop", OPEN_SHOP)
    )
    caches.plant(
        project.cache_dir, "shop.feature::Broken link",
        ("action", "I open the price list", TO_A_MISSING_PAGE),
    )  # fmt: skip
    llm.on("generate", "CANNOT: the shop has no way to the moon", step="teleport")
    llm.on("classify", json_answer(DEFECT), step="price list")
    base = ("-o", "-", *ALLURE, *JUNIT, "-D", f"prettyplay.base_url={shop.url}")
    asked = project.run(*base, env=llm.env)
    replayed = project.run(*base, "-D", "prettyplay.strict=true")  # no LLM at all
    for run, result in (("asked", asked), ("replayed", replayed)):
        assert result.returncode == 1, (run, result)
        assert "0 scenarios passed, 1 failed, 1 error, 0 skipped" in result.output, (run, result)
        assert "When I teleport to the moon ... error" in result.output, (run, result)
        assert "IncurableStepError: the model answered that this step cannot be written" in (
            result.output
        ), (run, result)
        assert "When I open the price list ... failed" in result.output, (run, result)
        assert "the page's document was answered HTTP 404" in result.output, (run, result)
        assert junit_counts(project.root / "junit") == {"failures": 1, "errors": 1}, run
        results = allure_results(project.root / "allure-results")
        assert results["Unwritable"]["status"] == "broken", run
        assert results["Broken link"]["status"] == "failed", run
    assert "the answer of an earlier run" in replayed.output
    assert [r.purpose for r in llm.requests] == ["generate", "classify"]
    library = caches.cache_text(project.cache_dir)
    assert 'origin="cannot"' in library and "the shop has no way to the moon" in library


INCURABLE = {"label": "incurable", "explanation": "no such heading", "recommendation": "reword"}


def test_a_red_check_fails_and_a_step_never_written_errs(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    """In the Python API as in behave: a check whose assertion the app fails is an
    AssertionError; a step whose generation never gave code is not."""
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("gate", CLEAN_GATE)
    llm_env.on("generate", code_answer(REGRESSED), step="the heading says Demo Shop 2")
    llm_env.on("generate", "no code here", step="dance", repeat=True)
    llm_env.on("classify", json_answer(INCURABLE), repeat=True)
    config = PrettyConfig(
        base_url=shop.url, cache_dir=str(tmp_path / "cache"), generation_attempts=1
    )
    with PrettyPlay("outcomes", config=config, browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(RedStepError) as red:
            t.expect("the heading says Demo Shop 2")
        with pytest.raises(IncurableStepError) as unwritten:
            t.step("dance on the counter")
    assert isinstance(red.value, AssertionError) and isinstance(red.value, IncurableStepError)
    assert red.value.render().startswith(
        "RedStepError: the check failed and cannot be healed\n---\n"
        "step: the heading says Demo Shop 2\nerror: AssertionError: "
    )
    assert "explanation: no such heading" in red.value.render()
    assert not isinstance(unwritten.value, AssertionError)
    assert unwritten.value.render().startswith(
        "IncurableStepError: the generation budget is exhausted"
    )


# -- the app first -------------------------------------------------------------------------------

NEW_STEP_FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    Then the heading says Demo Shop
"""


def closed_port() -> int:
    """A port nothing listens on (the system picked it free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_down_app_stops_the_run_at_once_with_no_request(
    project: BehaveProject, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", NEW_STEP_FEATURE)
    down = f"http://127.0.0.1:{closed_port()}"
    result = project.run("-D", f"prettyplay.base_url={down}", env=llm.env)
    assert result.returncode == 1, result
    assert (
        f"HOOK-ERROR in before_all: ConfigError: setting 'base_url' = '{down}' (from command "
        "line -D): the app does not answer there (one request: ConnectionRefusedError: "
        "[Errno 111] Connection refused); start the app"
    ) in result.output, result
    assert llm.requests == []
    assert "chrome-error" not in result.output and "allowed_origins" not in result.output
    assert "Given I open the shop ..." not in result.output  # no step ran
    assert not project.cache_dir.exists()


def test_an_unset_base_url_names_where_it_was_looked_for(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", NEW_STEP_FEATURE)
    result = project.run(env=llm.env)
    assert result.returncode == 1, result
    assert "ConfigError: setting 'base_url' = None (from the default): no base_url is set" in (
        result.output
    ), result
    assert "PRETTYPLAY_BASE_URL" in result.output
    assert f"the working directory {project.root}" in result.output
    assert "found none of behave.ini, .behaverc, setup.cfg, tox.ini, pyproject.toml" in (
        result.output
    )
    assert llm.requests == []
    # behave started from the parent folder reads no config file: the error says where it looked
    project.write("behave.ini", f"[behave.userdata]\nprettyplay.base_url = {shop.url}\n")
    parent = BehaveProject(project.root.parent)
    from_parent = parent.run(f"{project.root.name}/features", env=llm.env)
    assert from_parent.returncode == 1, from_parent
    assert f"the working directory {parent.root}" in from_parent.output, from_parent
    assert f"(the features are in {project.features})" in from_parent.output, from_parent
    assert llm.requests == []
    # from its own folder the same project runs
    llm.on("generate", code_answer(OPEN_SHOP), step="I open the shop")
    llm.on("generate", code_answer(HEADING), step="the heading says Demo Shop")
    llm.on("gate", CLEAN_GATE, repeat=True)
    ran = project.run(env=llm.env)
    assert ran.returncode == 0, ran


def test_a_navigation_to_a_down_app_names_the_network_error(
    tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    """Chromium's error page of a failed navigation is no origin outside the bounds."""
    down = f"http://127.0.0.1:{closed_port()}"
    config = PrettyConfig(base_url=down, cache_dir=str(tmp_path / "cache"), strict=True)
    caches.plant(tmp_path / "cache", "down", ("action", "open the shop", OPEN_SHOP))
    llm_env.on("classify", json_answer(INCURABLE))
    with PrettyPlay("down", config=config, browser=browser) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
    render = caught.value.render()
    assert f"error: Error: Page.goto: net::ERR_CONNECTION_REFUSED at {down}/" in render, render
    assert "allowed_origins" not in render and "was blocked" not in render, render


# -- the cause survives --------------------------------------------------------------------------


# a red step fails within 2 s
config = functools.partial(api_config, action_timeout_ms=2_000)


def test_a_red_check_whose_classification_fails_names_both(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    caches.plant(
        tmp_path / "cache", "t",
        ("action", "open the shop", OPEN_SHOP),
        ("check", "the heading says Demo Shop", REGRESSED),
    )  # fmt: skip
    llm_env.on("classify", server_error(), repeat=True)
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(RedStepError) as caught:  # still the app's answer: a failure
            t.expect("the heading says Demo Shop")
    render = caught.value.render()
    assert render.startswith(
        "RedStepError: the cached step failed\n---\nstep: the heading says Demo Shop\n"
        "error: AssertionError: Locator expected to have text 'Demo Shop 2'"
    ), render
    last = render.split("\n---\n")[-1]
    assert last.startswith("… and the classification failed: the LLM is unavailable: "), last
    assert "kept failing (HTTP 500" in last
    assert len(llm_env.requests_for("classify")) == 1


def test_a_red_action_whose_classification_fails_names_both(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    caches.plant(
        tmp_path / "cache", "t",
        ("action", "open the shop", OPEN_SHOP),
        ("action", "accept the cookie banner", BROKEN_ACCEPT),
    )  # fmt: skip
    llm_env.on("classify", server_error(), repeat=True)
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(ProviderUnavailableError) as caught:  # the provider's error
            t.step("accept the cookie banner")
    message = str(caught.value)
    assert not isinstance(caught.value, AssertionError)
    assert message.startswith(
        "the cached step failed\n---\nstep: accept the cookie banner\nerror: TimeoutError: "
    ), message
    assert 'waiting for get_by_role("button", name="Consent")' in message
    assert "… and the classification failed: the LLM is unavailable: " in message
    assert "kept failing (HTTP 500" in message


def test_a_policy_refusal_survives_the_failed_request_after_it(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", code_answer("import os\n\ndef step(page) -> None:\n    os.getcwd()"))
    llm_env.on("generate", server_error(), repeat=True)
    with PrettyPlay("t", config=config(shop.url, tmp_path / "cache"), browser=browser) as t:
        with pytest.raises(ProviderUnavailableError) as caught:
            t.step("open the shop")
    message = str(caught.value)
    assert message.startswith("the step's last attempt failed\n---\nstep: open the shop\n")
    # the refusal that made it red comes first
    assert "error: CodePolicyError: line 1: import statement is not allowed" in message, message
    assert "… and the generate request failed: the LLM is unavailable: " in message
    assert [r.purpose for r in llm_env.requests] == ["generate", "generate"]
