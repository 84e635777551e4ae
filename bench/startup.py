"""Start-up: ``behave --dry-run`` over the examples, and the import time of the package.

.venv/bin/python bench/startup.py [--runs 5]
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

IMPORTS = {
    "python alone": "pass",
    "prettyplay_behave": "import prettyplay_behave",
    "prettyplay_behave.behave (environment.py's import)": "import prettyplay_behave.behave",
    "the engine (prettyplay_behave.runtime)": "import prettyplay_behave.runtime",
}


def wall(command: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print("| what | median ms |")
    print("| --- | ---: |")
    for label, statement in IMPORTS.items():
        times = [wall([sys.executable, "-c", statement]) for _ in range(runs)]
        print(f"| `{label}` process | {statistics.median(times):.0f} |")
    dry = [wall([sys.executable, "-m", "behave", "--dry-run", "-f", "null"]) for _ in range(runs)]
    print(f"| `behave --dry-run` over the examples | {statistics.median(dry):.0f} |")


if __name__ == "__main__":
    main()
