"""What reading an answer costs: a thousand answers of each shape, time per answer.

Code answers through ``extract_code`` and verdicts through ``read_answer``, in the shapes
models of every size write them (docs/llm-providers.md, "Answers are read tolerantly"); then
answers at the size limit (100,000 characters) built to be slow, each read once, to show that
reading stays linear. With ``--strict-baseline COMMIT`` the strict shapes are also read by the
reader of that commit (the one before tolerant reading was 28beb9e).

    .venv/bin/python bench/answer_reading.py [--count 1000] [--strict-baseline 28beb9e]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.llm import answers  # noqa: E402
from prettyplay_behave.llm.answers import (  # noqa: E402
    MAX_ANSWER_CHARS,
    REPAIR_MAX_CHARS,
    UnparseableAnswer,
)
from prettyplay_behave.llm.purposes import read_answer  # noqa: E402
from tests.support.changed_ui import CHECKOUT  # noqa: E402

CODE = CHECKOUT["I check out and accept the terms"].strip("\n")
DRAFT = 'def step(page) -> None:\n    page.goto("/checkout")'
REASONING = "The snapshot shows a Basket link and a dialog named Terms of sale. " * 12
VERDICT = {
    "label": "rot",
    "explanation": "The controls were relabelled: the cookie button now reads Allow all.",
    "recommendation": "Heal the step with the new label; the product works.",
}
FINDING = {"dimension": "adequacy", "severity": "low", "message": "a brittle exact name"}

CODE_SHAPES = {
    "one python block (strict)": f"```python\n{CODE}\n```",
    "prose around the block (strict)": f"The button is there.\n\n```python\n{CODE}\n```\n\nDone.",
    "reasoning with a draft block": (
        f"<think>\n{REASONING}\n```python\n{DRAFT}\n```\n</think>\n\n```python\n{CODE}\n```"
    ),
    "no fence": CODE,
    "fence marked Python": f"```Python\n{CODE}\n```",
    "tilde fence": f"~~~py3\n{CODE}\n~~~",
    "code and an explanation block": f"```python\n{CODE}\n```\n\n```text\n{REASONING}\n```",
}
VERDICT_SHAPES = {
    "one JSON object (strict)": json.dumps(VERDICT),
    "in a json fence (strict)": f"```json\n{json.dumps(VERDICT, indent=2)}\n```",
    "in prose": f"Sure, here is my review: {json.dumps(VERDICT)} Let me know if you need more.",
    "trailing comma, capitalised": (
        "```json\n{\n"
        + "".join(f'  "{k.title()}": "{v.title()}",\n' for k, v in VERDICT.items())
        + "}\n```"
    ),
    "single quotes": "{" + ", ".join(f"'{k}': '{v}'" for k, v in VERDICT.items()) + "}",
    "reasoning with a draft verdict": (
        f"<think>\n{REASONING}\n{json.dumps({**VERDICT, 'label': 'product_defect'})}\n</think>\n"
        + json.dumps(VERDICT)
    ),
    "gate, three findings, slips": (
        "{'findings': [" + ", ".join(json.dumps(FINDING) for _ in range(3)) + ",]}"
    ),
}
NEAR = MAX_ANSWER_CHARS - 10
WORST = {
    "unclosed braces": "{" * NEAR,
    "50,000 empty objects": "{}" * (NEAR // 2),
    "unquoted keys": "{" + "a: b, " * (NEAR // 6) + "}",
    # the repair library's slowest shape we found, at the most a repair is given
    "a broken object of REPAIR_MAX_CHARS": '{"findings": ['
    + ("{a: b}, " * REPAIR_MAX_CHARS)[: REPAIR_MAX_CHARS - 17]
    + "]}",
    "fence line of 100,000 characters": "```" + "a" * (NEAR - 4) + "`",
    "25,000 fence lines": "```\n" * (NEAR // 4),
    "14,000 reasoning tags": "<think>" * (NEAR // 7),
    "a SAME AS line of 100,000 blanks": "SAME AS" + " " * (NEAR - 9) + "x",
    "a valid 100,000-character verdict": json.dumps({**VERDICT, "explanation": "x" * (NEAR - 150)}),
    "a 100,000-character code block": "```python\ndef step(page) -> None:\n"
    + "    page.goto('/')\n" * ((NEAR - 40) // 19)
    + "```",
}


def per_answer(read: Callable[[str], object], text: str, count: int) -> tuple[float, bool]:
    """Microseconds per read, best of five rounds of ``count`` reads, and whether it read."""
    ok = True
    try:
        read(text)
    except UnparseableAnswer:
        ok = False
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(count):
            with contextlib.suppress(UnparseableAnswer):
                read(text)
        rounds.append((time.perf_counter() - started) / count * 1e6)
    return min(rounds), ok


def strict_reader(commit: str) -> ModuleType | None:
    """The answer readers of ``commit``, loaded beside the current ones."""
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:prettyplay_behave/llm/answers.py"], cwd=ROOT,
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    spec = importlib.util.spec_from_loader("prettyplay_behave.llm._strict_answers", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "prettyplay_behave.llm"
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:answers.py", "exec"), module.__dict__)
    return module


def table(title: str, rows: list[tuple[str, float, bool, float | None]]) -> None:
    print(f"\n{title}\n")
    print("| shape | µs per answer | read | strict reader, µs |")
    print("| --- | ---: | --- | ---: |")
    for shape, micros, ok, baseline in rows:
        before = "" if baseline is None else f"{baseline:,.0f}"
        print(f"| {shape} | {micros:,.0f} | {'yes' if ok else 'no'} | {before} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--strict-baseline", default="")
    args = parser.parse_args()
    strict = strict_reader(args.strict_baseline) if args.strict_baseline else None
    read_answer("{'findings': [],}", "gate")  # loads json_repair once

    def verdict(module: ModuleType | None) -> Callable[[str], object]:
        """The current reader (None), or a baseline module's ``parse_verdict``."""
        read = read_answer if module is None else module.parse_verdict
        return lambda text: read(text, "classify" if "findings" not in text else "gate")

    rows = []
    for shape, text in CODE_SHAPES.items():
        micros, ok = per_answer(answers.extract_code, text, args.count)
        baseline = (
            per_answer(strict.extract_code, text, args.count)[0]
            if strict and "strict" in shape
            else None
        )
        rows.append((shape, micros, ok, baseline))
    table(f"Code answers ({args.count:,} reads each, best of 5 rounds)", rows)
    rows = []
    for shape, text in VERDICT_SHAPES.items():
        micros, ok = per_answer(verdict(None), text, args.count)
        baseline = (
            per_answer(verdict(strict), text, args.count)[0]
            if strict and "strict" in shape
            else None
        )
        rows.append((shape, micros, ok, baseline))
    table(f"Verdict answers ({args.count:,} reads each, best of 5 rounds)", rows)
    print("\nAnswers at the size limit, built to be slow (one read each, code and gate verdict)\n")
    print("| answer | chars | code, ms | verdict, ms |")
    print("| --- | ---: | ---: | ---: |")
    worst = 0.0
    for shape, text in WORST.items():
        code = per_answer(answers.extract_code, text, 1)[0] / 1000
        gate = per_answer(lambda t: read_answer(t, "gate"), text, 1)[0] / 1000
        worst = max(worst, code, gate)
        print(f"| {shape} | {len(text):,} | {code:,.1f} | {gate:,.1f} |")
    print(f"\nslowest read at the size limit: {worst:,.0f} ms (target: under 1,000 ms)")
    return 0 if worst < 1000 else 1


if __name__ == "__main__":
    raise SystemExit(main())
