"""What the guard against a vacuous pass costs a replay: the to-do case of ``replay_overhead.py``
replayed strictly with the guard off (no entry's record asks a replay to find anything again,
as in most libraries) and on for every step (each entry's record holds a locator its code must
find again, so each green replay counts it on the page once), beside the hand-written behave
steps of the same features. The three run in rounds whose order rotates, as the replay bench's
sides do; it prints each side's median and the paired ratios guard-on/behave and
guard-on/guard-off, and exits 1 when guard-on/behave misses 1.15.

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


def guarded(project: Path) -> Path:
    """A copy of the prettyplay project whose every entry's record asks a replay to find the
    to-do page's input again."""
    copy = project.parent / "guarded"
    shutil.copytree(project, copy)
    store = CacheStore(copy / "features" / ".prettyplay", validate=check_code)
    record = GreenRecord(today(), "/", (ALWAYS_THERE,))
    store.keep([dataclasses.replace(e, green=record) for e in store.library().entries])
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    browser = bench.plain_replay.browser_options()
    with tempfile.TemporaryDirectory(prefix="guard-") as tmp, bench.served("todo") as url:
        case = bench.build("todo", Path(tmp), url, browser)
        off, behave, _ = bench.sides(case, bench.ROOT)
        on = dataclasses.replace(off, name="guarded", cwd=guarded(case.project))
        bench.LABELS["guarded"] = "prettyplay, the guard on every step"
        runs = [off, on, behave]
        print(f"case todo: {case.scenarios} scenarios, {case.steps} steps, at {url}")
        print(f"  load average at the start: {bench.load()}")
        for side in runs:
            bench.timed(side, case.steps)  # warm-up
        times = bench.measure(case, runs, args.rounds)
        for side in runs:
            print(f"  {bench.LABELS[side.name]:<36} median {bench.spread(times[side.name], ' s')}")
        against_behave = [g / b for g, b in zip(times["guarded"], times["behave"], strict=True)]
        against_off = [g / o for g, o in zip(times["guarded"], times["prettyplay"], strict=True)]
        met = statistics.median(against_behave) <= TARGET
        print(
            f"  guard on / behave    median of paired rounds {bench.spread(against_behave)}, "
            f"target <= {TARGET:.2f}: {'met' if met else 'MISSED'}"
        )
        print(f"  guard on / guard off median of paired rounds {bench.spread(against_off)}")
        print(f"  load average at the end:   {bench.load()}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
