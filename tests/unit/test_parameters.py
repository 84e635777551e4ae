"""A step's parameters: quoted strings, numbers and Outline placeholders; its template."""

from __future__ import annotations

import pytest

from prettyplay_behave.parameters import Parameters, parameterize
from prettyplay_behave.safety.step_code import step_code

CASES = {
    "a quoted string": (
        'I add the "Green Tea" to the cart',
        "",
        Parameters('I add the "{}" to the cart', ("text",), ("Green Tea",)),
    ),
    "two quoted strings": (
        'I log in as "ann@example.com" with "secret"',
        "",
        Parameters('I log in as "{}" with "{}"', ("text", "text_2"), ("ann@example.com", "secret")),
    ),
    "numbers on their own, not in words": (
        "the counter shows 3 items, $20, 2.5 kg, an h1 and v1.2",
        "",
        Parameters(
            "the counter shows {} items, ${}, {} kg, an h1 and v1.2",
            ("number", "number_2", "number_3"),
            ("3", "20", "2.5"),
        ),
    ),
    "an outline placeholder, unquoted": (
        "I add milk to the list",
        "I add <item> to the list",
        Parameters("I add {} to the list", ("item",), ("milk",)),
    ),
    "an outline placeholder, quoted, beside a quoted value": (
        'I log in as "bob@example.com" with the password "secret"',
        'I log in as "<email>" with the password "secret"',
        Parameters(
            'I log in as "{}" with the password "{}"',
            ("email", "password"),
            ("bob@example.com", "secret"),
        ),
    ),
    "a placeholder named like a provided name": (
        "I open page two",
        "I open <page>",
        Parameters("I open {}", ("page_2",), ("page two",)),
    ),
    "a secret's placeholder is no parameter": (
        'I type ${PASSWORD} and "${TOKEN}"',
        "",
        Parameters('I type ${PASSWORD} and "${TOKEN}"'),
    ),
    "a sentence without values": ("I open the shop", "", Parameters("I open the shop")),
    "values named as the sentence names them": (
        'the "Student Name" input field with data-testid "student-name" should be empty',
        "",
        Parameters(
            'the "{}" input field with data-testid "{}" should be empty',
            ("field", "test_id"),
            ("Student Name", "student-name"),
        ),
    ),
    "a kind said before the value, and two of a kind": (
        'I click the button "Save" and the button "Close"',
        "",
        Parameters(
            'I click the button "{}" and the button "{}"', ("button", "button_2"), ("Save", "Close")
        ),
    ),
}


@pytest.mark.parametrize(("sentence", "outline", "expected"), CASES.values(), ids=CASES.keys())
def test_a_sentence_splits_into_its_template_and_values(
    sentence: str, outline: str, expected: Parameters
) -> None:
    assert parameterize(sentence, outline) == expected


def test_two_sentences_that_differ_only_in_values_share_a_template() -> None:
    first = parameterize('I add a todo "buy milk"')
    second = parameterize('I add a todo "feed the cat"')
    assert first.template == second.template and first.values != second.values


def test_an_outline_that_does_not_fit_the_sentence_is_ignored() -> None:
    assert parameterize('I add "x"', "I remove <item>") == parameterize('I add "x"')


def test_what_code_takes_and_whether_it_uses_each() -> None:
    def taken(code: str) -> tuple[tuple[str, ...], bool]:
        read = step_code(code)
        return read.parameters, read.uses_all_parameters

    assert taken("def step(page, item):\n    page.fill('#a', item)\n") == (("item",), True)
    assert taken("def step(page, item):\n    page.fill('#a', 'x')\n") == (("item",), False)
    assert taken("def step(page):\n    pass\n") == ((), True)
