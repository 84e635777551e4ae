"""Reading the LLM's answers: step code from a fenced block, verdicts from one JSON object.

Pure functions, no I/O. Whatever does not meet the contract raises :class:`UnparseableAnswer`
with the reason; the caller records it as an ``unparseable answer`` attempt.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..vocabulary import GroupLabel, Purpose, StepLabel

# A step is a few lines; an answer this long is a runaway generation, not code to read.
MAX_ANSWER_CHARS = 100_000

DIMENSIONS = ("instructions", "adequacy")
SEVERITIES = ("high", "medium", "low")

_OPENING = re.compile(r"^ {0,3}(`{3,})[ \t]*([^`\s]*)[^`]*$")


class UnparseableAnswer(ValueError):
    """An answer that does not meet the answer contract; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Verdict:
    """A classify or diagnose verdict; ``root_step`` names the earliest affected step (required
    of a diagnosis, optional for a classification)."""

    label: StepLabel | GroupLabel
    explanation: str
    recommendation: str
    root_step: str | None = None


@dataclass(frozen=True)
class Finding:
    """One compliance-gate finding."""

    dimension: str
    severity: str
    message: str

    @property
    def blocking(self) -> bool:
        return self.severity == "high"


@dataclass(frozen=True)
class GateVerdict:
    """The compliance gate's findings; an empty tuple is a clean candidate."""

    findings: tuple[Finding, ...]

    @property
    def blocking(self) -> bool:
        """True when any finding is high: the candidate must not be cached."""
        return any(f.blocking for f in self.findings)


@dataclass(frozen=True)
class _Block:
    info: str
    body: str


def _check_size(text: str) -> None:
    if len(text) > MAX_ANSWER_CHARS:
        raise UnparseableAnswer(
            f"the answer is {len(text):,} characters long; the limit is {MAX_ANSWER_CHARS:,}"
        )


def _fenced_blocks(text: str) -> list[_Block]:
    """The backtick-fenced blocks of a markdown text, in order."""
    blocks = []
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        opening = _OPENING.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"^ {{0,3}}`{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:
            raise UnparseableAnswer("a code block is never closed (the answer looks truncated)")
        blocks.append(_Block(info, "\n".join(lines[i + 1 : end])))
        i = end + 1
    return blocks


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def extract_code(text: str) -> str:
    """The step code of a code answer: exactly one fenced python block defining ``step``."""
    _check_size(text)
    blocks = _fenced_blocks(text)
    if len(blocks) != 1:
        raise UnparseableAnswer(
            f"the answer holds {_plural(len(blocks), 'code block')}; expected exactly one"
        )
    block = blocks[0]
    if block.info not in ("", "python", "py", "python3"):
        raise UnparseableAnswer(f"the code block is marked {block.info!r}; expected python")
    code = textwrap.dedent(block.body).strip("\n")
    if not code.strip():
        raise UnparseableAnswer("the code block is empty")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise UnparseableAnswer(f"the code does not parse: line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise UnparseableAnswer(f"the code does not parse: {exc}") from None
    steps = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step"]
    if not steps:
        raise UnparseableAnswer("the code block does not define the function step(page)")
    args = steps[0].args
    if len(args.posonlyargs) + len(args.args) != 1 or args.vararg or args.kwonlyargs:
        raise UnparseableAnswer("step must take exactly one parameter: def step(page) -> None")
    return code + "\n"


def _json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped:
        raise UnparseableAnswer("the answer is empty; expected one JSON object")
    blocks = _fenced_blocks(stripped)
    if len(blocks) > 1:
        raise UnparseableAnswer(
            f"the answer holds {len(blocks)} code blocks; expected one JSON object"
        )
    if blocks:
        if blocks[0].info not in ("", "json"):
            raise UnparseableAnswer(f"the block is marked {blocks[0].info!r}; expected json")
        stripped = blocks[0].body.strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise UnparseableAnswer(f"the answer is not valid JSON: {exc}") from None
    except RecursionError:
        raise UnparseableAnswer("the answer is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise UnparseableAnswer(f"the answer is a JSON {type(data).__name__}; expected an object")
    return data


def _text(data: dict[str, Any], key: str, where: str = "the verdict") -> str:
    if key not in data:
        raise UnparseableAnswer(f"{where} lacks the field {key!r}")
    value = data[key]
    if not isinstance(value, str):
        raise UnparseableAnswer(f"{where}: the field {key!r} must be a string")
    return value


def _choice(data: dict[str, Any], key: str, allowed: Iterable[str], where: str) -> str:
    value = _text(data, key, where).strip().lower()
    allowed = [str(word) for word in allowed]
    if value not in allowed:
        raise UnparseableAnswer(f"{where}: {key} {data[key]!r} is not one of {', '.join(allowed)}")
    return value


def _step_verdict(data: dict[str, Any]) -> Verdict:
    return Verdict(
        label=StepLabel(_choice(data, "label", StepLabel, "the verdict")),
        explanation=_text(data, "explanation"),
        recommendation=_text(data, "recommendation"),
        root_step=_root(data, "the verdict", required=False),
    )


def _root(data: dict[str, Any], where: str, required: bool) -> str | None:
    """The ``root_step`` of a verdict, stripped; None when it is null, empty or absent."""
    if "root_step" not in data:
        if required:
            raise UnparseableAnswer(f"{where} lacks the field 'root_step'")
        return None
    root = data["root_step"]
    if root is not None and not isinstance(root, str):
        raise UnparseableAnswer(f"{where}: the field 'root_step' must be a string")
    return root.strip() if root and root.strip() else None


def _group_verdict(data: dict[str, Any]) -> Verdict:
    label = GroupLabel(_choice(data, "label", GroupLabel, "the diagnosis"))
    root = _root(data, "the diagnosis", required=True)
    if label is GroupLabel.RECOVERABLE and root is None:
        raise UnparseableAnswer("a recoverable diagnosis must name its root_step")
    return Verdict(
        label=label,
        explanation=_text(data, "explanation", "the diagnosis"),
        recommendation=_text(data, "recommendation", "the diagnosis"),
        root_step=root,
    )


def _gate_verdict(data: dict[str, Any]) -> GateVerdict:
    if "findings" not in data:
        raise UnparseableAnswer("the gate verdict lacks the field 'findings'")
    items = data["findings"]
    if not isinstance(items, list):
        raise UnparseableAnswer("the gate verdict: 'findings' must be a list")
    findings = []
    for number, item in enumerate(items):
        where = f"gate finding {number}"
        if not isinstance(item, dict):
            raise UnparseableAnswer(f"{where} is not an object")
        findings.append(
            Finding(
                dimension=_choice(item, "dimension", DIMENSIONS, where),
                severity=_choice(item, "severity", SEVERITIES, where),
                message=_text(item, "message", where),
            )
        )
    return GateVerdict(tuple(findings))


_VERDICT_PARSERS: dict[Purpose, Callable[[dict[str, Any]], Verdict | GateVerdict]] = {
    Purpose.CLASSIFY: _step_verdict,
    Purpose.DIAGNOSE: _group_verdict,
    Purpose.GATE: _gate_verdict,
}


def parse_verdict(text: str, purpose: Purpose | str) -> Verdict | GateVerdict:
    """The verdict of an answer to a verdict purpose (classify, diagnose, gate)."""
    parser = _VERDICT_PARSERS.get(Purpose.of(purpose))
    if parser is None:
        raise ValueError(f"no verdict for purpose {purpose!r}; expected classify, diagnose or gate")
    _check_size(text)
    return parser(_json_object(text))
