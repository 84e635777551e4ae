"""Replay overhead: the example features replayed by prettyplay (``behave``) against the same
cached code run as a plain Playwright script (``bench/plain_replay.py``), whole-process wall
times, run alternately so both see the same machine load; medians of several runs.

    .venv/bin/python bench/replay_overhead.py [--runs 9] [--quiet-ms 0]

``--quiet-ms N`` adds a third side, run in the same alternation: the same replay with the settle's
quiet period set to N ms, which shows what the quiet period of manual §6 costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.15


def timed(command: list[str]) -> float:
    # Python's default: bytecode caches are written (by the warm-up run) and read, as on a
    # user's machine; a PYTHONDONTWRITEBYTECODE environment would recompile every module each run.
    skipped = ("PRETTYPLAY_", "OPENAI_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)}
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - started


FEATURES = ["features/shop", "features/login.feature"]  # as bench/plain_replay.py runs
BEHAVE_ARGS = ["-f", "null", "-D", "prettyplay.strict=true", *FEATURES]


def with_quiet_period(ms: int) -> list[str]:
    """The replay command, its settle's quiet period set to ``ms`` before behave starts."""
    code = (
        "import sys; import prettyplay_behave.browser.settle as settle; "
        f"settle.QUIET_MS = {ms}; import behave.__main__ as behave; "
        f"sys.argv = ['behave', *{BEHAVE_ARGS!r}]; sys.exit(behave.main())"
    )
    return [sys.executable, "-c", code]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quiet-ms", type=int, help="also replay with this quiet period")
    args = parser.parse_args()
    prettyplay = [sys.executable, "-m", "behave", *BEHAVE_ARGS]
    plain = [sys.executable, "bench/plain_replay.py"]
    other = None if args.quiet_ms is None else with_quiet_period(args.quiet_ms)
    timed(prettyplay), timed(plain)  # warm the disk cache
    ours, theirs, others = [], [], []
    for _ in range(args.runs):
        ours.append(timed(prettyplay))
        theirs.append(timed(plain))
        if other is not None:
            others.append(timed(other))
    ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"prettyplay (behave, strict replay): median {statistics.median(ours):.2f} s "
        f"{[round(o, 2) for o in ours]}"
    )
    print(
        f"plain Playwright script:            median {statistics.median(theirs):.2f} s "
        f"{[round(t, 2) for t in theirs]}"
    )
    print(
        f"ratio (median of paired runs): {ratio:.3f} (target <= {TARGET}); "
        f"paired runs from {min(ratios):.2f} to {max(ratios):.2f}"
    )
    if other is not None:
        other_ratios = [o / t for o, t in zip(others, theirs, strict=True)]
        print(
            f"with a quiet period of {args.quiet_ms} ms: median {statistics.median(others):.2f} s, "
            f"ratio {statistics.median(other_ratios):.3f}; paired runs from "
            f"{min(other_ratios):.2f} to {max(other_ratios):.2f}"
        )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
