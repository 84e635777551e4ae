"""What code asserts, whatever it asserts it on: a heal that stops checking something says so;
and which sentences expect an error page (only they may end green on one)."""

from __future__ import annotations

import pytest

from prettyplay_behave.meaning import expects_error_page
from prettyplay_behave.safety.step_code import dropped_assertions, step_code

RESET = """def step(page) -> None:
    button = page.get_by_role("button", name="Reset")
    expect(button).to_have_text(re.compile("reset", re.I))
    assert page.get_by_role("listitem").count() == 3
    expect(page.get_by_test_id("error")).not_to_be_visible()
"""


def test_the_assertions_of_code_are_its_matchers_and_asserts_in_order() -> None:
    assert step_code(RESET).assertions == (
        "to_have_text(re.compile('reset', re.I))",
        "assert page.get_by_role('listitem').count() == 3",
        "not_to_be_visible()",
    )
    assert step_code("def step(page) -> None:\n    page.goto('/')\n").assertions == ()


def test_a_rewrite_that_checks_the_same_on_another_locator_drops_nothing() -> None:
    renamed = RESET.replace('name="Reset"', 'name="Clear"').replace('"error"', '"alert"')
    assert dropped_assertions(RESET, renamed) == ()


def test_a_rewrite_that_weakens_a_check_drops_it() -> None:
    weaker = RESET.replace('to_have_text(re.compile("reset", re.I))', "to_be_enabled()")
    assert dropped_assertions(RESET, weaker) == ("to_have_text(re.compile('reset', re.I))",)
    assert dropped_assertions(RESET, "def step(page) -> None:\n    pass\n") == (
        step_code(RESET).assertions
    )


@pytest.mark.parametrize(
    ("sentence", "expects"),
    [
        ("I open the price list", False),
        ("the order is confirmed", False),
        ("I see a 404 page", True),
        ("the page says Not Found", True),
        ("access is denied", True),
        ("an error message is shown", True),
        ("the page shows 500 items", True),  # a number that reads as a status: let it pass
    ],
)
def test_a_sentence_expects_an_error_page_when_it_names_one(sentence: str, expects: bool) -> None:
    assert expects_error_page(sentence) is expects
