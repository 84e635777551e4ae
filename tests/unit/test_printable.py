"""Printing a container in step code is refused before a string past the caps is built."""

from __future__ import annotations

import pytest

from prettyplay_behave.errors import CodePolicyError
from prettyplay_behave.safety.limits import MAX_LENGTH, printable


@pytest.mark.parametrize(
    "value",
    [
        ["x" * (MAX_LENGTH - 4)],  # prints as exactly MAX_LENGTH characters
        {"key": "v" * 1000, 1: (2, 3)},
        [[], (), set(), frozenset(), {}],
        "x" * (2 * MAX_LENGTH),  # a string prints as itself: nothing new is built
        12345,
    ],
)
def test_what_prints_within_the_caps_passes_unchanged(value: object) -> None:
    assert printable(value) is value


def test_a_list_inside_itself_prints_short_and_passes() -> None:
    looped: list[object] = ["a"]
    looped.append(looped)
    assert printable(looped) is looped and str(looped) == "['a', [...]]"


@pytest.mark.parametrize(
    "value",
    [
        ["x" * MAX_LENGTH],
        {"k" * MAX_LENGTH: 1},
        {1: "v" * MAX_LENGTH},
        [["x" * 1000] * 1000] * 1000,  # one row, printed a thousand times
        [0] * (MAX_LENGTH // 2 + 1),  # ", " between items counts too
        (("x" * 600_000,), {"y" * 600_000}),
    ],
)
def test_what_would_print_past_the_caps_is_refused(value: object) -> None:
    with pytest.raises(CodePolicyError, match=f"more than {MAX_LENGTH:,} characters"):
        printable(value)
