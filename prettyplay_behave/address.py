"""The address of a step, and the order in which the entries kept for a step serve it.

A scenario (an Outline's example row) is one test, named by its feature file, relative to the
features folder, and its scenario: ``shop/cart.feature::Add a mug``. A test of no feature file
(one of the Python API) is named by its own name alone. In a test, a step's **occurrence** tells
it apart from identical steps (the same kind, sentence and data) earlier in the test: the first
is 1, the next 2; inserting or reordering other steps never moves it.

A step finds the entry it runs in one order (:func:`lookup`): the entry pinned to its feature,
scenario and occurrence; then the feature's own entries; then the entries every feature
shares; of the feature's own or of the shared ones, an entry specific to the step's values
before a general one, which takes the values as parameters.

This module imports the standard library alone and works on plain data of its own: the very
same file, copied as it is, serves where the package is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

SEPARATOR = "::"  # between a test's feature file and its scenario

Entry = TypeVar("Entry")


def feature_path(path: str, features_dir: str) -> str:
    """The feature file at ``path`` as an address names it: relative to the features folder,
    with ``/`` between its folders on every system."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(features_dir))
    return relative.replace(os.sep, "/")


def scenario_test(feature: str, scenario: str) -> str:
    """The name of the test of ``scenario`` (its name, as behave gives it) of ``feature`` (a
    :func:`feature_path`)."""
    return f"{feature}{SEPARATOR}{scenario.strip()}"


def of_a_feature(test: str) -> bool:
    """Whether ``test`` is a scenario of a feature file (else a test of the Python API)."""
    return SEPARATOR in test


def feature_of(test: str) -> str:
    """The feature file of a scenario's test; a test of no feature file names itself."""
    return test.partition(SEPARATOR)[0]


def scenario_of(test: str) -> str:
    """The scenario of a scenario's test; a test of no feature file names itself."""
    _, separator, scenario = test.partition(SEPARATOR)
    return scenario if separator else test


class Occurrences:
    """The occurrence of each step of one test, counted as the steps come: a step identical to
    ``n`` earlier ones is the occurrence ``n + 1``. What makes two steps identical is the key a
    caller gives (its kind, sentence and data)."""

    def __init__(self) -> None:
        self._seen: dict[Hashable, int] = {}

    def count(self, step: Hashable) -> int:
        """The occurrence of ``step``, which comes now."""
        self._seen[step] = self._seen.get(step, 0) + 1
        return self._seen[step]


@dataclass(frozen=True)
class Position:
    """Where a step stands: its test's feature file and scenario, and its occurrence there."""

    feature: str
    scenario: str
    occurrence: int = 1

    @classmethod
    def of(cls, test: str, occurrence: int = 1) -> Position:
        return cls(feature_of(test), scenario_of(test), occurrence)


@dataclass(frozen=True)
class Scope:
    """The steps an entry serves: those of the feature file ``feature`` ("": of every feature);
    with ``scenario``, only that scenario's step at ``occurrence`` (a pin); with ``values``,
    only the steps with these values; and only where its code takes ``takes`` of the step's
    values (or none: code that spells them out)."""

    feature: str = ""
    scenario: str | None = None
    occurrence: int = 1
    values: tuple[str, ...] | None = None
    takes: int = 0

    def pins(self, position: Position) -> bool:
        """Whether the entry is pinned to the step at ``position``."""
        return (self.feature, self.scenario, self.occurrence) == (
            position.feature,
            position.scenario,
            position.occurrence,
        )

    def fits(self, values: tuple[str, ...]) -> bool:
        """Whether the entry's code can run for a step with ``values``."""
        if self.values is not None:
            return self.values == values
        return self.takes in (0, len(values)) if values else not self.takes


Candidates = Sequence[tuple[Entry, Scope]]


def lookup(
    position: Position,
    tiers: Sequence[tuple[Candidates[Entry], tuple[str, ...]]],
    pins: bool = True,
) -> Entry | None:
    """The entry the step at ``position`` runs, in the order the module tells. ``tiers``: the
    step's candidates, each with the values they are matched against, in the order they are
    tried (the entries of the step's template with its values; then, where there are any, the
    entries of its sentence as written, with none). A pin comes first, from whichever tier;
    then, tier by tier, the feature's own entries and the shared ones; among equals, the first
    in its tier. ``pins=False``: the entry the step would run without its pin."""
    for candidates, values in tiers:
        for entry, scope in candidates:
            if pins and scope.pins(position) and scope.fits(values):
                return entry
    for candidates, values in tiers:
        for feature in (position.feature, ""):  # the feature's own entries before the shared ones
            kept = [
                (entry, scope)
                for entry, scope in candidates
                if scope.scenario is None and scope.feature == feature and scope.fits(values)
            ]
            specific = [entry for entry, scope in kept if scope.values is not None]
            if specific or kept:
                return (specific or [entry for entry, _ in kept])[0]
    return None
