"""A huge page: what one generated step on a list of 5,000 to 50,000 links costs in time and
memory.

Each run is a fresh Python process of its own (so its peak RSS is this page's alone): it serves
the page of ``tests/faults/test_hooks_and_pages.py`` (a heading, N links, a button; the test
uses 20,000), opens it in Chromium and generates one ``expect`` step through the Python API
against the scripted LLM server (one ``generate``, one ``gate``). It reports the step's wall
time (aria snapshot, compaction, the two requests, the step code), the prompt tokens of the
``generate`` request, the peak RSS of the Python process, and the peak RSS of its largest
descendant (one of Chromium's processes or Playwright's driver, read after they have exited).

    .venv/bin/python bench/huge_page.py --runs 3
    .venv/bin/python bench/huge_page.py --items 20000 --runs 1

Exits 1 when a run breaks the target: under 8,000 request tokens, under 60 s for the step and
under 2,048 MB of peak RSS in the Python process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (5_000, 20_000, 50_000)
TARGET_TOKENS = 8_000
TARGET_SECONDS = 60.0
TARGET_RSS_MB = 2_048
SHOWN = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Catalogue")\n'
)


def huge_page(items: int) -> str:
    return (
        "<!doctype html><title>Catalogue</title><main><h1>Catalogue</h1><ul>"
        + "".join(f'<li><a href="/item/{n}">Item {n}</a></li>' for n in range(items))
        + "</ul><button>Load more</button></main>"
    )


def peak_rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def one_run(items: int) -> dict[str, float]:
    """The measurement, in this process."""
    from playwright.sync_api import sync_playwright

    from prettyplay_behave import PrettyConfig, PrettyPlay
    from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium
    from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
    from tests.support.pages import PageServer

    before_mb = peak_rss_mb(resource.RUSAGE_SELF)
    with (
        PageServer({"/": huge_page(items)}) as pages,
        ScriptedLLMServer() as llm,
        tempfile.TemporaryDirectory() as tmp,
        sync_playwright() as playwright,
    ):
        os.environ.update(llm.env)
        llm.on("generate", code_answer(SHOWN))
        llm.on("gate", CLEAN_GATE)
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
        )
        page = browser.new_context(base_url=pages.url).new_page()
        page.goto("/")
        config = PrettyConfig(
            base_url=pages.url, cache_dir=str(Path(tmp) / "cache"), llm_timeout=30.0, llm_retries=0
        )
        started = time.perf_counter()
        with PrettyPlay("catalogue", config=config, page=page) as t:
            origin = t.expect("the catalogue heading is shown").origin
        seconds = time.perf_counter() - started
        purposes = [r.purpose for r in llm.requests]
        if origin != "generated" or purposes != ["generate", "gate"]:
            raise SystemExit(f"unexpected run: {origin}, requests {purposes}")
        tokens = len(llm.requests_for("generate")[0].text) // 4
        browser.close()
    return {
        "seconds": seconds,
        "tokens": tokens,
        "python_mb": peak_rss_mb(resource.RUSAGE_SELF),
        "python_start_mb": before_mb,
        "browser_mb": peak_rss_mb(resource.RUSAGE_CHILDREN),
    }


def measured(items: int) -> dict[str, float]:
    """One run in a fresh process."""
    completed = subprocess.run(
        [sys.executable, __file__, "--child", "--items", str(items)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    return json.loads(completed.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, action="append", help="list length (repeatable)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = args.items or list(SIZES)
    if args.child:
        print(json.dumps(one_run(sizes[0])))
        return 0
    print(f"median of {args.runs} runs, each in a process of its own; peak RSS is the largest")
    print(
        "| links | step, median s | request tokens | Python peak RSS MB (before the run)"
        " | largest descendant peak RSS MB |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    failed = []
    for items in sizes:
        runs = [measured(items) for _ in range(args.runs)]
        seconds = statistics.median(run["seconds"] for run in runs)
        tokens = max(run["tokens"] for run in runs)
        python_mb = max(run["python_mb"] for run in runs)
        start_mb = max(run["python_start_mb"] for run in runs)
        browser_mb = max(run["browser_mb"] for run in runs)
        print(
            f"| {items:,} | {seconds:.2f} | {tokens:,} | {python_mb:,.0f} ({start_mb:,.0f})"
            f" | {browser_mb:,.0f} |"
        )
        slowest = max(run["seconds"] for run in runs)
        if tokens >= TARGET_TOKENS or slowest >= TARGET_SECONDS or python_mb >= TARGET_RSS_MB:
            failed.append(f"{items:,} links")
    if failed:
        print(
            f"over {TARGET_TOKENS:,} tokens, {TARGET_SECONDS:.0f} s or {TARGET_RSS_MB:,} MB:"
            f" {', '.join(failed)}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
