"""What the guard against a vacuous pass costs a replay: the to-do case of ``replay_overhead.py``
replayed strictly with the guard off (no entry's record asks a replay to find anything again),
on for its checks only (a check's record holds a locator its code must find again, as a check
that something is absent or a count would keep: a third of the steps) and on for every step
(the most it can cost: each green replay counts a locator on the page once), beside the
hand-written behave steps of the same features. The sides run in rounds whose order rotates, as
the replay bench's sides do; it prints each side's median and the paired ratios against behave
and against the guard off, and exits 1 when a guarded side misses 1.15 against behave.

    .venv/bin/python bench/green_guard.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import replay_overhead as bench

from prettyplay_behave.cache import CacheStore, Found, GreenRecord, today
from prettyplay_behave.safety.step_code import check_code

TARGET = 1.15
# a locator the to-do page always shows: each guarded replay counts it once
ALWAYS_THERE = Found(
    'get_by_placeholder("What needs to be done?")',
    "textbox",
    "What needs to be done?",
    tag="input",
    must_find=True,
)


def guarded(project: Path, name: str, kinds: tuple[str, ...]) -> Path:
    """A copy of the prettyplay project whose entries of ``kinds`` have a record that asks a
    replay to find the to-do page's input again."""
    copy = project.parent / name
    shutil.copytree(project, copy)
    store = CacheStore(copy / "features" / ".prettyplay", validate=check_code)
    record = GreenRecord(today(), "/", (ALWAYS_THERE,))
    entries = [e for e in store.library().entries if e.kind in kinds]
    store.keep([dataclasses.replace(e, green=record) for e in entries])
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    browser = bench.plain_replay.browser_options()
    with tempfile.TemporaryDirectory(prefix="guard-") as tmp, bench.served("todo") as url:
        case = bench.build("todo", Path(tmp), url, browser)
        off, behave, _ = bench.sides(case, bench.ROOT)
        checks = guarded(case.project, "checks", ("check",))
        every = guarded(case.project, "every", ("action", "check"))
        bench.LABELS["checks"] = "prettyplay, the guard on its checks"
        bench.LABELS["every"] = "prettyplay, the guard on every step"
        guards = [
            dataclasses.replace(off, name="checks", cwd=checks),
            dataclasses.replace(off, name="every", cwd=every),
        ]
        runs = [off, *guards, behave]
        print(f"case todo: {case.scenarios} scenarios, {case.steps} steps, at {url}")
        print(f"  load average at the start: {bench.load()}")
        for side in runs:
            bench.timed(side, case.steps)  # warm-up
        times = bench.measure(case, runs, args.rounds)
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
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
