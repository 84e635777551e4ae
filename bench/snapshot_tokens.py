"""Snapshot size benchmark: how large the page data handed to the LLM is, and what it costs.

For each demo shop page and each synthetic long list it prints the full aria snapshot size, the
estimated tokens of the compacted request data (the whole untrusted-page-data block), the
median capture and compaction times, and whether the target element survived compaction.
Then ``compact()`` alone on synthetic snapshot text of a product list (the shape the unit tests
use), up to several megabytes: its median time and the tokens it keeps.

    .venv/bin/python bench/snapshot_tokens.py
    .venv/bin/python bench/snapshot_tokens.py --text-only   # compact() alone, no browser

Exits 1 when a page breaks the target (request data under 8,000 tokens with the target kept)
or when compact() needs a second or more per megabyte of snapshot text.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

from prettyplay_behave.browser.snapshot import (
    PageCaptureError,
    PageState,
    capture,
    compact,
    estimate_tokens,
    neutralise,
)

RUNS = 5
BUDGET_TOKENS = 6000
TARGET_TOKENS = 8000
LIST_SIZES = (1000, 5000, 20_000)
TEXT_SIZES = (1000, 10_000, 50_000)
COMPACT_TARGET_S = 1.0  # for a megabyte of snapshot text
SYSTEM_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INTERACTIVE = re.compile(r"- (button|link|textbox|checkbox|combobox|radio|searchbox) ")


@dataclass(frozen=True)
class Row:
    page: str
    full_chars: int
    tokens: int
    capture_ms: float
    compact_ms: float
    target: str
    kept: bool
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.kept and self.tokens < TARGET_TOKENS and not self.error


def request_data(state: PageState) -> str:
    """The block the prompt templates build from a capture."""
    return (
        f'<untrusted-page-data id="{state.fence}">\n'
        f"title: {state.title}\n"
        f"{state.snapshot}\n"
        f'</untrusted-page-data id="{state.fence}">'
    )


def last_interactive(snapshot: str) -> str:
    """The last interactive element of a snapshot: the one a cut from the end loses first."""
    lines = [line.strip() for line in snapshot.splitlines() if INTERACTIVE.search(line)]
    return lines[-1].rstrip(":") if lines else ""


def median_ms(action: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(name: str, page: Page, target: str = "") -> Row:
    full = neutralise(page.locator("body").aria_snapshot(timeout=0))
    target = target or last_interactive(full)
    states: list[PageState] = []
    try:
        capture_ms = median_ms(lambda: states.append(capture(page, budget_tokens=BUDGET_TOKENS)))
    except PageCaptureError as exc:
        return Row(name, len(full), 0, 0, 0, target, kept=False, error=str(exc).splitlines()[0])
    state = states[-1]
    return Row(
        page=name,
        full_chars=state.full_chars,
        tokens=estimate_tokens(request_data(state)),
        capture_ms=capture_ms,
        compact_ms=median_ms(lambda: compact(full, BUDGET_TOKENS)),
        target=target,
        kept=bool(target) and target in state.snapshot,
    )


def list_page(items: int) -> str:
    rows = "".join(
        f"<li>Product {i} costs ${i % 90 + 9}.99 <a href='/products/{i}'>View</a></li>"
        for i in range(items)
    )
    return (
        "<title>Catalogue</title><header><a href='/'>Home</a></header><h1>Catalogue</h1>"
        f"<ul>{rows}</ul><button>Checkout</button>"
    )


@contextmanager
def demo_shop() -> Iterator[str | None]:
    """The demo shop's URL, or None while the demo is not available."""
    try:
        from prettyplay_behave.demo.server import DemoShop
    except ImportError:
        yield None
        return
    with DemoShop() as shop:
        yield shop.url.rstrip("/")


def demo_rows(browser: Browser, url: str) -> list[Row]:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{url}/")
    # A filled cart with accepted terms, so that /cart and /checkout show their full content.
    page.request.post(f"{url}/cart/add", form={"product": "mug"})
    page.request.post(f"{url}/terms", form={"accept": "yes"})
    rows = []
    for path in ("/", "/cart", "/checkout", "/login"):
        page.goto(f"{url}{path}")
        landed = page.url.removeprefix(url) or "/"
        name = f"demo {path}" + (f" (→ {landed})" if landed != path else "")
        rows.append(measure(name, page))
    context.close()
    return rows


def list_rows(browser: Browser) -> list[Row]:
    page = browser.new_page()
    rows = []
    for items in LIST_SIZES:
        page.set_content(list_page(items))
        rows.append(measure(f"list of {items:,} items", page, target='- button "Checkout"'))
    page.close()
    return rows


@dataclass(frozen=True)
class TextRow:
    items: int
    chars: int
    tokens: int
    compact_ms: float
    kept: bool

    @property
    def ok(self) -> bool:
        per_megabyte_s = self.compact_ms / 1000 / (self.chars / 1_000_000)
        return self.kept and self.tokens <= BUDGET_TOKENS and per_megabyte_s < COMPACT_TARGET_S


def product_list_text(items: int) -> str:
    """An aria snapshot of a long product list with controls after it, as text."""
    lines = ["- banner:", '  - link "Home":', "    - /url: /", '- heading "Products" [level=1]']
    lines.append("- list:")
    for i in range(items):
        lines += [
            "  - listitem:",
            f"    - text: Product {i} costs ${i}.99",
            f'    - link "View product {i}":',
            f"      - /url: /products/{i}",
        ]
    lines += ['- textbox "Coupon code"', '- button "Checkout"', "- contentinfo:", "  - text: Ltd"]
    return "\n".join(lines)


def text_rows() -> list[TextRow]:
    rows = []
    for items in TEXT_SIZES:
        text = product_list_text(items)
        result = compact(text, BUDGET_TOKENS)
        compact_ms = median_ms(functools.partial(compact, text, BUDGET_TOKENS))
        kept = '- button "Checkout"' in result.splitlines()
        rows.append(TextRow(items, len(text), estimate_tokens(result), compact_ms, kept))
    return rows


def text_table(rows: list[TextRow]) -> str:
    lines = [
        "| snapshot text | chars | compact ms | ms per MB | tokens kept | `Checkout` kept |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        per_megabyte = row.compact_ms / (row.chars / 1_000_000)
        lines.append(
            f"| list of {row.items:,} items | {row.chars:,} | {row.compact_ms:,.0f}"
            f" | {per_megabyte:,.0f} | {row.tokens:,} | {'yes' if row.kept else 'NO'} |"
        )
    return "\n".join(lines)


def table(rows: list[Row]) -> str:
    lines = [
        "| page | full snapshot chars | request tokens | capture ms | compact ms | target kept |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        if row.error:
            lines.append(f"| {row.page} | {row.full_chars:,} | — | — | — | {row.error} |")
            continue
        kept = f"yes (`{row.target}`)" if row.kept else f"NO (`{row.target}`)"
        lines.append(
            f"| {row.page} | {row.full_chars:,} | {row.tokens:,} | {row.capture_ms:,.0f}"
            f" | {row.compact_ms:,.0f} | {kept} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text-only", action="store_true", help="compact() alone, no browser")
    args = parser.parse_args()
    failed: list[str] = []
    if not args.text_only:
        executable = SYSTEM_CHROMIUM if Path(SYSTEM_CHROMIUM).exists() else None
        with sync_playwright() as playwright, demo_shop() as shop_url:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            rows = demo_rows(browser, shop_url) if shop_url else []
            rows += list_rows(browser)
            print(f"Chromium {browser.version}, budget {BUDGET_TOKENS:,} tokens, median of {RUNS}")
            browser.close()
        print(table(rows))
        failed += [row.page for row in rows if not row.ok]
        if failed:
            print(f"over {TARGET_TOKENS:,} tokens or target lost: {', '.join(failed)}")
    texts = text_rows()
    print(f"\ncompact() alone, budget {BUDGET_TOKENS:,} tokens, median of {RUNS}")
    print(text_table(texts))
    slow = [f"list of {row.items:,} items" for row in texts if not row.ok]
    if slow:
        print(
            f"over budget, Checkout lost or {COMPACT_TARGET_S:.0f} s per MB or more:"
            f" {', '.join(slow)}"
        )
    return 1 if failed or slow else 0


if __name__ == "__main__":
    sys.exit(main())
