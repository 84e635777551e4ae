"""The example features' cached code run as a plain Playwright script: the limit a replay is
measured against. Same demo shop, one browser, a fresh context per scenario, the same code.

    .venv/bin/python bench/plain_replay.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium  # noqa: E402
from prettyplay_behave.demo.server import DemoShop  # noqa: E402
from tests.support.caches import scenario_code  # noqa: E402

# The shop and login examples: what a plain script can run as it is (the real-pages example
# needs the engine's tabs, dialogs and files).
FEATURES = ("shop", "login.feature")


def scenarios() -> list[list[tuple[str, tuple[str, ...]]]]:
    """The code of every cached step (and the values it takes), scenario by scenario, in the
    order they run."""
    features = ROOT / "features"
    files = [p for name in FEATURES for p in sorted(features.glob(f"{name}*")) if p.is_file()]
    files += [p for name in FEATURES for p in sorted((features / name).rglob("*.feature"))]
    found = []
    for feature_file in files:
        found += scenario_code(feature_file, features, features / ".prettyplay")
    return found


def main() -> None:
    steps = scenarios()
    with DemoShop() as shop, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
        )
        for codes in steps:
            context = browser.new_context(base_url=shop.url)
            page = context.new_page()
            for code, values in codes:
                namespace: dict[str, object] = {"expect": expect, "re": re}
                exec(compile(code, "<step>", "exec"), namespace)
                namespace["step"](page, *values)  # type: ignore[operator]
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
