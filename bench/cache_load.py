"""The step library: load and lookup time for 1,000 and 10,000 entries (a file each, as the
library keeps a step), and how often the files were parsed over all lookups.

.venv/bin/python bench/cache_load.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave import cache  # noqa: E402
from prettyplay_behave.cache import (  # noqa: E402
    CacheKey,
    CacheStore,
    StepEntry,
    file_name,
    render_steps,
)
from prettyplay_behave.safety.step_code import check_code  # noqa: E402

CODE = [
    "def step(page) -> None:",
    '    page.get_by_role("button", name="Add to cart").first.click()',
    '    expect(page.get_by_role("status")).to_contain_text("added")',
]


def write_library(cache_dir: Path, entries: int) -> int:
    """A project's step library of ``entries`` steps, a file each; its size in bytes."""
    steps = cache_dir / "steps"
    steps.mkdir(parents=True)
    size = 0
    for n in range(entries):
        entry = StepEntry("action", f"step {n}", "\n".join(CODE), "generated")
        path = steps / file_name(entry.step)
        size += path.write_bytes(render_steps([entry]))
    return size


def main() -> None:
    parses = 0
    original = cache.store.load_file

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal parses
        parses += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    cache.store.load_file = counted  # type: ignore[assignment]
    print(
        "| entries | library size | first lookup (load, validate), ms | lookups, µs each | parses |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    for entries in (1_000, 10_000):
        with tempfile.TemporaryDirectory() as tmp:
            size = write_library(Path(tmp), entries) / 1024
            loads, lookups = [], []
            for _ in range(3):
                parses = 0
                store = CacheStore(Path(tmp), validate=check_code)
                started = time.perf_counter()
                store.lookup(CacheKey("big.feature::Scenario 0", "action", "step 0"))
                loads.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                for n in range(entries):
                    key = CacheKey(f"big.feature::Scenario {n % 100}", "action", f"step {n}")
                    assert store.lookup(key) is not None
                lookups.append((time.perf_counter() - started) / entries * 1e6)
            print(f"| {entries:,} | {size:,.0f} KiB | {statistics.median(loads):.0f} | "
                  f"{statistics.median(lookups):.1f} | {parses:,} |")  # fmt: skip
    cache.store.load_file = original


if __name__ == "__main__":
    main()
