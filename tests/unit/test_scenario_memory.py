"""The scenario's memory on its own: what may be remembered, under which names, and what a red
execution leaves behind."""

from __future__ import annotations

import re

import pytest

from prettyplay_behave.safety.scenario_memory import (
    MAX_NAMES,
    MAX_VALUE_CHARS,
    MemoryUseError,
    ScenarioMemory,
)

NO_SECRETS = lambda text: False  # noqa: E731


def test_a_green_execution_keeps_what_it_remembered_and_a_later_one_recalls_a_copy() -> None:
    memory = ScenarioMemory()
    first = memory.execution("I note the cart", NO_SECRETS)
    first.remember("cart", {"items": ["tea", 2], "total": 4.5, "paid": False, "note": None})
    first.commit()
    later = memory.execution("the cart is the same", NO_SECRETS)
    recalled = later.recall("cart")
    recalled["items"].append("cake")  # a copy: the kept value does not change
    assert later.recall("cart") == {"items": ["tea", 2], "total": 4.5, "paid": False, "note": None}
    assert [(r.name, r.step) for r in memory.items()] == [("cart", "I note the cart")]


def test_a_red_try_leaves_nothing_behind() -> None:
    memory = ScenarioMemory()
    execution = memory.execution("I note", NO_SECRETS)
    execution.remember("count", 3)
    assert execution.recall("count") == 3  # its own execution sees it at once
    execution.forget()
    assert memory.items() == []
    with pytest.raises(MemoryUseError, match="no earlier step of this scenario remembered"):
        execution.recall("count")


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("count", object(), "a object cannot be remembered"),
        ("count", float("nan"), "nan is no number JSON can hold"),
        ("count", {1: "a"}, "a dict's keys must be strings"),
        ("count", "x" * MAX_VALUE_CHARS, f"a remembered value takes at most {MAX_VALUE_CHARS:,}"),
        ("count", [0] * (MAX_VALUE_CHARS + 1), "more than 4,000 items"),
        ("count", [[[[[[[[[[1]]]]]]]]]], "nests more than 8 deep"),
        ("", 1, "is no name to remember a value by"),
        ("${CODE}", 1, "is no name to remember a value by"),
        ("count", "the code is ${CODE}", "a secret is never remembered"),
        ("count", ["s3cr3t-value"], "a secret is never remembered"),
    ],
)
def test_what_cannot_be_remembered_is_refused_with_its_reason(
    name: str, value: object, problem: str
) -> None:
    memory = ScenarioMemory()
    execution = memory.execution("I note", lambda text: "s3cr3t-value" in text)
    with pytest.raises(MemoryUseError, match=re.escape(problem)):
        execution.remember(name, value)
    execution.commit()
    assert memory.items() == []


def test_a_scenario_remembers_a_bounded_number_of_names() -> None:
    memory = ScenarioMemory()
    execution = memory.execution("I note", NO_SECRETS)
    for number in range(MAX_NAMES):
        execution.remember(f"value {number}", number)
    execution.remember("value 0", "again")  # a name already kept may change
    with pytest.raises(MemoryUseError, match=f"at most {MAX_NAMES} names"):
        execution.remember("one more", 1)


def test_an_unknown_name_names_what_was_remembered_and_by_which_step() -> None:
    memory = ScenarioMemory()
    for step, name in (("I note the count", "count"), ("I note the order", "order number")):
        execution = memory.execution(step, NO_SECRETS)
        execution.remember(name, 1)
        execution.commit()
    with pytest.raises(MemoryUseError) as caught:
        memory.execution("the total", NO_SECRETS).recall("total")
    assert str(caught.value) == (
        "recall('total'): nothing was remembered under 'total'; remembered: 'count' (by the step "
        "'I note the count'); 'order number' (by the step 'I note the order')"
    )


@pytest.mark.parametrize(
    "call",
    ["remember(page.title(), 1)", 'remember("count")', 'remember("count", 1, 2)',
     'recall("$count")', 'recall(name="count")', 'remember("count", secret("CODE"))'],
)  # fmt: skip
def test_the_policy_wants_each_name_written_out(call: str) -> None:
    from prettyplay_behave.errors import CodePolicyError
    from prettyplay_behave.safety.step_code import check_code

    with pytest.raises(CodePolicyError):
        check_code(f"def step(page) -> None:\n    {call}\n")
    check_code('def step(page) -> None:\n    remember("count", recall("count") + 1)\n')
