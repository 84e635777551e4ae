"""Per-step overhead of the engine, separated from the page's own time.

Replays every cached example scenario through the Python API against the demo shop and times,
per step: the whole step (``StepExecutor.run``), the step code itself on the page
(``call_step``: the page's own time), the settle wait, and the policy check and compile. The
rest is bookkeeping (cache lookup, records, hooks). Medians over all steps of several rounds.

    .venv/bin/python bench/step_overhead.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave import PrettyConfig, PrettyPlay  # noqa: E402
from prettyplay_behave.browser import settle  # noqa: E402
from prettyplay_behave.demo.server import DemoShop  # noqa: E402
from prettyplay_behave.engine import cycle, execute  # noqa: E402
from prettyplay_behave.runtime import Runtime  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)


def timing(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            TIMES[name].append((time.perf_counter() - started) * 1000)

    return timed


def scenarios() -> list[tuple[str, list[dict[str, Any]]]]:
    found = []
    for path in sorted((ROOT / "features" / ".prettyplay").rglob("*.json")):
        feature = path.relative_to(ROOT / "features" / ".prettyplay").as_posix()[: -len(".json")]
        for name, entries in json.loads(path.read_text())["tests"].items():
            found.append((f"{feature}::{name}", entries))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    cycle.Engine.run = timing("step", cycle.Engine.run)  # type: ignore[method-assign]
    execute.call_step = timing("page", execute.call_step)
    execute.compile_step = timing("policy and compile", execute.compile_step)
    settle.Settler.settle = timing("settle", settle.Settler.settle)  # type: ignore[method-assign]
    cache_dir = ROOT / "features" / ".prettyplay"
    with DemoShop() as shop, tempfile.TemporaryDirectory():
        config = PrettyConfig(base_url=shop.url, cache_dir=str(cache_dir), strict=True)
        runtime = Runtime(config)
        try:
            for _ in range(rounds):
                for name, entries in scenarios():
                    with PrettyPlay(name, config=config, runtime=runtime) as test:
                        for entry in entries:
                            data = "\n".join(entry.get("data", []))
                            do = test.expect if entry["kind"] == "expect" else test.step
                            do(entry["sentence"], data=data)
        finally:
            runtime.close()
    steps = TIMES["step"]
    overhead = [s - p for s, p in zip(steps, TIMES["page"], strict=True)]
    print(f"{len(steps)} steps replayed ({rounds} rounds of the examples)")
    print("| per step, ms | median | mean |")
    print("| --- | ---: | ---: |")
    for name in ("step", "page", "settle", "policy and compile"):
        times = TIMES[name]
        print(f"| {name} | {statistics.median(times):.1f} | {statistics.mean(times):.1f} |")
    bookkeeping = [
        o - s - c
        for o, s, c in zip(overhead, TIMES["settle"], TIMES["policy and compile"], strict=True)
    ]
    print(f"| engine overhead (step - page) | {statistics.median(overhead):.1f} | "
          f"{statistics.mean(overhead):.1f} |")  # fmt: skip
    print(f"| bookkeeping (overhead - settle - policy) | {statistics.median(bookkeeping):.1f} | "
          f"{statistics.mean(bookkeeping):.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
