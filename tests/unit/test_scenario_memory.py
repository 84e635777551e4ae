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
from prettyplay_behave.safety.secrets import Secrets

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


REDACTED = "${SHOP_PASSWORD}"  # what a password field read back gives step code


@pytest.mark.parametrize(
    "value",
    [
        list(REDACTED),  # letter by letter: ["$", "{", "S", ...]
        ["${SHOP_PASS", "WORD}"],  # split in halves
        {"start": "${SHOP", "rest": ["PASS", "WORD}"]},
        " ".join(REDACTED),
        REDACTED[::-1],
        list(REDACTED.lower())[::-1],
        "$-{-SHOP-PASSWORD-}",  # its name's own separators changed
        "${cookie sid (2)}",  # a session cookie's
        "\\u0024\\u007bSHOP_PASSWORD\\u007d",  # escaped as JSON writes it, then quoted
        "%24%7BSHOP_PASSWORD%7D",
        "%2524%257BSHOP_PASSWORD%257D",
        "&#36;&lbrace;SHOP_PASSWORD&amp;#125;",
    ],
    ids=lambda value: repr(value)[:40],
)
def test_a_placeholder_is_refused_whatever_its_spelling(value: object) -> None:
    memory = ScenarioMemory()
    execution = memory.execution("I note", NO_SECRETS)
    with pytest.raises(MemoryUseError, match="the value holds a secret"):
        execution.remember("password", value)
    assert execution.pending == {}


@pytest.mark.parametrize(
    "value",
    ["$12.50", {"total": "$5", "note": "{x}"}, "a {b} c", ["$", "12"], "{PASSWORD}", "$PASSWORD"],
)
def test_dollars_and_braces_that_spell_no_placeholder_are_remembered(value: object) -> None:
    memory = ScenarioMemory()
    execution = memory.execution("I note", NO_SECRETS)
    execution.remember("price", value)
    assert execution.recall("price") == value


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("${SHOP_", "PASSWORD}"),
        ("PASSWORD}", "${SHOP_"),
        ("tea-for", "two-42"),
        ("42", "tea-for-two"),
    ],
    ids=["placeholder", "placeholder, second half first", "secret", "secret, second half first"],
)
def test_a_secret_or_a_placeholder_split_between_two_values_of_the_scenario_is_refused(
    first: str, second: str
) -> None:
    """The memory is checked as a whole: the values in the order they were remembered, the new
    one last or first. A value under the same name replaces the one before, and joins nothing."""
    secrets = Secrets({"CODE": "tea-for-two-42"})
    secrets.require(["CODE"], "I type ${CODE}")

    def holds_secret(text: str) -> bool:
        return secrets.redact(text) != text

    memory = ScenarioMemory()
    noted = memory.execution("I note", holds_secret)
    noted.remember("first", first)
    noted.commit()
    later = memory.execution("I note more", holds_secret)
    with pytest.raises(MemoryUseError) as caught:
        later.remember("second", second)
    assert str(caught.value) == (
        "remember('second', ...): the value and the values remembered before it hold a secret "
        "(or a placeholder such as ${NAME} that stands for one) between them; a secret is never "
        "remembered"
    )
    later.remember("first", second)
    later.commit()
    assert [(r.name, r.value) for r in memory.items()] == [("first", second)]


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
