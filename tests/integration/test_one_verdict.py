"""One verdict per failure: a product defect that fails the same step (its sentence template) in
several scenarios of a run is classified once; the other scenarios take that verdict with no
request, and say so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from prettyplay_behave.parameters import parameterize
from tests.conftest import BehaveProject
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)
from tests.support.pages import PageServer
from tests.support.todo_app import step_code, todo_page

FEATURE = """\
Feature: Todos
  Background:
    Given I open the todo app

  Scenario: One todo
    When I add a todo "buy milk"
    Then the counter shows "1 item left"

  Scenario: Two todos
    When I add a todo "buy milk"
    And I add a todo "feed the cat"
    Then the counter shows "2 items left"

  Scenario: Three todos
    When I add a todo "buy milk"
    And I add a todo "feed the cat"
    And I add a todo "water the plants"
    Then the counter shows "3 items left"
"""
DEFECT = json_answer(
    {"label": "product_defect", "explanation": "the counter counts one too many",
     "recommendation": "fix the counter"}
)  # fmt: skip


@pytest.fixture
def broken_app() -> Iterator[PageServer]:
    with PageServer({"/": todo_page("broken")}) as server:  # the counter is off by one
        yield server


def generated(request: RecordedRequest) -> str:
    return code_answer(step_code(parameterize(str(request.step)).template))


@pytest.mark.slow
def test_a_defect_failing_in_several_scenarios_costs_one_classification(
    project: BehaveProject, broken_app: PageServer, llm: ScriptedLLMServer
) -> None:
    project.write("features/todos.feature", FEATURE)
    llm.on("generate", generated, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    llm.on("classify", DEFECT, repeat=True)
    result = project.run(
        "-D", f"prettyplay.base_url={broken_app.url}", "-D", "prettyplay.expect_timeout_ms=1000",
        env=llm.env,
    )  # fmt: skip
    assert result.returncode == 1, result
    assert result.output.count("ProductDefectError") >= 3, result
    assert result.output.count("the counter counts one too many") >= 3
    classified = llm.requests_for("classify")
    assert [r.step for r in classified] == ['the counter shows "1 item left"']
    assert result.output.count("it takes that verdict (product_defect), no request") == 2
