"""The address of a step (its test's name, its occurrence) and the order in which the entries
kept for a step serve it; the library's lookup and the export's both read them here."""

from __future__ import annotations

import os

from prettyplay_behave.address import (
    Occurrences,
    Position,
    Scope,
    feature_of,
    feature_path,
    lookup,
    of_a_feature,
    scenario_of,
    scenario_test,
)

HERE = Position("shop/cart.feature", "Pay", 2)


# -- the test's name -----------------------------------------------------------------------------


def test_a_scenarios_test_is_its_feature_file_and_scenario_and_splits_back() -> None:
    feature = feature_path("/p/features/shop/checkout.feature", "/p/features")
    name = scenario_test(feature, "Buy a mug -- @1.1 ")
    assert name == "shop/checkout.feature::Buy a mug -- @1.1"
    assert of_a_feature(name)
    assert (feature_of(name), scenario_of(name)) == ("shop/checkout.feature", "Buy a mug -- @1.1")
    assert Position.of(name, 3) == Position("shop/checkout.feature", "Buy a mug -- @1.1", 3)


def test_a_feature_file_is_named_relative_to_the_features_folder_with_slashes() -> None:
    path = os.path.join("features", "shop", "cart.feature")  # relative to the working folder
    assert feature_path(path, os.path.abspath("features")) == "shop/cart.feature"
    assert (
        feature_path(os.path.join("elsewhere", "a.feature"), "features") == "../elsewhere/a.feature"
    )


def test_a_test_of_no_feature_file_names_itself_as_feature_and_scenario() -> None:
    assert not of_a_feature("login-flow")
    assert (feature_of("login-flow"), scenario_of("login-flow")) == ("login-flow", "login-flow")
    # a scenario whose name holds the separator keeps the rest of it
    assert scenario_of("a.feature::Pay:: twice") == "Pay:: twice"


# -- occurrences ---------------------------------------------------------------------------------


def test_identical_steps_count_up_and_other_steps_between_them_change_nothing() -> None:
    occurrences = Occurrences()
    counted = [
        occurrences.count(step)
        for step in [
            ("action", "I open the shop", ""),
            ("action", "I go on", ""),
            ("action", "I open the shop", ""),
            ("check", "I open the shop", ""),  # another kind
            ("action", "I open the shop", "| a |"),  # other data
            ("action", "I go on", ""),
            ("action", "I open the shop", ""),
        ]
    ]
    assert counted == [1, 1, 2, 1, 1, 2, 3]
    assert Occurrences().count(("action", "I open the shop", "")) == 1  # another test's


# -- the order of lookup -------------------------------------------------------------------------


def found(*tiers: list[tuple[str, Scope]], values: tuple[str, ...] = ("tea",)) -> str | None:
    """The entry a step at HERE with ``values`` finds among ``tiers`` (the first one matched
    with the step's values, a second one with none)."""
    return lookup(HERE, [(tiers[0], values), *((tier, ()) for tier in tiers[1:])])


PIN = Scope("shop/cart.feature", "Pay", 2, takes=1)
OWN = Scope("shop/cart.feature", takes=1)
OWN_TEA = Scope("shop/cart.feature", values=("tea",))
SHARED = Scope(takes=1)
SHARED_TEA = Scope(values=("tea",))


def test_the_pin_of_the_steps_scenario_and_occurrence_comes_before_everything() -> None:
    entries = [("shared tea", SHARED_TEA), ("own tea", OWN_TEA), ("pin", PIN)]
    assert found(entries) == "pin"
    assert lookup(HERE, [(entries, ("tea",))], pins=False) == "own tea"
    # a pin in the second tier still comes before the first tier's entries
    assert found([("own tea", OWN_TEA)], [("pin", Scope("shop/cart.feature", "Pay", 2))]) == "pin"


def test_a_pin_serves_its_own_feature_scenario_and_occurrence_only() -> None:
    others = [
        ("other occurrence", Scope("shop/cart.feature", "Pay", 1, takes=1)),
        ("other scenario", Scope("shop/cart.feature", "Browse", 2, takes=1)),
        ("namesake of another feature", Scope("shop/checkout.feature", "Pay", 2, takes=1)),
    ]
    assert found([*others, ("shared", SHARED)]) == "shared"
    assert found(others) is None  # a pin never serves as a shared entry


def test_a_pin_that_does_not_fit_the_values_serves_nothing() -> None:
    pinned_mug = Scope("shop/cart.feature", "Pay", 2, values=("mug",))
    assert found([("pin for mug", pinned_mug), ("shared", SHARED)]) == "shared"


def test_the_features_own_entries_come_before_the_shared_ones_whatever_their_values() -> None:
    assert found([("shared tea", SHARED_TEA), ("own", OWN)]) == "own"
    assert found([("shared", SHARED), ("own tea", OWN_TEA)]) == "own tea"
    another = Scope("shop/checkout.feature", values=("tea",))
    assert found([("another feature's", another), ("shared", SHARED)]) == "shared"


def test_an_entry_of_the_steps_values_comes_before_the_general_one() -> None:
    assert found([("own", OWN), ("own tea", OWN_TEA)]) == "own tea"
    assert found([("shared", SHARED), ("shared tea", SHARED_TEA)]) == "shared tea"
    assert found([("shared", SHARED), ("shared tea", SHARED_TEA)], values=("mug",)) == "shared"


def test_among_equals_the_first_serves_and_a_tier_before_the_next() -> None:
    assert found([("first", SHARED), ("second", SHARED)]) == "first"
    # the feature's own entry of the second tier comes after the first tier's shared one
    assert found([("shared", SHARED)], [("own, as written", Scope("shop/cart.feature"))]) == (
        "shared"
    )
    assert found([], [("as written", Scope())]) == "as written"


def test_code_serves_the_values_it_takes_or_spells_out() -> None:
    assert Scope(takes=2).fits(("a", "b"))
    assert not Scope(takes=1).fits(("a", "b"))
    assert Scope().fits(("a", "b"))  # code that names no parameter runs with any
    assert Scope().fits(())
    assert not Scope(takes=1).fits(())
    assert Scope(values=("a",)).fits(("a",))
    assert not Scope(values=("a",)).fits(("b",))
    assert not Scope(values=("a",)).fits(())
