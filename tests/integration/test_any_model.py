"""Answers shaped the way local and small models write them, through whole runs: behave over the
example features with the scripted server, and the Python API on the demo shop."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from prettyplay_behave import PrettyPlay
from tests.conftest import BehaveProject, copy_examples
from tests.support.caches import by_sentence, filled, steps
from tests.support.changed_ui import CART
from tests.support.healing_run import QUICK_REDS
from tests.support.llm_server import RecordedRequest, ScriptedLLMServer
from tests.support.settings import api_config
from tests.support.shop_steps import OPEN_SHOP

# -- how small models write code ---------------------------------------------------------------

DRAFT = 'def step(page) -> None:\n    page.goto("/cart")\n'


def code_shapes(code: str) -> list[str]:
    """``code`` in every shape a code answer may come in, none of them the strict one."""
    body = code.strip("\n")
    return [
        f"<think>\nThe page shows a list. A first try:\n```python\n{DRAFT}```\nNo, better:\n"
        f"</think>\n\n```python\n{body}\n```",
        f"{body}\n",  # no fence at all
        f"Here is the step:\n```Python\n{body}\n```\nIt does what the sentence says.",
        f"```py3\n{body}\n```",
        f"~~~\n{body}\n~~~",
        f"```python\n{body}\n```\n\n```text\nThe step uses the accessible name.\n```",
        f"Okay, the button is there.\n```python\n{DRAFT}```\n</think>\n```python\n{body}\n```",
        f"[THINK]Use a role locator.[/THINK]\n```python\n{body}\n```",
    ]


# -- how small models write verdicts ------------------------------------------------------------

HIGH = {"dimension": "adequacy", "severity": "high", "message": "the check asserts nothing"}
GATE_SHAPES = [
    'Sure, here is my review: {"findings": []} Let me know if you need anything else.',
    '```json\n{\n  "findings": [],\n}\n```',
    "{'findings': []}",
    f"<think>\nA draft: {json.dumps({'findings': [HIGH]})}\nBut the code does check the "
    'heading.\n</think>\n{"findings": []}',
    '{"Findings": [{"Dimension": "Adequacy", "Severity": "Low", "message": "a brittle name"},]}',
]


def rotating(shapes: Callable[[RecordedRequest], list[str]]) -> Callable[[RecordedRequest], str]:
    """A reply that takes the next shape for every request."""
    counter = itertools.count()
    return lambda request: (lambda options: options[next(counter) % len(options)])(shapes(request))


def committed_code() -> dict[str, str]:
    """Sentence -> code, from the committed example cache."""
    root = Path(__file__).resolve().parents[2] / "features" / ".prettyplay"
    code: dict[str, str] = {}
    for entry in steps(root):
        code[filled(entry)] = "\n".join(entry["code"]) + "\n"
    return code


def summary_counts(output: str) -> dict[str, int]:
    line = next(line for line in output.splitlines() if line.startswith("prettyplay: ") and
                "steps:" in line)  # fmt: skip
    return {word: int(n) for n, word in re.findall(r"(\d+) (replayed|generated|healed)", line)}


@pytest.mark.slow
def test_a_cold_run_of_the_shop_examples_goes_green_whatever_shape_the_answers_take(
    tmp_path: Path, llm: ScriptedLLMServer
) -> None:
    """The shop's features (more sentences than there are shapes, each shape used at least
    once) generated from nothing."""
    root = copy_examples(tmp_path)
    shutil.rmtree(root / "features" / ".prettyplay")
    code = committed_code()
    llm.on("generate", rotating(lambda request: code_shapes(code[str(request.step)])), repeat=True)
    llm.on("gate", rotating(lambda request: GATE_SHAPES), repeat=True)
    result = BehaveProject(root).run(
        "features/shop", "-D", "prettyplay.report_dir=reports", env=llm.env
    )
    assert result.returncode == 0, result
    assert "3 scenarios passed, 0 failed" in result.output
    generated = len(llm.requests_for("generate"))
    assert generated >= len(code_shapes(OPEN_SHOP))  # every shape was used
    # one request per generated step: no answer was unparseable, no gate blocked
    assert summary_counts(result.output)["generated"] == generated
    assert len(llm.requests_for("gate")) == generated
    report = (root / "reports" / "report.html").read_text()
    assert "unparseable answer" not in report and "gate violation" not in report
    for entry in steps(root / "features/.prettyplay", "shop/cart.feature"):
        # the final code of each answer, never its draft
        assert "\n".join(entry["code"]) + "\n" == code[filled(entry)]


def classify_shape(request: RecordedRequest) -> str:
    """A classification the way a small model writes it: fenced, capitalised, a trailing
    comma."""
    return (
        "Here is my classification:\n```json\n{\n"
        '  "Label": "Rot",\n'
        '  "Explanation": "The controls were relabelled.",\n'
        '  "Recommendation": "Use the new labels.",\n'
        "}\n```"
    )


@pytest.mark.slow
def test_a_changed_ui_heals_green_on_classifications_in_a_loose_form(
    tmp_path: Path, fresh_shop, llm: ScriptedLLMServer
) -> None:
    fresh_shop.set_variant("changed-ui")
    root = copy_examples(tmp_path)
    llm.on("classify", classify_shape, repeat=True)
    llm.on("heal", rotating(lambda request: code_shapes(CART[str(request.step)])), repeat=True)
    llm.on("gate", rotating(lambda request: GATE_SHAPES), repeat=True)
    result = BehaveProject(root).run(
        "features/shop/cart.feature", "-D", f"prettyplay.base_url={fresh_shop.url}",
        "-D", "prettyplay.report_dir=reports", *QUICK_REDS, env=llm.env,
    )  # fmt: skip
    assert result.returncode == 0, result
    assert "2 scenarios passed, 0 failed" in result.output
    heals = len(llm.requests_for("heal"))
    assert heals == len(llm.requests_for("classify")) == 5
    # the Background's banner is one entry of the library: healed once, replayed by the second
    assert summary_counts(result.output)["healed"] == heals
    report = (root / "reports" / "report.html").read_text()
    assert "verdict: rot" in report
    assert "unparseable answer" not in report and "taken as incurable" not in result.output
    entries = by_sentence(root / "features/.prettyplay", "shop/cart.feature")
    assert entries["I accept the cookie banner"]["origin"] == "healed"
    assert entries["I accept the cookie banner"]["code"] == (
        CART["I accept the cookie banner"].splitlines()
    )


# -- drafts inside reasoning --------------------------------------------------------------------


def cached(tmp_path: Path) -> Iterator[dict]:
    yield from steps(tmp_path / "cache", "visit")


def test_a_draft_blocking_finding_in_the_reasoning_lets_the_candidate_through(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on("generate", f"```python\n{OPEN_SHOP}```")
    llm_env.on(
        "gate",
        f"<think>\nMaybe: {json.dumps({'findings': [HIGH]})}\nNo: it opens the shop as the "
        'sentence says.\n</think>\n\n{"findings": []}',
    )
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        run = t.step("open the shop")
    assert (run.origin, run.code) == ("generated", OPEN_SHOP)
    assert run.history == []  # no gate violation, no second attempt
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate"]
    assert [e["code"] for e in cached(tmp_path)] == [OPEN_SHOP.splitlines()]


def test_a_draft_code_block_in_the_reasoning_is_never_executed(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.on(
        "generate",
        f"<think>\nThe cart might be the start:\n```python\n{DRAFT}```\nNo, the sentence says "
        f"the shop.\n</think>\n```python\n{OPEN_SHOP}```",
    )
    llm_env.on("gate", '{"findings": []}')
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), browser=browser) as t:
        run = t.step("open the shop")
        assert t.page.url == shop.url + "/"  # the draft would have opened /cart
    assert (run.origin, run.code, run.history) == ("generated", OPEN_SHOP, [])
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate"]
    gate = llm_env.requests_for("gate")[0].content("user")
    assert 'page.goto("/cart")' not in gate  # only the answer's code is judged
