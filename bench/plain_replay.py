"""Cached step code run as a plain Playwright script: the limit a replay is measured against.
One browser, a fresh context per scenario, each scenario's cached code called in order, nothing
around it.

Run as it is, it replays the shop and login examples against a demo shop of its own::

    .venv/bin/python bench/plain_replay.py

``bench/replay_overhead.py`` hands it a plan instead (a JSON file written by :func:`write_plan`:
the browser to launch and every scenario's code with the values it takes) and the base URL of a
server it runs itself::

    .venv/bin/python bench/plain_replay.py --plan plan.json --base-url http://127.0.0.1:8000

From a plan it imports only Playwright, as a hand-written script would. It prints how many
scenarios and steps passed, and stops at the first failing step.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for prettyplay and the tests' helpers, imported where needed
# The shop and login examples: what a plain script can run as it is (the real-pages example
# needs the engine's tabs, dialogs and files).
SHOP_FEATURES = ("shop", "login.feature")

Scenario = list[tuple[str, list[str]]]  # each step's code and the values it is called with


def browser_options() -> dict[str, Any]:
    """The browser prettyplay launches for a headless run: Playwright's own Chromium where it is
    installed, else the system's headless shell; its arguments, the sandbox as it decides."""
    from playwright.sync_api import sync_playwright

    from prettyplay_behave.browser.session import (
        CHROMIUM_ARGS,
        find_system_chromium,
        sandbox_problem,
    )

    with sync_playwright() as playwright:
        bundled = playwright.chromium.executable_path
    executable = bundled if Path(bundled).exists() else find_system_chromium(True)
    if not executable:
        raise SystemExit("no Chromium here: neither Playwright's nor a system one")
    return {
        "executable_path": executable,
        "args": list(CHROMIUM_ARGS),
        "chromium_sandbox": sandbox_problem() is None,
    }


def scenarios_of(
    feature_files: Iterable[Path], features_dir: Path, cache_dir: Path
) -> list[Scenario]:
    """Every scenario's cached code, in the order behave runs them, as a replay finds it."""
    from tests.support.caches import scenario_code

    found: list[Scenario] = []
    for feature_file in feature_files:
        for codes in scenario_code(feature_file, features_dir, cache_dir):
            found.append([(code, list(values)) for code, values in codes])
    return found


def shop_feature_files(features_dir: Path) -> list[Path]:
    files = [p for name in SHOP_FEATURES for p in sorted(features_dir.glob(f"{name}*"))]
    files = [p for p in files if p.is_file()]
    return files + [
        p for name in SHOP_FEATURES for p in sorted((features_dir / name).rglob("*.feature"))
    ]


def write_plan(path: Path, scenarios: list[Scenario]) -> None:
    path.write_text(json.dumps({"browser": browser_options(), "scenarios": scenarios}, indent=1))


@cache
def compiled(code: str) -> Callable[..., None]:
    """The ``step`` function of a step's code, defined once however often the step runs."""
    from playwright.sync_api import expect

    namespace: dict[str, Any] = {"expect": expect, "re": re}
    exec(compile(code, "<step>", "exec"), namespace)
    step: Callable[..., None] = namespace["step"]
    return step


def replay(plan: dict[str, Any], base_url: str) -> int:
    """Run every scenario of ``plan`` against ``base_url``; the number of steps run."""
    from playwright.sync_api import sync_playwright

    steps = 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**plan["browser"])
        for scenario in plan["scenarios"]:
            context = browser.new_context(base_url=base_url)
            page = context.new_page()
            for code, values in scenario:
                compiled(code)(page, *values)
                steps += 1
            context.close()
        browser.close()
    return steps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, help="a plan written by write_plan")
    parser.add_argument("--base-url", help="where the plan's app is served (with --plan)")
    args = parser.parse_args(argv)
    if (args.plan is None) != (args.base_url is None):
        parser.error("--plan and --base-url go together")
    if args.plan is not None:
        plan = json.loads(args.plan.read_text())
        steps = replay(plan, args.base_url)
    else:
        from prettyplay_behave.demo.server import DemoShop

        features = ROOT / "features"
        scenarios = scenarios_of(shop_feature_files(features), features, features / ".prettyplay")
        plan = {"browser": browser_options(), "scenarios": scenarios}
        with DemoShop() as shop:
            steps = replay(plan, shop.url)
    print(f"{len(plan['scenarios'])} scenarios passed, {steps} steps passed")


if __name__ == "__main__":
    main()
