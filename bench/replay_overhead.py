"""Replay overhead: a strict replay by prettyplay against what a behave user writes instead.

Three sides run the same features with the same cached step code, as whole processes:

- prettyplay: ``behave -f null -D prettyplay.strict=true`` in the project, no LLM configured;
- hand-written behave steps: the features copied beside ``@given/@when/@then`` definitions
  generated from the cache (behave's ``parse`` patterns, a quoted value or an Outline value an
  argument where the code takes it) and an ``environment.py`` that launches one browser per run
  and opens a fresh context and page per scenario;
- a plain Playwright script (``bench/plain_replay.py``): one browser, a context per scenario,
  each step's code called in order.

All three launch the browser prettyplay launches for a headless run (its binary and
arguments). Two cases, each in a project built in a temporary folder:

- ``todo``: quick steps, one feature of 3 scenarios of 3 steps copied 5 times (45 steps) against
  the to-do app of the tests (``tests/support/todo_app.py``) on a local server; its cache is
  written through ``CacheStore`` with the code ``todo_app.step_code`` gives each sentence;
- ``shop``: the shop and login examples against the demo shop, with their committed cache.

A round runs each side once, in an order that rotates round by round, so all three see the same
load; one warm-up run of each side comes first (the prettyplay one with a scripted LLM server
configured, which must see no request). Per case it prints each side's median and range, the
medians of the paired per-round ratios prettyplay/behave and prettyplay/plain with their range,
and the load average at the start and the end. Targets: at most 1.05 against hand-written
behave, 1.10 against plain; it exits 1 when a case misses one.

``--package DIR`` runs the prettyplay side with another checkout's ``prettyplay_behave`` first
on ``PYTHONPATH`` (and its ``templates/`` as ``templates_dir``), so the same bench measures an
earlier version; the other sides always use this checkout:

    .venv/bin/python bench/replay_overhead.py [--case todo|shop|both] [--rounds 9]
    git worktree add /tmp/before <commit>
    .venv/bin/python bench/replay_overhead.py --package /tmp/before
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import plain_replay  # noqa: E402  (beside this file)

from prettyplay_behave.behave.liveness import scenario_keys, scenarios_of, step_keys  # noqa: E402
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, StepEntry  # noqa: E402
from prettyplay_behave.demo.server import DemoShop  # noqa: E402
from prettyplay_behave.safety.step_code import check_code  # noqa: E402
from tests.support.llm_server import ScriptedLLMServer  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.todo_app import step_code, todo_page  # noqa: E402

TARGETS = {"behave": 1.05, "plain": 1.10}
SIDES = ("prettyplay", "behave", "plain")
LABELS = {
    "prettyplay": "prettyplay (strict replay)",
    "behave": "hand-written behave steps",
    "plain": "plain Playwright script",
}
TODO_COPIES = 5
TODO_FEATURE = """\
Feature: Todos {number}
  Background:
    Given I open the todo app

  Scenario: Add a todo
    When I add a todo "feed the cat"
    Then the list shows "feed the cat"

  Scenario: Count the todos left
    When I add a todo "buy milk"
    Then the counter shows "1 item left"

  Scenario: Complete a todo
    When I add a todo "water the plants"
    And I complete the todo "water the plants"
"""
PRETTYPLAY_ENVIRONMENT = (
    "from prettyplay_behave.behave import use_prettyplay\n\nuse_prettyplay(globals())\n"
)
PRETTYPLAY_STEPS = "import prettyplay_behave.behave.steps  # noqa: F401\n"
# What a behave user writes around their steps: one browser per run, a context per scenario.
HAND_WRITTEN_ENVIRONMENT = '''\
"""One browser per run, a fresh context and page per scenario."""

from playwright.sync_api import sync_playwright

BROWSER = {browser!r}


def before_all(context):
    context.playwright = sync_playwright().start()
    context.browser = context.playwright.chromium.launch(**BROWSER)


def before_scenario(context, scenario):
    base_url = context.config.userdata["base_url"]
    context.browser_context = context.browser.new_context(base_url=base_url)
    context.page = context.browser_context.new_page()


def after_scenario(context, scenario):
    context.browser_context.close()


def after_all(context):
    context.browser.close()
    context.playwright.stop()
'''
HAND_WRITTEN_HEADER = '''\
"""The steps, written by hand (here: from the prettyplay cache, by bench/replay_overhead.py)."""

import re

from behave import given, then, when
from playwright.sync_api import expect


'''
# behave's summary line of the steps; the plain script prints its own in the same words
STEPS_PASSED = re.compile(r"(\d+) steps? passed")


@dataclass(frozen=True)
class Case:
    """One case's three sides, ready to run: the folders they run in and what they take."""

    name: str
    project: Path  # the prettyplay project: behave's config, features/ and their cache
    hand_written: Path  # the features with hand-written steps
    plan: Path  # what the plain script runs
    base_url: str
    scenarios: int
    steps: int


def clean_env() -> dict[str, str]:
    # Python's default: bytecode caches are written (by the warm-up run) and read, as on a
    # user's machine; a PYTHONDONTWRITEBYTECODE environment would recompile every module each run.
    skipped = ("PRETTYPLAY_", "OPENAI_", "PYTHONDONTWRITEBYTECODE")
    return {k: v for k, v in os.environ.items() if not k.startswith(skipped)}


# -- the prettyplay projects ----------------------------------------------------------------


def todo_project(project: Path) -> None:
    """The to-do features, prettyplay's scaffold and a cache of the code for each sentence."""
    features = project / "features"
    (features / "steps").mkdir(parents=True)
    (features / "environment.py").write_text(PRETTYPLAY_ENVIRONMENT)
    (features / "steps" / "prettyplay_steps.py").write_text(PRETTYPLAY_STEPS)
    for number in range(1, TODO_COPIES + 1):
        (features / f"todos_{number}.feature").write_text(TODO_FEATURE.format(number=number))
    store = CacheStore(features / ".prettyplay", validate=check_code)
    for feature_file in sorted(features.glob("*.feature")):
        for key in scenario_keys(feature_file, features):
            store.write(CacheWrite(key, step_code(key.parameters.template), origin="generated"))


def shop_project(project: Path) -> None:
    """The shop and login examples as the checkout has them: config, hooks, steps, cache. A
    copy, not the checkout: ``python -m behave`` puts its folder first on ``sys.path``, where
    this checkout's ``prettyplay_behave`` would shadow the one ``--package`` names."""
    source, features = ROOT / "features", project / "features"
    project.mkdir(parents=True)
    shutil.copy(ROOT / "setup.cfg", project / "setup.cfg")  # behave's config of the examples
    shutil.copytree(source / "steps", features / "steps", ignore=shutil.ignore_patterns("__py*"))
    shutil.copy(source / "environment.py", features / "environment.py")
    for feature_file in plain_replay.shop_feature_files(source):
        copied = features / feature_file.relative_to(source)
        copied.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(feature_file, copied)
    # the project's one step library; the entries of the other examples' steps are never read
    library = Path(".prettyplay") / "steps"
    shutil.copytree(source / library, features / library, ignore=shutil.ignore_patterns("*.lock"))


# -- the hand-written steps -----------------------------------------------------------------


def cached_steps(features: Path) -> Iterator[tuple[Any, CacheKey, StepEntry]]:
    """Every step of every scenario with its cache address and the entry a replay finds."""
    from behave.parser import parse_file

    store = CacheStore(features / ".prettyplay", validate=check_code)
    for feature_file in sorted(features.rglob("*.feature")):
        for scenario in scenarios_of(parse_file(str(feature_file))):
            for step, key in step_keys(scenario, features):
                entry = store.lookup(key)
                if entry is None:
                    raise SystemExit(f"{feature_file}: no cache entry for {key.sentence!r}")
                yield step, key, entry


def braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def pattern(step: Any, key: CacheKey, entry: StepEntry) -> str:
    """The ``parse`` pattern of a step: a field for each value the code takes, the sentence as
    written where it spells its values out; any ``[tries=2]`` after it as the step has it."""
    suffix = braces(step.name[len(key.sentence) :])
    if not entry.parameters:
        return braces(key.sentence) + suffix
    pieces = [braces(p) for p in key.parameters.template.split("{}")]
    fields = [f"{{{name}}}" for name in entry.parameters]
    return "".join(p + f for p, f in zip(pieces, [*fields, ""], strict=True)) + suffix


def definitions(features: Path) -> dict[tuple[str, str], StepEntry]:
    """One step definition per step type and pattern, refusing two codes for one sentence (a
    hand-written suite has one function per step)."""
    found: dict[tuple[str, str], StepEntry] = {}
    for step, key, entry in cached_steps(features):
        place = (step.step_type, pattern(step, key, entry))
        if place in found and found[place].code != entry.code:
            raise SystemExit(f"two codes for one step definition: {place}")
        found[place] = entry
    return found


def steps_module(found: dict[tuple[str, str], StepEntry]) -> str:
    """The steps file: each code once as a function, a decorated step calling it on the page."""
    names: dict[str, str] = {}
    functions, steps = [], []
    for (step_type, text), entry in found.items():
        if entry.code not in names:
            names[entry.code] = f"code_{len(names) + 1}"
            functions.append(entry.code.replace("def step(", f"def {names[entry.code]}(", 1))
        arguments = "".join(f", {name}" for name in entry.parameters)
        steps.append(
            f"@{step_type}({text!r})\ndef step_impl(context{arguments}):\n"
            f"    {names[entry.code]}(context.page{arguments})\n"
        )
    return HAND_WRITTEN_HEADER + "\n\n".join(functions + steps)


def hand_written(project: Path, target: Path, browser: dict[str, Any]) -> None:
    """The project's features with behave steps written from its cache, in ``target``."""
    source, features = project / "features", target / "features"
    for feature_file in source.rglob("*.feature"):
        copied = features / feature_file.relative_to(source)
        copied.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(feature_file, copied)
    (features / "steps").mkdir()
    (features / "steps" / "steps.py").write_text(steps_module(definitions(source)))
    (features / "environment.py").write_text(HAND_WRITTEN_ENVIRONMENT.format(browser=browser))


def build(name: str, work: Path, base_url: str, browser: dict[str, Any]) -> Case:
    project, target, plan = work / "prettyplay", work / "behave", work / "plain.json"
    (todo_project if name == "todo" else shop_project)(project)
    features = project / "features"
    hand_written(project, target, browser)
    feature_files = sorted(features.rglob("*.feature"))
    scenarios = plain_replay.scenarios_of(feature_files, features, features / ".prettyplay")
    plain_replay.write_plan(plan, scenarios)
    steps = sum(len(s) for s in scenarios)
    return Case(name, project, target, plan, base_url, len(scenarios), steps)


# -- the runs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]


def sides(case: Case, package: Path) -> list[Side]:
    prettyplay_env = {**clean_env(), "PYTHONPATH": str(package)}
    prettyplay = [
        *("-m", "behave", "-f", "null", "-D", "prettyplay.strict=true"),
        *("-D", f"prettyplay.base_url={case.base_url}"),
        *("-D", f"prettyplay.templates_dir={package / 'templates'}"),
        "features",
    ]
    behave = ["-m", "behave", "-f", "null", "-D", f"base_url={case.base_url}", "features"]
    plain = [str(ROOT / "bench" / "plain_replay.py"), "--plan", str(case.plan)]
    return [
        Side("prettyplay", [sys.executable, *prettyplay], case.project, prettyplay_env),
        Side("behave", [sys.executable, *behave], case.hand_written, clean_env()),
        Side("plain", [sys.executable, *plain, "--base-url", case.base_url], ROOT, clean_env()),
    ]


def timed(side: Side, steps: int, extra_env: dict[str, str] | None = None) -> float:
    """The wall time of one run of ``side``; it must pass ``steps`` steps, or the bench stops."""
    started = time.perf_counter()
    completed = subprocess.run(
        side.command,
        cwd=side.cwd,
        env={**side.env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )
    elapsed = time.perf_counter() - started
    output = completed.stdout + completed.stderr
    passed = STEPS_PASSED.search(output)
    if completed.returncode != 0 or passed is None or int(passed[1]) != steps:
        raise SystemExit(
            f"{LABELS[side.name]} failed (exit {completed.returncode}, "
            f"{passed[0] if passed else 'no summary'}, {steps} steps expected):\n{output[-4000:]}"
        )
    return elapsed


def warm_up(case: Case, runs: list[Side]) -> None:
    """One run of each side; prettyplay's with an LLM it may not call (a strict replay asks
    nothing: the scripted server answers no request, and records any it gets)."""
    for side in runs:
        if side.name != "prettyplay":
            timed(side, case.steps)
            continue
        with ScriptedLLMServer() as llm:
            timed(side, case.steps, llm.env)
        if llm.requests:
            raise SystemExit(f"the strict replay made {len(llm.requests)} LLM requests")
    print("warm-up: every side passed; the strict replay made 0 LLM requests")


def measure(case: Case, runs: list[Side], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {side.name: [] for side in runs}
    for number in range(rounds):
        # each side takes each place in the round in turn: none always runs first
        turn = number % len(runs)
        for side in runs[turn:] + runs[:turn]:
            times[side.name].append(timed(side, case.steps))
    return times


def spread(values: list[float], unit: str = "") -> str:
    return f"{statistics.median(values):.3f}{unit} ({min(values):.3f}–{max(values):.3f}{unit})"


def report(times: dict[str, list[float]]) -> bool:
    """Print the sides and their ratios; whether both targets are met."""
    for name in SIDES:
        print(f"  {LABELS[name]:<28} median {spread(times[name], ' s')}")
    met = True
    for other, target in TARGETS.items():
        ratios = [p / o for p, o in zip(times["prettyplay"], times[other], strict=True)]
        ok = statistics.median(ratios) <= target
        met = met and ok
        print(
            f"  prettyplay/{other:<7} median of paired rounds {spread(ratios)}, "
            f"target <= {target:.2f}: {'met' if ok else 'MISSED'}"
        )
    return met


def load() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


@contextlib.contextmanager
def served(name: str) -> Iterator[str]:
    """The case's app on 127.0.0.1, its base URL: one server for all three sides."""
    if name == "todo":
        with PageServer({"/": todo_page()}) as app:
            yield app.url
    else:
        with DemoShop() as shop:
            yield shop.url


def run_case(name: str, package: Path, rounds: int, browser: dict[str, Any]) -> bool:
    with tempfile.TemporaryDirectory(prefix=f"replay-{name}-") as tmp, served(name) as url:
        case = build(name, Path(tmp), url, browser)
        print(f"\ncase {name}: {case.scenarios} scenarios, {case.steps} steps, at {url}")
        print(f"  load average at the start: {load()}")
        runs = sides(case, package)
        warm_up(case, runs)
        times = measure(case, runs, rounds)
        met = report(times)
        print(f"  load average at the end:   {load()}")
    return met


def check_package(package: Path) -> None:
    """That the prettyplay side imports the package measured, not this checkout's install."""
    code = "import prettyplay_behave; print(prettyplay_behave.__file__)"
    env = {**clean_env(), "PYTHONPATH": str(package)}
    found = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tempfile.gettempdir(),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).is_relative_to(package):
        raise SystemExit(f"the prettyplay side would import {found}, not {package}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("todo", "shop", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--package", type=Path, default=ROOT, help="the checkout to measure")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    package = args.package.resolve()
    if not (package / "prettyplay_behave").is_dir():
        parser.error(f"{package}: no prettyplay_behave there")
    check_package(package)
    browser = plain_replay.browser_options()
    print(f"prettyplay from {package}")
    print(f"browser on every side: {browser['executable_path']} {' '.join(browser['args'])}")
    print(f"{args.rounds} rounds, sides in turn; Python {sys.version.split()[0]}")
    cases = ("todo", "shop") if args.case == "both" else (args.case,)
    met = [run_case(name, package, args.rounds, browser) for name in cases]
    print("\nall targets met" if all(met) else "\na target was missed")
    return 0 if all(met) else 1


if __name__ == "__main__":
    raise SystemExit(main())
