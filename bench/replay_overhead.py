"""Replay overhead: the example features replayed by prettyplay (``behave``) against the same
cached code run as a plain Playwright script (``bench/plain_replay.py``), whole-process wall
times, run alternately so both see the same machine load; medians of several runs.

    .venv/bin/python bench/replay_overhead.py [--runs 9]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    features = ["features/shop", "features/login.feature"]  # as bench/plain_replay.py runs
    prettyplay = [sys.executable, "-m", "behave", "-f", "null", "-D", "prettyplay.strict=true",
                  *features]  # fmt: skip
    plain = [sys.executable, "bench/plain_replay.py"]
    timed(prettyplay), timed(plain)  # warm the disk cache
    ours, theirs = [], []
    for _ in range(args.runs):
        ours.append(timed(prettyplay))
        theirs.append(timed(plain))
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
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
