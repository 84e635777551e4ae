"""What a run costs: requests and tokens per step for generation, healing and group recovery.

Three behave runs over the example features against the demo shop, with the scripted
OpenAI-compatible server answering:
- generation: an empty cache; each ``generate`` request gets the code the committed cache holds
  for that sentence, each ``gate`` a clean verdict;
- healing: the committed cache against the changed UI (``cart.feature``); ``classify`` says
  ``rot``, ``heal`` answers the changed UI's code;
- group recovery: the ``@group`` checkout against the changed UI; ``diagnose`` says
  ``recoverable`` with the failed step as the root, ``heal`` answers the changed UI's code.
Token figures are the scripted server's usage (about four characters a token), so they size
what is sent, not a provider's exact bill.

    .venv/bin/python bench/generation_cost.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium  # noqa: E402
from prettyplay_behave.browser.snapshot import capture, estimate_tokens  # noqa: E402
from prettyplay_behave.demo.server import DemoShop  # noqa: E402
from prettyplay_behave.engine.step import StepSpec  # noqa: E402
from prettyplay_behave.llm.templates import RequestTemplates  # noqa: E402
from prettyplay_behave.vocabulary import Kind, Meaning  # noqa: E402
from tests.support.caches import codes  # noqa: E402
from tests.support.changed_ui import CART, CHECKOUT  # noqa: E402
from tests.support.llm_server import (  # noqa: E402
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)


def committed_code() -> dict[str, str]:
    """Sentence -> code, from the committed example cache."""
    return dict(codes(ROOT / "features" / ".prettyplay"))


def run_examples(llm: ScriptedLLMServer, workdir: Path, *args: str, cache: bool = False) -> int:
    ignore = None if cache else shutil.ignore_patterns(".prettyplay")
    shutil.copytree(ROOT / "features", workdir / "features", ignore=ignore)
    shutil.copy(ROOT / "setup.cfg", workdir / "setup.cfg")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    env.update(llm.env)
    completed = subprocess.run(
        [sys.executable, "-m", "behave", "-f", "progress", *args], cwd=workdir, env=env,
        text=True, capture_output=True, timeout=600,
    )  # fmt: skip
    if completed.returncode != 0:
        print(completed.stdout, completed.stderr)
    return completed.returncode


def report(title: str, requests: list[RecordedRequest], per: str) -> None:
    """Requests and prompt tokens by purpose, per step that made a ``per`` request."""
    by_purpose: dict[str, list[int]] = defaultdict(list)
    for request in requests:
        by_purpose[request.purpose or "?"].append(estimate_tokens(request.text))
    steps = len([request for request in requests if request.purpose == per])
    print(f"{title}: {steps} steps, {len(requests)} requests")
    print("| purpose | requests | per step | prompt tokens per request (median, max) |")
    print("| --- | ---: | ---: | ---: |")
    for purpose, tokens in sorted(by_purpose.items()):
        print(
            f"| {purpose} | {len(tokens)} | {len(tokens) / steps:.1f} | "
            f"{statistics.median(tokens):,.0f}, {max(tokens):,} |"
        )
    total = sum(sum(t) for t in by_purpose.values())
    print(f"prompt tokens per step, all purposes: {total / steps:,.0f}\n")


def verdict(label: str, request: RecordedRequest) -> str:
    """A verdict naming the step of the request as the root."""
    return json_answer(
        {
            "label": label,
            "root_step": unquote(request.headers["x-prettyplay-step"]),
            "explanation": "the controls were relabelled",
            "recommendation": "use the new labels",
        }
    )


def large_page_request(items: int) -> tuple[int, bool]:
    """Tokens of a whole generate request on a page with ``items`` list items."""
    from playwright.sync_api import sync_playwright

    rows = "".join(
        f"<li>Product {n} costs ${n}.99 <a href='/p/{n}'>View</a></li>" for n in range(items)
    )
    html = f"<title>Catalogue</title><h1>Catalogue</h1><ul>{rows}</ul><button>Checkout</button>"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
        )
        page = browser.new_page()
        page.set_content(html)
        state = capture(page)
        browser.close()
    messages = RequestTemplates().render(
        "generate", step=StepSpec(Kind.ACTION, "click Checkout"), base_url="http://shop.test",
        page=state, scenario=[], history=[], group=None, instructions="",
        verdict=None, guidance="", restored="", closest=[],
    )  # fmt: skip
    text = "\n".join(m["content"] for m in messages)
    return estimate_tokens(text), 'button "Checkout"' in text


def large_page_judgments(items: int) -> tuple[int, int]:
    """Tokens of a classify request (20 earlier steps, each with its code) and of a gate request
    (the page changed almost entirely) on a page with ``items`` list items, with the budgets the
    engine uses."""
    from types import SimpleNamespace

    from playwright.sync_api import sync_playwright

    from prettyplay_behave.browser.change import page_change
    from prettyplay_behave.engine import advisor, page_state

    def catalogue(count: int, offset: int) -> str:
        rows = "".join(f"<li>Product {n} costs ${n}.99 <a href='/p/{n}'>View</a></li>"
                       for n in range(offset, offset + count))  # fmt: skip
        return f"<title>Catalogue</title><h1>Catalogue</h1><ul>{rows}</ul><button>Next</button>"

    code = 'def step(page) -> None:\n    page.get_by_role("link", name="View").nth(3).click()\n'
    ran = SimpleNamespace(url_before="http://shop.test/", url_after="http://shop.test/p/3")
    scenario = [
        SimpleNamespace(kind=Kind.ACTION, meaning=Meaning.ACTION,
                        sentence=f"I open product {n}", outcome="passed",
                        group=None, code=code, origin="replayed", history=[ran], seen=(),
                        findings=())
        for n in range(20)
    ]  # fmt: skip
    spent = sum(
        estimate_tokens(e.code + "".join(e.seen + e.findings)) + page_state.SCENARIO_LINE_TOKENS
        for e in scenario
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
        )
        page = browser.new_page()
        page.set_content(catalogue(items, 0))
        before = capture(page)
        budget = max(page_state.MIN_PAGE_TOKENS, page_state.PAGE_TOKENS - spent)
        classify_page = capture(page, budget_tokens=budget)
        page.set_content(catalogue(items, items))
        after = capture(page, budget_tokens=page_state.CHANGE_PAGE_TOKENS)
        browser.close()
    step = StepSpec(Kind.ACTION, "I open the next page")
    common = {"step": step, "base_url": "http://shop.test", "scenario": scenario, "history": [],
              "group": None, "instructions": ""}  # fmt: skip
    prompts = RequestTemplates()
    classify = prompts.render("classify", page=classify_page, earlier=None, **common)
    gate = prompts.render(
        "gate", page=after, change=page_change(before, after, advisor.CHANGE_TOKENS),
        candidate=code, candidate_outcome="green", verdict=None, guidance="", batch=[],
        renames=[], **common,
    )  # fmt: skip
    return tuple(  # type: ignore[return-value]
        estimate_tokens("\n".join(m["content"] for m in messages)) for messages in (classify, gate)
    )


def main() -> int:
    code = committed_code()

    def generate(request: RecordedRequest) -> str:
        return code_answer(code[unquote(request.headers["x-prettyplay-step"])])

    def heal(request: RecordedRequest) -> str:
        sentence = unquote(request.headers["x-prettyplay-step"])
        return code_answer({**CART, **CHECKOUT}[sentence])

    clean = json_answer({"findings": []})
    with ScriptedLLMServer() as llm, tempfile.TemporaryDirectory() as tmp:
        llm.on("generate", generate, repeat=True)
        llm.on("gate", clean, repeat=True)
        if run_examples(llm, Path(tmp) / "generate") != 0:
            return 1
        report("generation, empty cache (every step of the examples)", llm.requests, "generate")
        with DemoShop(variant="changed-ui") as shop:
            url = f"prettyplay.base_url={shop.url}"
            llm.reset()
            llm.on("classify", lambda r: verdict("rot", r), repeat=True)
            llm.on("heal", heal, repeat=True)
            llm.on("gate", clean, repeat=True)
            healing = ["-D", url, "features/shop/cart.feature"]
            if run_examples(llm, Path(tmp) / "heal", *healing, cache=True) != 0:
                return 1
            report("healing, changed UI (cart.feature)", llm.requests, "heal")
            llm.reset()
            llm.on("diagnose", lambda r: verdict("recoverable", r), repeat=True)
            llm.on("heal", heal, repeat=True)
            llm.on("gate", clean, repeat=True)
            recovery = ["-D", url, "-D", "prettyplay.healing_attempts=5",
                        "features/shop/checkout.feature"]  # fmt: skip
            if run_examples(llm, Path(tmp) / "recover", *recovery, cache=True) != 0:
                return 1
            report("group recovery, changed UI (checkout.feature)", llm.requests, "heal")
    for items in (1_000, 5_000):
        request_tokens, kept = large_page_request(items)
        print(f"generate request on a page of {items:,} list items: {request_tokens:,} tokens, "
              f"target button kept: {kept}")  # fmt: skip
        classify, gate = large_page_judgments(items)
        print(f"on the same page, a classify request after 20 steps: {classify:,} tokens; "
              f"a gate request after a change of the whole list: {gate:,} tokens")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
