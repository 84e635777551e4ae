"""The change a step made to the page: elements paired by identity, never by position."""

from __future__ import annotations

from prettyplay_behave.browser.change import page_change
from prettyplay_behave.browser.snapshot import PageState


def state(snapshot: str) -> PageState:
    return PageState("http://app/", "App", snapshot, "f", len(snapshot))


def test_a_text_that_went_and_another_that_came_are_not_one_changed_line() -> None:
    before = state("- list:\n  - listitem: buy milk\n- text: 1 item left")
    after = state(
        "- list:\n  - listitem: buy milk\n  - listitem: feed the cat\n- text: 2 items left"
    )
    change = page_change(before, after)
    assert change.changed == ()
    assert set(change.appeared) == {"- listitem: feed the cat", "- text: 2 items left"}
    assert change.disappeared == ("- text: 1 item left",)


def test_unnamed_checkboxes_pair_by_their_place_among_their_like() -> None:
    boxes = ["- checkbox", "- checkbox", "- checkbox"]
    checked = ["- checkbox", "- checkbox [checked]", "- checkbox"]
    change = page_change(state("\n".join(boxes)), state("\n".join(checked)))
    assert change.changed == (("- checkbox", "- checkbox [checked]"),)
    assert (change.appeared, change.disappeared) == ((), ())


def test_a_test_id_element_whose_classes_changed_is_one_changed_line() -> None:
    before = state('- button "Book"\n- testid "seat-a1": div "A1" (clickable) .seat')
    after = state('- testid "seat-a1": div "A1" (clickable) .seat .selected\n- button "Book"')
    change = page_change(before, after)
    assert change.changed == (
        (
            '- testid "seat-a1": div "A1" (clickable) .seat',
            '- testid "seat-a1": div "A1" (clickable) .seat .selected',
        ),
    )


def test_the_clickable_mark_coming_or_going_alone_is_no_change() -> None:
    # the mark rests on the cursor, which a hover (the mouse left on what was clicked) sets
    before = state(
        '- button "Book"\n'
        '- testid "seat-a1": div "A1" .seat\n'
        '- clickable "A2": div "A2" (clickable) .seat\n'
        '- part of "Seats left:": b "3"'
    )
    after = state(
        '- button "Book"\n'
        '- testid "seat-a1": div "A1" (clickable) .seat\n'
        '- part of "Seats:": div "A2" .seat\n'
        '- clickable "3": b "3" (clickable)'
    )
    change = page_change(before, after)
    assert change.nothing, change
    assert change.summary == "nothing changed in the accessibility snapshot"


def test_a_real_change_beside_the_mark_is_still_one() -> None:
    before = state('- testid "seat-a1": div "A1" .seat\n- clickable "A2": div "A2" (clickable)')
    after = state('- testid "seat-a1": div "A1" (clickable) .seat .selected\n- part of "x": i "A2"')
    change = page_change(before, after)
    assert change.changed == (
        (
            '- testid "seat-a1": div "A1" .seat',
            '- testid "seat-a1": div "A1" (clickable) .seat .selected',
        ),
    )
    assert change.disappeared == ('- clickable "A2": div "A2" (clickable)',)
    assert change.appeared == ('- part of "x": i "A2"',)
