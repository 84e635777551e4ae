"""``prettyplay plan``: what a run would do with each step, read from the cache alone.

The features are selected as behave selects them (paths, ``--tags``, ``--name``, ``--include``,
``--exclude``, the config file), the steps matched against the project's step definitions (a
user's own definition runs no prettyplay code), and each prettyplay step's cache address is
looked up as a run looks it up:

- ``replay``: a cached entry serves it (no request, unless it goes red);
- ``replay red``: a kept red verdict serves it (no request; it fails unless it went green);
- ``replay`` too: no entry yet, but an earlier step of the run writes the one that serves it
  (the same sentence, or the same template where its code takes the values);
- ``reuse``: no entry, but another feature keeps code of its own for the step (no request
  when it goes green);
- ``generate``: no entry and nothing to reuse: LLM requests;
- ``missing``: no entry under strict: the run fails the step, with no request.

No browser starts, no hook runs and nothing is sent. Under strict (``--strict``, the
``strict`` setting or a ``@strict`` tag) a step that would need the LLM exits 1, so CI can fail
before it starts a browser. Names, sentences and notes are printed with their control characters
escaped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

from ..cache import CACHE_FOLDER, CacheKey, CacheStore, StepEntry
from ..config import PrettyConfig, TestConfig
from ..errors import escape_controls
from ..safety.step_code import check_code, step_code
from ..vocabulary import Word, counted
from .liveness import UnreadableFeature, scenarios_of, shown, step_keys
from .mapping import step_spec

# requests of one step that generates: its generation and the gate's review of it
REQUESTS_PER_GENERATION = 2


class Fate(Word):
    """What a run would do with one step."""

    REPLAY = "replay"
    REUSE = "reuse"
    GENERATE = "generate"
    REPLAY_RED = "replay red"
    MISSING = "missing"
    OWN = "own step"
    UNDEFINED = "undefined"

    @property
    def needs_llm(self) -> bool:
        return self in (Fate.GENERATE, Fate.MISSING)


@dataclass(frozen=True)
class PlannedStep:
    keyword: str
    sentence: str
    fate: Fate
    note: str = ""
    budget: int = 0  # the generation budget of its test (generate only)


@dataclass(frozen=True)
class PlannedScenario:
    name: str
    strict: bool
    steps: tuple[PlannedStep, ...]


@dataclass(frozen=True)
class PlannedFeature:
    filename: str
    cache_file: Path
    scenarios: tuple[PlannedScenario, ...]


class PlanError(Exception):
    """behave cannot select the features: its configuration or the paths are wrong."""


def plan(behave_args: Sequence[str], strict: bool, out: TextIO) -> int:
    """Print the plan of a run with ``behave_args``; 1 when a strict test would need the LLM."""
    features, config, behave_config = read_features(behave_args)
    planned = list(plan_features(features, config, behave_config, strict))
    steps = [
        step for feature in planned for scenario in feature.scenarios for step in scenario.steps
    ]
    for feature in planned:
        # names and notes come from feature and cache files: their control characters escaped
        out.write(escape_controls(f"{feature.filename}  (library: {shown(feature.cache_file)})\n"))
        for scenario in feature.scenarios:
            strict_note = "  (strict)" if scenario.strict else ""
            out.write(escape_controls(f"  {scenario.name}{strict_note}") + "\n")
            for step in scenario.steps:
                note = f"  ({step.note})" if step.note else ""
                line = f"    {step.fate:<11} {step.keyword} {step.sentence}{note}"
                out.write(escape_controls(line) + "\n")
    scenarios = sum(len(feature.scenarios) for feature in planned)
    counts = Counter(step.fate for step in steps)
    always = (Fate.REPLAY, Fate.REUSE, Fate.GENERATE, Fate.REPLAY_RED)
    tally = ", ".join(f"{counts[fate]} {fate}" for fate in Fate if counts[fate] or fate in always)
    out.write(
        f"plan: {counted(len(planned), 'feature')}, {counted(scenarios, 'scenario')}, "
        f"{counted(len(steps), 'step')}: {tally}\n"
    )
    out.write(estimate(steps) + "\n")
    missing = counts[Fate.MISSING]
    if missing:
        out.write(
            f"strict: {counted(missing, 'step')} {'has' if missing == 1 else 'have'} no cached "
            f"code: the run would fail {'it' if missing == 1 else 'them'}, with no request\n"
        )
    return 1 if missing else 0


def read_features(behave_args: Sequence[str]) -> tuple[list[Any], PrettyConfig, Any]:
    """The features behave would run with ``behave_args`` (in the working directory, with its
    config file), their step definitions loaded, and the run's settings."""
    from behave.configuration import Configuration
    from behave.exception import ConfigError as BehaveConfigError
    from behave.parser import ParserError
    from behave.runner import Runner
    from behave.runner_util import parse_features

    from .environment import run_config

    try:
        behave_config = Configuration(command_args=list(behave_args), load_config=True)
        runner = Runner(behave_config)
        with runner.path_manager:
            runner.setup_paths()
            runner.load_step_definitions()
            locations = [f for f in runner.feature_locations() if not behave_config.exclude(f)]
            features = parse_features(locations, language=behave_config.lang)
    except ParserError as exc:
        raise UnreadableFeature.parsing(exc) from None
    except (BehaveConfigError, OSError) as exc:
        raise PlanError(str(exc)) from exc
    # the settings as a run reads them: -D, the environment, the config file's userdata
    config = run_config(SimpleNamespace(config=behave_config))
    return [f for f in features if f is not None], config, behave_config


def plan_features(
    features: Sequence[Any], config: PrettyConfig, behave_config: Any, strict: bool
) -> Iterator[PlannedFeature]:
    """Each feature with the scenarios behave would run and what would become of each step."""
    base_dir = Path(behave_config.base_dir)  # the features folder, where steps/ is
    store = CacheStore(Path(config.cache_dir or base_dir / CACHE_FOLDER), validate=check_code)
    run = _Run(store)
    for feature in features:
        planned = []
        for scenario in scenarios_of(feature):
            if not scenario.should_run(behave_config):
                continue
            test = config.for_test(scenario.effective_tags, scenario.name)
            test_strict = strict or test.strict
            steps = tuple(
                run.fate(step, key, test, test_strict)
                for step, key in step_keys(scenario, base_dir)
            )
            planned.append(PlannedScenario(scenario.name.strip(), test_strict, steps))
        if planned:
            yield PlannedFeature(feature.filename, store.library_dir, tuple(planned))


class _Run:
    """What earlier steps of the planned run leave behind: the step families that go green."""

    def __init__(self, store: CacheStore) -> None:
        self.store = store
        self.green: dict[tuple[object, ...], list[tuple[str, bool]]] = {}  # sentence, takes values

    def fate(self, step: Any, key: CacheKey, test: TestConfig, strict: bool) -> PlannedStep:
        def planned(fate: Fate, note: str = "", budget: int = 0) -> PlannedStep:
            return PlannedStep(step.keyword, step.name, fate, note, budget)

        from behave.runner import the_step_registry

        from .steps import prettyplay_step

        match = the_step_registry.find_match(step)
        if match is None:
            return planned(Fate.UNDEFINED, "no step definition matches it")
        if match.func is not prettyplay_step:
            return planned(Fate.OWN, "a step definition of your own")
        spec = step_spec(step.step_type, step.name, step.text, step.table)
        found = self.store.lookup(key)
        family = spec.family
        if found is not None and found.red:
            assert found.verdict is not None
            return planned(Fate.REPLAY_RED, f"kept {found.verdict.label}")
        if found is not None:
            self._went_green(family, spec.sentence, bool(step_code(found.code).parameters))
            return planned(Fate.REPLAY)
        if strict:
            return planned(Fate.MISSING, "strict: no cached code, the run fails it")
        if self._written_earlier(key, spec.sentence, bool(spec.parameters.names)):
            self._went_green(family, spec.sentence, bool(spec.parameters.names))
            return planned(Fate.REPLAY, "the entry an earlier step of the run writes")
        source = self._reusable(key)
        if source:
            self._went_green(family, spec.sentence, bool(spec.parameters.names))
            return planned(Fate.REUSE, source)
        self._went_green(family, spec.sentence, bool(spec.parameters.names))
        return planned(Fate.GENERATE, budget=test.generation_attempts)

    def _went_green(self, family: tuple[object, ...], sentence: str, takes_values: bool) -> None:
        self.green.setdefault(family, []).append((sentence, takes_values))

    def _written_earlier(self, key: CacheKey, sentence: str, has_values: bool) -> bool:
        """Whether an earlier step of the run writes the entry that serves this one: the same
        sentence, or the same template where that code takes the values."""
        family = (key.kind, key.parameters.template, key.data)
        return any(
            earlier == sentence or (takes_values and has_values)
            for earlier, takes_values in self.green.get(family, [])
        )

    def _reusable(self, key: CacheKey) -> str:
        """Where code for the step comes from without a request, or "" (as the engine tries
        it: other features' own entries)."""
        family = (key.kind, key.parameters.template, key.data)
        for path, other in self.store.everywhere():
            if other.feature not in ("", key.feature) and _serves(other, family, key):
                return f"the entry of {other.feature} in {path}"
        return ""


def _serves(other: StepEntry, family: tuple[object, ...], key: CacheKey) -> bool:
    if other.red or other.scenario is not None:
        return False
    kind, template, data = family
    if (other.kind, other.data) != (kind, data) or not other.says(str(template)):
        return False
    return other.values is None or other.values == key.parameters.values


def estimate(steps: Sequence[PlannedStep]) -> str:
    """The LLM requests a run of ``steps`` would send, as far as the cache tells."""
    generating = [step for step in steps if step.fate is Fate.GENERATE]
    if not generating:
        return (
            "LLM requests: none; a replay that goes red adds a classification "
            "(and, outside strict, its heals)"
        )
    least = REQUESTS_PER_GENERATION * len(generating)
    most = sum(REQUESTS_PER_GENERATION * step.budget + 1 for step in generating)
    return (
        f"LLM requests: about {least} (a generation and its gate for the "
        f"{counted(len(generating), 'step')} to generate; up to {most} if generations go red); "
        "a replay that goes red adds a classification and its heals"
    )
