"""Cache files: load and lookup time for 1,000 and 10,000 entries, and parses per run.

.venv/bin/python bench/cache_load.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave import cache  # noqa: E402
from prettyplay_behave.cache import FORMAT, CacheKey, CacheStore  # noqa: E402
from prettyplay_behave.safety.step_code import check_code  # noqa: E402

CODE = [
    "def step(page) -> None:",
    '    page.get_by_role("button", name="Add to cart").first.click()',
    '    expect(page.get_by_role("status")).to_contain_text("added")',
]


def write_file(folder: Path, entries: int) -> Path:
    """One feature's step library with ``entries`` entries."""
    steps = [
        {"code": CODE, "kind": "action", "origin": "generated", "sentence": f"step {n}"}
        for n in range(entries)
    ]
    path = folder / "big.feature.json"
    path.write_text(json.dumps({"format": FORMAT, "steps": steps}, indent=2, sort_keys=True) + "\n")
    return path


def main() -> None:
    parses = 0
    original = cache.store.load_file

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal parses
        parses += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    cache.store.load_file = counted  # type: ignore[assignment]
    print("| entries | file size | first lookup (load, validate), ms | lookups, µs each | parses |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for entries in (1_000, 10_000):
        with tempfile.TemporaryDirectory() as tmp:
            path = write_file(Path(tmp), entries)
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
            size = path.stat().st_size / 1024
            print(f"| {entries:,} | {size:,.0f} KiB | {statistics.median(loads):.0f} | "
                  f"{statistics.median(lookups):.1f} | {parses} |")  # fmt: skip
    cache.store.load_file = original


if __name__ == "__main__":
    main()
