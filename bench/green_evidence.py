"""What green code found: what a changed-UI run and a defect run of the example
features send, with a cache that keeps no record of its green runs (the committed cache, written
before records were kept) and with one that does (the same code, written again by a generating
run on the reference shop, so each entry keeps what its locators found).

Behave runs against the demo shop and the scripted OpenAI-compatible server:
- changed UI (both features): ``classify`` says ``rot``, ``diagnose`` names the failed step,
  ``heal`` answers the changed UI's code (``tests/support/healing_run.py``);
- defect (``checkout.feature`` on the ``broken-product`` shop, which never confirms an order):
  ``diagnose`` says ``product_defect``.
Then the same in process, through the Python API with a scripted provider, for four steps whose
code names the controls the changed UI renames (``tests/support/shop_steps.py``: open the shop,
accept the cookies, add the first product, the cart link shows one item): ``classify`` says
``rot`` and ``heal`` answers the changed UI's code. Tokens are the scripted estimate (about four
characters a token).

    .venv/bin/python bench/green_evidence.py [--in-process]

``--in-process`` leaves the behave runs out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.browser.snapshot import estimate_tokens  # noqa: E402
from prettyplay_behave.demo.server import DemoShop  # noqa: E402
from tests.support.caches import codes  # noqa: E402
from tests.support.changed_ui import CART  # noqa: E402
from tests.support.healing_run import HEALING_OPTIONS, script_heals  # noqa: E402
from tests.support.llm_server import (  # noqa: E402
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)
from tests.support.scripted_provider import ScriptedProvider  # noqa: E402
from tests.support.shop_steps import ACCEPT, ADD_A_MUG, ONE_ITEM, OPEN_SHOP  # noqa: E402

STEPS = {
    "open the shop": (OPEN_SHOP, OPEN_SHOP),
    "accept the cookies": (ACCEPT, CART["I accept the cookie banner"]),
    "add a mug": (ADD_A_MUG, ADD_A_MUG.replace("Add to cart", "Add to basket")),
    "the cart link shows one item": (ONE_ITEM, ONE_ITEM.replace("Cart (1)", "Basket (1)")),
}

CACHE = Path("features") / ".prettyplay"
REPAIRED = "judged without the model"


def behave(llm: ScriptedLLMServer, workdir: Path, cache: Path | None, *args: str) -> int:
    """One behave run of the example features in ``workdir``, with ``cache`` as their cache
    (none: empty)."""
    shutil.copytree(ROOT / "features", workdir / "features", ignore=shutil.ignore_patterns(".*"))
    if cache is not None:
        shutil.copytree(cache, workdir / CACHE)
    shutil.copy(ROOT / "setup.cfg", workdir / "setup.cfg")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    env.update(llm.env)
    completed = subprocess.run(
        [sys.executable, "-m", "behave", "-f", "progress", *args], cwd=workdir, env=env,
        text=True, capture_output=True, timeout=900,
    )  # fmt: skip
    return completed.returncode


def row(label: str, requests: list[RecordedRequest], exit_code: int) -> str:
    by_purpose = Counter(request.purpose for request in requests)
    purposes = ", ".join(f"{purpose} {count}" for purpose, count in sorted(by_purpose.items()))
    tokens = sum(estimate_tokens(request.text) for request in requests)
    repaired = sum(REPAIRED in request.text for request in requests if request.purpose == "gate")
    return f"| {label} | {len(requests)} | {purposes} | {repaired} | {tokens:,} | {exit_code} |"


def in_process(records: bool, tmp: Path, browser: Browser) -> list[RecordedRequest]:
    """The requests of the four steps on the changed UI, their cache written on the reference
    shop by a generating run (``records``) or planted as code alone."""
    from prettyplay_behave import PrettyConfig, PrettyPlay
    from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
    from prettyplay_behave.safety.step_code import check_code

    cache = tmp / ("records" if records else "no-records")

    def steps(shop: DemoShop, provider: ScriptedProvider) -> None:
        settings = PrettyConfig(base_url=shop.url, cache_dir=str(cache), action_timeout_ms=2_000)
        with PrettyPlay("t", settings, browser=browser, provider=provider) as t:
            for sentence in STEPS:
                (t.expect if sentence.startswith("the ") else t.step)(sentence)

    if records:
        with DemoShop() as shop:
            generating = ScriptedProvider()
            for sentence, (code, _) in STEPS.items():
                generating.on("generate", code_answer(code), step=sentence)
            generating.on("gate", CLEAN_GATE, repeat=True)
            steps(shop, generating)
    else:
        store = CacheStore(cache, validate=check_code)
        for sentence, (code, _) in STEPS.items():
            kind = "check" if sentence.startswith("the ") else "action"
            store.write(CacheWrite(CacheKey("t", kind, sentence), code, "generated"))
    provider = ScriptedProvider()
    rot = json_answer({"label": "rot", "explanation": "renamed", "recommendation": "-"})
    provider.on("classify", rot, repeat=True)
    for sentence, (_, healed) in STEPS.items():
        provider.on("heal", code_answer(healed), step=sentence)
    provider.on("gate", CLEAN_GATE, repeat=True)
    with DemoShop(variant="changed-ui") as shop:
        steps(shop, provider)
    return provider.requests


def behave_runs() -> list[str]:
    """The table rows of the behave runs: the changed UI and the defect, each cache."""
    committed = dict(codes(ROOT / CACHE))

    def generate(request: RecordedRequest) -> str:
        return code_answer(committed[request.step or ""])

    defect = json_answer({"label": "product_defect", "root_step": None,
                          "explanation": "the order is never confirmed",
                          "recommendation": "fix the order confirmation"})  # fmt: skip
    rows: list[str] = []
    with ScriptedLLMServer() as llm, tempfile.TemporaryDirectory() as tmp:
        with DemoShop() as shop:
            llm.on("generate", generate, repeat=True)
            llm.on("gate", CLEAN_GATE, repeat=True)
            if behave(llm, Path(tmp) / "generate", None, "-D", f"prettyplay.base_url={shop.url}"):
                raise SystemExit("the generating run failed")
        caches = {"no records": ROOT / CACHE, "records": Path(tmp) / "generate" / CACHE}
        runs = {
            "changed UI": ("changed-ui", ("features/shop",)),
            "defect": ("broken-product", ("features/shop/checkout.feature",)),
        }
        for run, (variant, paths) in runs.items():
            with DemoShop(variant=variant) as shop:
                for label, cache in caches.items():
                    llm.reset()
                    if run == "defect":
                        llm.on("diagnose", defect, repeat=True)
                    script_heals(llm)
                    workdir = Path(tmp) / f"{variant}-{label.replace(' ', '-')}"
                    options = ("-D", f"prettyplay.base_url={shop.url}", *HEALING_OPTIONS)
                    exit_code = behave(llm, workdir, cache, *options, *paths)
                    rows.append(row(f"{run}, {label}", llm.requests, exit_code))
    return rows


def in_process_runs() -> list[str]:
    """The table rows of the four renamed steps in process, each cache."""
    from playwright.sync_api import sync_playwright

    from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium

    rows = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
        )
        for label, records in (("no records", False), ("records", True)):
            requests = in_process(records, Path(tmp), browser)
            rows.append(row(f"four renamed steps, {label}", requests, 0))
        browser.close()
    return rows


def main(argv: list[str]) -> int:
    rows = ([] if "--in-process" in argv else behave_runs()) + in_process_runs()
    print("| run, cache | requests | by purpose | healed by repair | prompt tokens | exit |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
