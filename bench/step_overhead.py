"""Where a replayed step's milliseconds go, under behave, for one scenario and for fifteen.

A feature of N copies of the cart example (open the shop, accept the cookie banner, add a
product, check the cart link: four cached steps each) is replayed strictly by behave, run in
this process with the plain formatter, so that every part can be timed where it runs:

- behave's step (``Step.run``: behave's own work, its hooks, the formatter and the step);
- prettyplay's step (``Engine.perform``), and inside it the step code on the page (``call_step``:
  the page's own time), the settle waits (how many: a green replay has none), the code checks
  and compile, the cache look-up, the tabs follow-up and the event hooks;
- the navigation bound's judgement of each document request (Python's part of it);
- page snapshots (none should be taken on a green replay);
- prettyplay's behave hooks (``before_step``, ``after_step``; per scenario ``before_scenario``,
  which opens the test's context and page, and ``after_scenario``) and the plain formatter.

    .venv/bin/python bench/step_overhead.py [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave import cache  # noqa: E402
from prettyplay_behave.behave import environment as hooks  # noqa: E402
from prettyplay_behave.browser import guard, settle, snapshot, tabs  # noqa: E402
from prettyplay_behave.engine import engine, execute, page_state  # noqa: E402
from prettyplay_behave.engine import hooks as hook_events  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)


def timing(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            TIMES[name].append((time.perf_counter() - started) * 1000)

    return timed


def instrument() -> None:
    import behave.formatter.plain
    import behave.model

    behave.model.Step.run = timing("behave step", behave.model.Step.run)
    engine.Engine.perform = timing("prettyplay step", engine.Engine.perform)  # type: ignore[method-assign]
    execute.call_step = timing("page (the step code)", execute.call_step)
    execute.compile_step = timing("code checks and compile", execute.compile_step)
    settle.Settler.settle = timing("settle", settle.Settler.settle)  # type: ignore[method-assign]
    cache.CacheStore.lookup = timing("cache look-up", cache.CacheStore.lookup)  # type: ignore[method-assign]
    tabs.Tabs.follow = timing("tabs follow-up", tabs.Tabs.follow)  # type: ignore[method-assign]
    hook_events.Events._emit = timing("event hooks", hook_events.Events._emit)  # type: ignore[method-assign]
    guard.DocumentWatch._paused = timing(  # type: ignore[method-assign]
        "document judgement", guard.DocumentWatch._paused
    )
    page_state.capture = timing("snapshot", snapshot.capture)
    for name in ("before_step", "after_step", "before_scenario", "after_scenario"):
        # use_prettyplay takes before_scenario by its module name, the others from _OURS
        hooks._OURS[name] = timing(name, getattr(hooks, name))
        setattr(hooks, name, hooks._OURS[name])
    plain = behave.formatter.plain.PlainFormatter
    for method in ("feature", "scenario", "step", "match", "result", "eof"):
        setattr(plain, method, timing("formatter", getattr(plain, method)))


def project(root: Path, scenarios: int) -> Path:
    """N copies of the cart scenario, its steps served by the example cache's cart library."""
    example = (ROOT / "features/shop/cart.feature").read_text()
    head = example[: example.index("  Scenario: An empty")]
    steps = [
        line
        for line in head.splitlines()
        if line.split()[:1] in (["Given"], ["And"], ["When"], ["Then"])
    ]
    features = root / "features"
    (features / "steps").mkdir(parents=True)
    (features / "steps" / "prettyplay_steps.py").write_text(
        "import prettyplay_behave.behave.steps  # noqa: F401\n"
    )
    (features / "environment.py").write_text((ROOT / "features/environment.py").read_text())
    # the examples' library: one library serves every feature, so the copies' steps replay it
    shutil.copytree(ROOT / "features/.prettyplay/steps", features / ".prettyplay" / "steps")
    lines = ["Feature: Cart", ""]
    for n in range(1, scenarios + 1):
        lines += [f"  Scenario: Cart {n}", *steps, ""]
    (features / "cart.feature").write_text("\n".join(lines))
    return root


def replay(root: Path) -> None:
    from behave.__main__ import main as behave_main

    os.chdir(root)
    with contextlib.redirect_stdout(io.StringIO()):
        code = behave_main(["-f", "plain", "--no-capture", "-D", "prettyplay.strict=true"])
    if code != 0:
        raise SystemExit(f"the replay of {root} failed (exit {code})")


def per_step(name: str, steps: int) -> str:
    times = TIMES.get(name, [])
    return f"{sum(times) / steps:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    instrument()
    columns: dict[int, dict[str, str]] = {}
    counts: dict[int, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for scenarios in (1, 15):
            root = project(Path(tmp) / str(scenarios), scenarios)
            replay(root)  # warm-up: bytecode, browser binary and page caches
            TIMES.clear()
            for _ in range(runs):
                replay(root)
            steps = len(TIMES["prettyplay step"])
            tests = len(TIMES["before_scenario"])
            column = {name: per_step(name, steps) for name in ROWS}
            behave_own = (
                sum(TIMES["behave step"]) - sum(TIMES["prettyplay step"])
                - sum(TIMES["before_step"]) - sum(TIMES["after_step"])
                - sum(t for t in TIMES["formatter"])
            )  # fmt: skip
            column["behave's own (step − prettyplay − hooks − formatter)"] = (
                f"{behave_own / steps:.2f}"
            )
            engine = sum(TIMES["prettyplay step"]) - sum(TIMES["page (the step code)"])
            column["prettyplay's own (prettyplay step − page)"] = f"{engine / steps:.2f}"
            for name in ("before_scenario", "after_scenario"):
                column[f"{name}, per scenario"] = f"{sum(TIMES[name]) / tests:.1f}"
            settles = TIMES["settle"]
            column["settles, per step"] = f"{len(settles) / steps:.2f}"
            column["settle, median"] = f"{statistics.median(settles):.2f}" if settles else "none"
            column["documents judged, per step"] = f"{len(TIMES['document judgement']) / steps:.2f}"
            column["snapshots taken"] = str(len(TIMES["snapshot"]))
            columns[scenarios] = column
            counts[scenarios] = f"{steps} steps"
    print(f"| per step, ms (mean of {runs} runs) | 1 scenario ({counts[1]}) | "
          f"15 scenarios ({counts[15]}) |")  # fmt: skip
    print("| --- | ---: | ---: |")
    for name in columns[1]:
        print(f"| {name} | {columns[1][name]} | {columns[15][name]} |")


ROWS = (
    "behave step",
    "prettyplay step",
    "page (the step code)",
    "settle",
    "code checks and compile",
    "cache look-up",
    "tabs follow-up",
    "event hooks",
    "document judgement",
    "before_step",
    "after_step",
    "formatter",
)


if __name__ == "__main__":
    main()
