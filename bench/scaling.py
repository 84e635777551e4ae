"""Scaling: 1, 10 and 100 replayed scenarios in one behave run; time should grow linearly and
the browser should launch once.

    .venv/bin/python bench/scaling.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite  # noqa: E402
from prettyplay_behave.safety.step_code import check_code  # noqa: E402

OPEN = 'def step(page) -> None:\n    page.goto("/")\n'
HEADING = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Shop")\n'
)


def project(root: Path, scenarios: int) -> Path:
    features = root / "features"
    (features / "steps").mkdir(parents=True)
    (features / "steps" / "prettyplay_steps.py").write_text(
        "import prettyplay_behave.behave.steps  # noqa: F401\n"
    )
    (features / "environment.py").write_text((ROOT / "features" / "environment.py").read_text())
    lines = ["Feature: Many", ""]
    store = CacheStore(features / ".prettyplay", validate=check_code)
    for n in range(1, scenarios + 1):
        lines += [f"  Scenario: Visit {n}", "    Given I open the shop",
                  "    Then the heading says Demo Shop", ""]  # fmt: skip
        test = f"many.feature::Visit {n}"
        store.write(CacheWrite(CacheKey(test, "step", "I open the shop"), OPEN, "generated"))
        heading = CacheKey(test, "expect", "the heading says Demo Shop")
        store.write(CacheWrite(heading, HEADING, "generated"))
    (features / "many.feature").write_text("\n".join(lines))
    return root


def run(root: Path) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "behave", "-f", "null", "--no-logcapture", "--logging-level=INFO",
         "-D", "prettyplay.strict=true"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    return elapsed, (completed.stdout + completed.stderr).count("launching chromium")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    print("| scenarios | wall time, median s | per scenario, s | browser launches |")
    print("| ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for scenarios in (1, 10, 100):
            root = project(Path(tmp) / str(scenarios), scenarios)
            results = [run(root) for _ in range(runs)]
            median = statistics.median(elapsed for elapsed, _ in results)
            launches = max(count for _, count in results)
            print(f"| {scenarios} | {median:.2f} | {median / scenarios:.3f} | {launches} |")


if __name__ == "__main__":
    main()
