"""Which cache entries the feature files still use: liveness from the features themselves.

The features are parsed with behave's own parser, every step of every scenario (Background and
Outline rows included) is turned into its cache address as a run turns it, and the entry each
address finds is live. An entry no step finds is obsolete: its step was removed or reworded,
its scenario renamed (for an entry pinned to it), its feature file deleted. A listing left by
an earlier run never decides: a failed or partial run cannot make a live entry look dead.

A feature file behave cannot parse, or with a step annotation prettyplay does not know, is an
:class:`UnreadableFeature`: one line naming the file, the same for every command that reads
features.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..address import Occurrences, feature_path, scenario_test
from ..cache import CacheKey, CacheStore, StepEntry
from .mapping import outline_of, step_spec


class UnreadableFeature(Exception):
    """A feature file behave cannot parse or prettyplay cannot take a step of, on one line."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{shown(Path(path).resolve())}: {problem}")

    @classmethod
    def parsing(cls, error: Any, path: Path | str | None = None) -> UnreadableFeature:
        """From behave's ``ParserError``: its lines (where, what, why) joined into one."""
        lines = [line.strip() for line in str(error.args[0]).splitlines() if line.strip()]
        return cls(path or error.filename, f"behave cannot read it ({'; '.join(lines)})")


def shown(path: Path) -> str:
    """A path relative to the working directory where it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Dead:
    """An obsolete entry and the file that holds it."""

    path: Path
    entry: StepEntry


def scenarios_in(path: Path) -> list[Any]:
    """The scenarios of a feature file as a run has them (an empty file has none)."""
    from behave.parser import ParserError, parse_file

    try:
        feature = parse_file(str(path))
    except ParserError as exc:
        raise UnreadableFeature.parsing(exc, path) from None
    return list(scenarios_of(feature)) if feature is not None else []


def scenario_keys(feature_file: Path, features_dir: Path) -> Iterator[CacheKey]:
    """The cache address of every step of every scenario of one feature file."""
    for scenario in scenarios_in(feature_file):
        for _, key in step_keys(scenario, features_dir):
            yield key


def step_keys(scenario: Any, features_dir: Path) -> Iterator[tuple[Any, CacheKey]]:
    """Each step of a scenario (its Background's first) with its cache address, as a run
    turns it."""
    name = scenario_test(feature_path(scenario.filename, str(features_dir)), scenario.name)
    occurrences = Occurrences()
    for step in [*scenario.background_steps, *scenario.steps]:
        try:
            spec = step_spec(step.step_type, step.name, step.text, step.table)
        except ValueError as exc:  # a step annotation prettyplay does not know
            raise UnreadableFeature(scenario.filename, str(exc)) from None
        occurrence = occurrences.count(spec.identity)
        outline = outline_of(scenario, step)
        yield step, CacheKey(name, spec.kind, spec.sentence, spec.data, occurrence, outline)


def scenarios_of(feature: Any) -> Iterator[Any]:
    """Every scenario of a feature as a run has them: an Outline as its example rows."""
    for scenario in feature.walk_scenarios():
        yield from getattr(scenario, "scenarios", None) or [scenario]


def obsolete(store: CacheStore, features_dir: Path) -> list[Dead]:
    """The entries of the library that no step of the features finds; the entries of tests of
    the Python API (their ``feature`` no feature file) are left alone. A CacheError when a file
    of the cache fails to load: what it holds might be what a step finds; an UnreadableFeature
    when a feature file cannot be read: its steps might find any entry."""
    for error in store.broken().values():
        raise error
    library = store.library()
    live: set[tuple[object, ...]] = set()
    for feature_file in sorted(features_dir.rglob("*.feature")):
        for key in scenario_keys(feature_file, features_dir):
            found = library.find(key)
            if found is not None:
                live.add(found.identity)
            if found is not None and found.red:  # the entry it turns back to when it is green
                shared = library.find(key, pins=False)
                if shared is not None:
                    live.add(shared.identity)
    return [
        Dead(store.path_of(entry), entry)
        for entry in library.entries
        if entry.identity not in live and (not entry.feature or entry.feature.endswith(".feature"))
    ]
