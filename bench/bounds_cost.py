"""What the bounds of step code cost a replayed step: the rewrite and compile of the code, the
time budget around every Playwright call, the memory headroom around every execution, the stop
armed around every execution (for waits inside the page), the redaction of every value read
from the page, the frame check of every typing call, the place check of every click (which
measures boxes only on a page with a frame of another origin), and the browser's judgement of
every document request (the navigation bound).

    .venv/bin/python bench/bounds_cost.py [--rounds 200]

Each figure is a median over ``rounds``; target: under 2 ms a step in all.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from prettyplay_behave.browser.guard import NavigationGuard  # noqa: E402
from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium  # noqa: E402
from prettyplay_behave.browser.stop import ExecutionStop  # noqa: E402
from prettyplay_behave.safety import sandbox  # noqa: E402
from prettyplay_behave.safety.limits import Budget, memory_headroom  # noqa: E402
from prettyplay_behave.safety.proxy import PageProxy, PageServices  # noqa: E402
from prettyplay_behave.safety.secrets import Secrets  # noqa: E402
from tests.support.caches import codes  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Page

TARGET_MS = 2.0
# a page with a stylesheet, a script and a fetch, as a real page has
PAGES = {
    "/": "<title>A</title><link rel=stylesheet href='/s.css'><script src='/a.js'></script>"
    "<h1>A</h1><script>fetch('/d.json')</script>",
    "/s.css": "h1 { color: green }",
    "/a.js": "window.loaded = true;",
    "/d.json": "{}",
    "/form": "<label>Name <input id='name' value='Ann Example'></label><p>Ann Example</p>",
    # the same with a frame of another origin beside the field (a data: URL's origin is opaque)
    "/framed": "<label>Name <input id='name' value='Ann Example'></label>"
    "<iframe src='data:text/html,<p>other</p>'></iframe>",
}


def median_ms(action: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def paired_ms(action: Callable[[], object], base: Callable[[], object], rounds: int) -> float:
    """What ``action`` costs over ``base``: the two alternate, so both meet the same load."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for timed, call in zip(times, (action, base), strict=True):
            started = time.perf_counter()
            call()
            timed.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]) - statistics.median(times[1])


def example_code() -> list[str]:
    return [code for _, code in codes(ROOT / "features" / ".prettyplay")]


def plain_compile(code: str) -> object:
    """What compiling a step cost before the rewrite: the same, without ``_Bound``."""
    namespace: dict[str, object] = {"__builtins__": {}}
    exec(compile(ast.parse(code, "<step>"), "<step>", "exec"), namespace)
    return namespace["step"]


def enter_and_leave_headroom() -> None:
    with memory_headroom():
        pass


def arm_and_disarm(page: Page) -> None:
    with ExecutionStop(lambda: [page], "bench").armed(60):
        pass


def reads_and_typing(page: Page, url: str, rounds: int) -> tuple[float, float]:
    """What one value read costs with a secret to redact over one without, and what a typing
    call costs with the frame check over one without, on a page without foreign frames."""
    page.goto("/form")
    secrets = Secrets({"SHOP_PASSWORD": "Pw@9&Zx4-Kq7"})
    secrets.require(["SHOP_PASSWORD"], "bench")
    plain = PageProxy(page, Budget.started())
    guarded = PageServices(redact=secrets.redact, origin_allowed=NavigationGuard([url]).allows)
    checked = PageProxy(page, Budget.started(), guarded)
    read = paired_ms(
        lambda: checked.get_by_label("Name").input_value(),
        lambda: plain.get_by_label("Name").input_value(),
        rounds,
    )
    typed = paired_ms(
        lambda: checked.get_by_label("Name").fill("Ann"),
        lambda: plain.get_by_label("Name").fill("Ann"),
        rounds,
    )
    return max(0.0, read), max(0.0, typed)


def clicks(page: Page, url: str, rounds: int) -> tuple[float, float]:
    """What a click costs with the input checks over one without: on a page whose frames are
    all allowed, and beside a frame of another origin (the element's frame, its place and the
    frame's box measured)."""
    guarded = PageServices(origin_allowed=NavigationGuard([url]).allows)
    costs = []
    for path in ("/form", "/framed"):
        page.goto(path)
        costs.append(  # a budget of its own for each click: the rounds outlast one step's
            paired_ms(
                lambda: PageProxy(page, Budget.started(), guarded).get_by_label("Name").click(),
                lambda: PageProxy(page, Budget.started()).get_by_label("Name").click(),
                rounds,
            )
        )
    return max(0.0, costs[0]), max(0.0, costs[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    codes = example_code()
    rewrite = median_ms(lambda: [sandbox.compile_step(c) for c in codes], rounds) / len(codes)
    before = median_ms(lambda: [plain_compile(c) for c in codes], rounds) / len(codes)
    headroom = median_ms(enter_and_leave_headroom, rounds)
    with PageServer(PAGES) as pages, sync_playwright() as playwright:
        browsers = [
            playwright.chromium.launch(
                executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
            )
            for _ in range(3)
        ]
        contexts = [browser.new_context(base_url=pages.url) for browser in browsers]
        free, bound, routed = (context.new_page() for context in contexts)
        NavigationGuard([pages.url]).install(contexts[1], bound)
        NavigationGuard([pages.url]).route(contexts[2])  # the routing guard of earlier releases
        for page in (free, bound, routed):
            page.goto("/")
        heading = free.locator("h1")
        proxy = PageProxy(free, Budget.started())
        raw_call = median_ms(heading.count, rounds)
        bounded = median_ms(lambda: proxy.locator("h1").count(), rounds)
        stop = median_ms(lambda: arm_and_disarm(free), rounds)
        reading, typing = reads_and_typing(bound, pages.url, rounds)
        click, click_framed = clicks(bound, pages.url, rounds)
        # alternate, so that all three browsers see the same machine load
        times: dict[str, list[float]] = {"free": [], "bound": [], "routed": []}
        for _ in range(rounds // 2):
            for name, page in (("free", free), ("bound", bound), ("routed", routed)):
                started = time.perf_counter()
                page.goto("/")
                times[name].append((time.perf_counter() - started) * 1000)
        for browser in browsers:
            browser.close()
    navigation = statistics.median(times["free"])
    routing_cost = statistics.median(times["routed"]) - navigation
    compile_cost = max(0.0, rewrite - before)
    call_cost = max(0.0, bounded - raw_call)
    document_cost = max(0.0, statistics.median(times["bound"]) - navigation)
    # a replayed example step: one compile, one execution, about three calls (a click among
    # them); 11 of the 24 example steps load a document (a goto or a form that submits)
    per_step = (
        compile_cost
        + headroom
        + stop
        + 3 * call_cost
        + reading
        + typing
        + click
        + document_cost * 11 / 24
    )
    print("| bound | cost, ms |")
    print("| --- | ---: |")
    print(f"| rewrite and compile a step (over a plain compile) | {compile_cost:.3f} |")
    print(f"| memory headroom around one execution | {headroom:.3f} |")
    print(f"| time budget around one Playwright call | {call_cost:.3f} |")
    print(f"| the stop armed around one execution | {stop:.3f} |")
    print(f"| ingress redaction of one value read (a secret known) | {reading:.3f} |")
    print(f"| the frame check of one typing call (no foreign frame) | {typing:.3f} |")
    print(f"| the input check of one click (no foreign frame) | {click:.3f} |")
    print(f"| (the input check of one click beside a foreign frame) | ({click_framed:.3f}) |")
    print(f"| the browser's judgement of one document request | {document_cost:.3f} |")
    print(f"| (the routing guard before, for one navigation) | ({routing_cost:.3f}) |")
    print(f"| (a navigation to a small local page, unguarded) | ({navigation:.1f}) |")
    print(
        "| a replayed example step (one compile, three calls, a read, a typing, a click, 11/24 "
        f"of a document) | {per_step:.3f} |"
    )
    print(f"target: under {TARGET_MS} ms a step")
    return 0 if per_step < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
