"""What a clean page costs: the rebuild an attempt starts from after an earlier attempt of the
step changed the page (a fresh context, the scenario's earlier steps replayed), by the number of
earlier steps.

The scripted server answers the step's first generation with code that checks the wrong box,
the gate refuses it, and the second answer is the right one; the rebuild's time is read from the
``page_restored`` log line.

    .venv/bin/python bench/clean_page.py [--runs 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from prettyplay_behave import PrettyConfig, PrettyPlay  # noqa: E402
from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium  # noqa: E402
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite  # noqa: E402
from prettyplay_behave.safety.step_code import check_code  # noqa: E402
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402

PLANS = """<!doctype html><title>Plans</title><h1>Plans</h1>
<label><input type="checkbox" name="news"> Send me the newsletter</label>
<label><input type="radio" name="plan" value="monthly" checked> Monthly</label>
<label><input type="radio" name="plan" value="yearly"> Yearly</label>"""
OPEN = 'def step(page) -> None:\n    page.goto("/")\n'
LOOK = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Plans")\n'
)
WRONG = 'def step(page) -> None:\n    page.get_by_label("Send me the newsletter").check()\n'
RIGHT = 'def step(page) -> None:\n    page.get_by_label("Yearly").check()\n'
REFUSED = json_answer(
    {"findings": [{"dimension": "adequacy", "severity": "high", "message": "wrong control"}]}
)
RESTORED = re.compile(r"replayed \((\d+)\) in (\d+) ms")


class Restores(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.ms: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = RESTORED.search(record.getMessage())
        if found:
            self.ms.append(int(found.group(2)))


def once(earlier: int, browser, pages: PageServer, llm: ScriptedLLMServer, folder: Path) -> int:
    cache = Path(tempfile.mkdtemp(dir=folder))
    store = CacheStore(cache, validate=check_code)
    sentences = ["I open the plans"] + [f"the plans are shown {n}" for n in range(1, earlier)]
    for number, sentence in enumerate(sentences):
        kind = "step" if number == 0 else "expect"
        store.write(
            CacheWrite(CacheKey("t", kind, sentence), OPEN if number == 0 else LOOK, "generated")
        )
    llm.reset()
    llm.on("generate", code_answer(WRONG), code_answer(RIGHT))
    llm.on("gate", REFUSED, CLEAN_GATE)
    handler = Restores()
    logging.getLogger("prettyplay").addHandler(handler)
    config = PrettyConfig(base_url=pages.url, cache_dir=str(cache), llm_retries=0)
    try:
        with PrettyPlay("t", config=config, browser=browser) as t:
            for number, sentence in enumerate(sentences):
                (t.step if number == 0 else t.expect)(sentence)
            t.step("I choose the yearly plan")
    finally:
        logging.getLogger("prettyplay").removeHandler(handler)
    assert len(handler.ms) == 1, handler.ms
    return handler.ms[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("prettyplay").setLevel(logging.INFO)
    with (
        PageServer({"/": PLANS}) as pages,
        ScriptedLLMServer() as llm,
        sync_playwright() as playwright,
        tempfile.TemporaryDirectory() as folder,
    ):
        os.environ.update(llm.env)
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(headless=True), args=CHROMIUM_ARGS
        )
        print("| earlier steps | rebuild, median |")
        print("| ---: | ---: |")
        for earlier in (1, 5, 20):
            times = [once(earlier, browser, pages, llm, Path(folder)) for _ in range(args.runs)]
            print(f"| {earlier} | {statistics.median(times):,.0f} ms |")
        browser.close()


if __name__ == "__main__":
    main()
