"""What the guard against a vacuous pass costs a replay: the cases of ``replay_overhead.py`` (the
to-do app's quick steps, the shop examples) replayed strictly with the guard off (no entry's
record asks a replay to find anything again), on for the checks only (a check's record holds a
locator its code must find again, as a check that something is absent or a count would keep)
and on for every step (the most it can cost: each green replay counts once a locator the page
always shows), beside the hand-written behave steps of the same features. The sides run in
rounds whose order rotates, as the replay bench's sides do; it prints each side's median and
the paired ratios against behave and against the guard off, and exits 1 when a guarded side
misses 1.15 against behave.

    .venv/bin/python bench/green_guard.py [--case todo|shop|both] [--rounds 7]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import replay_overhead as bench

from prettyplay_behave.cache import CacheStore, Found, GreenRecord, today
from prettyplay_behave.safety.step_code import check_code

TARGET = 1.15
# a locator each case's pages always show: each guarded replay counts it once
ALWAYS_THERE = {
    "todo": Found(
        'get_by_placeholder("What needs to be done?")',
        "textbox",
        "What needs to be done?",
        tag="input",
        must_find=True,
    ),
    "shop": Found('locator("body")', tag="body", must_find=True),
}


def guarded(case: bench.Case, name: str, kinds: tuple[str, ...]) -> Path:
    """A copy of the case's prettyplay project whose entries of ``kinds`` have a record that
    asks a replay to find again what the case's pages always show."""
    copy = case.project.parent / name
    shutil.copytree(case.project, copy)
    store = CacheStore(copy / "features" / ".prettyplay", validate=check_code)
    record = GreenRecord(today(), "/", (ALWAYS_THERE[case.name],))
    entries = [e for e in store.library().entries if e.kind in kinds]
    store.keep([dataclasses.replace(e, green=record) for e in entries])
    return copy


def run_case(name: str, rounds: int, browser: dict[str, Any]) -> bool:
    with tempfile.TemporaryDirectory(prefix="guard-") as tmp, bench.served(name) as url:
        case = bench.build(name, Path(tmp), url, browser)
        off, behave, _ = bench.sides(case, bench.ROOT)
        guards = [
            dataclasses.replace(off, name="checks", cwd=guarded(case, "checks", ("check",))),
            dataclasses.replace(off, name="every", cwd=guarded(case, "every", ("action", "check"))),
        ]
        runs = [off, *guards, behave]
        print(f"\ncase {name}: {case.scenarios} scenarios, {case.steps} steps, at {url}")
        print(f"  load average at the start: {bench.load()}")
        for side in runs:
            bench.timed(side, case.steps)  # warm-up
        times = bench.measure(case, runs, rounds)
        for side in runs:
            print(f"  {bench.LABELS[side.name]:<36} median {bench.spread(times[side.name], ' s')}")
        met = True
        for side in [off, *guards]:
            ratios = [g / b for g, b in zip(times[side.name], times["behave"], strict=True)]
            ok = statistics.median(ratios) <= TARGET
            met = met and ok
            print(
                f"  {side.name:<10} / behave   median of paired rounds {bench.spread(ratios)}, "
                f"target <= {TARGET:.2f}: {'met' if ok else 'MISSED'}"
            )
        for side in guards:
            ratios = [g / o for g, o in zip(times[side.name], times["prettyplay"], strict=True)]
            print(f"  {side.name:<10} / guard off median of paired rounds {bench.spread(ratios)}")
        print(f"  load average at the end:   {bench.load()}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("todo", "shop", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    browser = bench.plain_replay.browser_options()
    bench.LABELS["checks"] = "prettyplay, the guard on its checks"
    bench.LABELS["every"] = "prettyplay, the guard on every step"
    names = ("todo", "shop") if args.case == "both" else (args.case,)
    met = [run_case(name, args.rounds, browser) for name in names]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
