"""Reading the LLM's answers: step code from the one block that defines ``step``, verdicts from
the first JSON object that fits.

Answers are read the way models of every size write them. Reasoning blocks (``<think>…</think>``
and its kin) are dropped first, so a draft inside one is never taken for the answer. Code is the
one fenced block (backticks or tildes, marked ``python``/``py``/``py3`` in any case, or unmarked)
that parses and defines ``step``, or, with no fence at all, the whole answer when it does. A
verdict is the first JSON object of the answer (in a fence or in prose) that fits its shape;
common slips (trailing commas, single quotes, missing commas) are repaired with ``json_repair``;
labels, dimensions, severities and field names match whatever their case and separators.

Pure functions, no I/O, linear in the answer's length (the JSON repair of one object is bounded
by ``REPAIR_MAX_CHARS``). Whatever cannot be read raises :class:`UnparseableAnswer` with the
reason; the caller records it as an ``unparseable answer`` attempt.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..safety.step_code import step_code, without_annotations
from ..vocabulary import GroupLabel, StepLabel

# A step is a few lines; an answer this long is a runaway generation, not code to read.
MAX_ANSWER_CHARS = 100_000
# A broken JSON object longer than this is not repaired: a verdict is a few sentences, and the
# repair library's time grows faster than the text on some broken shapes.
REPAIR_MAX_CHARS = 4_000
# Verdicts nest three levels deep at most; deeper text is not a verdict.
MAX_JSON_DEPTH = 32
# The JSON objects of an answer tried as its verdict, first to last.
MAX_JSON_OBJECTS = 100

PYTHON_MARKS = ("", "python", "py", "python3", "py3")

# Reasoning tags: <think> </think>, <thinking>, <reasoning>, <thought>, the <|...|> spellings
# (<|thinking|> <|/thinking|>, <|begin_of_thought|> <|end_of_thought|>) and [THINK] [/THINK].
# Fixed alternatives with no repetition inside: one finditer pass is linear.
_REASONING_TAG = re.compile(
    r"<(\|?)(/|end_of_|end_|begin_of_|start_)?(think|thinking|thought|reasoning)\1>"
    r"|\[(/)?think\]",
    re.IGNORECASE,
)
_FINAL_CHANNEL = "<|channel|>final<|message|>"  # gpt-oss's harmony format, unparsed by a server
_JSON_TOKEN = re.compile(r'[{}"\\]')


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
    degraded: bool = False  # an answer that could not be read, taken as incurable


@dataclass(frozen=True)
class Finding:
    """One compliance-gate finding."""

    dimension: str
    severity: str
    message: str
    entry: int | None = None  # in a batch: the number of the proposal it is about (from 1)

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
    mark: str  # the language the fence names, lower case ("" when unmarked)
    body: str
    closed: bool


def _check_size(text: str) -> None:
    if len(text) > MAX_ANSWER_CHARS:
        raise UnparseableAnswer(
            f"the answer is {len(text):,} characters long; the limit is {MAX_ANSWER_CHARS:,}"
        )


def _norm(word: str) -> str:
    """A word for matching: lower case, letters and digits only (``Product Defect`` ->
    ``productdefect``, as ``product-defect`` and ``product_defect``)."""
    return "".join(ch for ch in word.lower() if ch.isalnum())


# -- reasoning blocks ---------------------------------------------------------------------------


def without_reasoning(text: str) -> str:
    """``text`` without its reasoning blocks; UnparseableAnswer when nothing else is left.

    A closing tag with no opening one (a server whose chat template opened the block in the
    prompt) makes everything before it reasoning. An opening tag that is never closed makes
    everything after it reasoning.
    """
    final = text.rfind(_FINAL_CHANNEL)
    if final >= 0:
        text = text[final + len(_FINAL_CHANNEL) :].replace("<|return|>", "").replace("<|end|>", "")
    kept: list[str] = []
    start, depth, opened, seen = 0, 0, "", False
    for tag in _REASONING_TAG.finditer(text):
        closing = bool(tag.group(4)) or (tag.group(2) or "").lower() in ("/", "end_", "end_of_")
        seen = True
        if not closing:
            if depth == 0:
                kept.append(text[start : tag.start()])
                opened = tag.group(0)
            depth += 1
        elif depth:
            depth -= 1
            start = tag.end() if depth == 0 else start
        else:
            kept, start = [], tag.end()
    if depth == 0:
        kept.append(text[start:])
    answer = "".join(kept)
    if seen and not answer.strip():
        if depth:
            raise UnparseableAnswer(
                f"the answer is only reasoning: its {opened} block is never closed (the answer "
                "looks cut off)"
            )
        raise UnparseableAnswer("the answer is only reasoning: nothing follows its reasoning block")
    return answer


# -- code answers -------------------------------------------------------------------------------


def _opening(line: str) -> tuple[str, str] | None:
    """The fence and the language mark of a fence's opening line, else None."""
    stripped = line.lstrip(" \t")
    char = stripped[:1]
    if char not in ("`", "~"):
        return None
    run = len(stripped) - len(stripped.lstrip(char))
    info = stripped[run:].strip()
    if run < 3 or (char == "`" and "`" in info):
        return None
    word = info.lstrip("{.").split(maxsplit=1)[0] if info.lstrip("{.") else ""
    mark = re.match(r"[\w+-]*", word)
    return stripped[:run], (mark.group(0) if mark else "").lower()


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def _fenced_blocks(text: str) -> list[_Block]:
    """The fenced blocks of a markdown text, in order; a last one may be unclosed."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opening = _opening(lines[i])
        if opening is None:
            i += 1
            continue
        fence, mark = opening
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], fence)), None)
        body = "\n".join(lines[i + 1 : end if end is not None else len(lines)])
        blocks.append(_Block(mark, body, end is not None))
        i = len(lines) if end is None else end + 1
    return blocks


@dataclass(frozen=True)
class _Reading:
    code: str
    step: ast.FunctionDef | None  # the top-level ``def step``, when the code parses
    reason: str  # why it is not step code, when ``step`` is None


def _read(text: str, what: str = "the code block") -> _Reading:
    code = textwrap.dedent(text).strip("\n")
    if not code.strip():
        return _Reading(code, None, f"{what} is empty")
    read = step_code(code + "\n")  # the text the answer gives, parsed once for the whole run
    if read.tree is None:
        return _Reading(code, None, f"the code does not parse: {read.unparsed}")
    if read.step is None:
        return _Reading(code, None, f"{what} does not define the function step(page)")
    return _Reading(code, read.step, "")


def _step_code(reading: _Reading) -> str:
    assert reading.step is not None
    args = reading.step.args
    if len(args.posonlyargs) + len(args.args) < 1 or args.vararg or args.kwonlyargs:
        raise UnparseableAnswer(
            "step must take page, then the step's parameters if any: def step(page) -> None"
        )
    return without_annotations(reading.code + "\n")


def _bare_code(answer: str) -> str:
    """A code answer without any fence: the whole answer, when it is step code."""
    lines = answer.rstrip().split("\n")
    while lines and lines[-1].strip() and not lines[-1].strip().strip("`~"):
        lines.pop()  # a closing fence with no opening one
    if not "".join(lines).strip():
        raise UnparseableAnswer("the answer holds 0 code blocks and is empty")
    reading = _read("\n".join(lines), "it")
    if reading.step is None:
        raise UnparseableAnswer(
            f"the answer holds 0 code blocks and is not step code itself ({reading.reason})"
        )
    return _step_code(reading)


class CannotAnswer(Exception):
    """A code answer that says the step cannot be written: ``CANNOT: <reason>``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


MAX_REASON_CHARS = 300
# The answer's first line, once markdown emphasis is off it: ``CANNOT: …``, ``**CANNOT:** …``.
_CANNOT = re.compile(r"^[\s*_>#`]*CANNOT\s*:[\s*_`]*(?P<reason>.*?)[\s*_`]*$", re.IGNORECASE)


def _cannot(answer: str) -> str | None:
    """The reason of a ``CANNOT:`` answer (its first line, or the line after), else None."""
    lines = [line for line in answer.strip().split("\n") if line.strip()]
    found = _CANNOT.match(lines[0]) if lines else None
    if found is None:
        return None
    reason = found.group("reason").strip() or (lines[1].strip() if len(lines) > 1 else "")
    reason = " ".join(reason.split()) or "no reason given"
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[:MAX_REASON_CHARS] + "…"
    return reason


@dataclass(frozen=True)
class SameAs:
    """A generation answer that names one of the library steps its request listed as doing
    this step: ``SAME AS <number>``."""

    number: int  # from 1, as the request numbers them


# A line of its own, markdown emphasis aside: ``SAME AS 2``, ``**SAME AS: 2**``, ``same as step 2``.
# Read in two unambiguous steps, so that a long line costs its length, not its square.
_SAME_AS = re.compile(r"[\s*_>#`]*SAME\s+AS\b(?P<rest>.*)", re.IGNORECASE)
_LISTED_NUMBER = re.compile(r"(?:step\s*)?#?(?P<number>\d{1,9})", re.IGNORECASE)
# A line that starts a definition of step, in a fence or not: beside a SAME AS, which one the
# model meant cannot be told.
_DEFINES_STEP = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+step\b", re.MULTILINE)


def _named_number(line: str) -> int | None:
    """The number a ``SAME AS <number>`` line names, else None."""
    same = _SAME_AS.match(line)
    number = _LISTED_NUMBER.fullmatch(same["rest"].strip(" \t*_`:.")) if same else None
    return int(number["number"]) if number else None


def _same_as(answer: str, listed: int) -> SameAs | None:
    """The listed step a ``SAME AS <number>`` line names, else None; UnparseableAnswer when it
    names none of the ``listed`` steps, or several."""
    named = (_named_number(line) for line in answer.split("\n"))
    numbers = sorted({number for number in named if number is not None})
    if not numbers:
        return None
    if len(numbers) > 1:
        lines = ", ".join(f"SAME AS {number}" for number in numbers)
        raise UnparseableAnswer(
            f"the answer names {len(numbers)} listed steps ({lines}); expected one"
        )
    number = numbers[0]
    if not listed:
        raise UnparseableAnswer(
            f"the answer names a listed step (SAME AS {number}), but the request listed none"
        )
    if not 1 <= number <= listed:
        raise UnparseableAnswer(
            f"the answer names step {number} (SAME AS {number}), but the request listed "
            f"{listed} (numbered from 1)"
        )
    return SameAs(number)


def extract_code(text: str, listed: int = 0) -> str | SameAs:
    """The step code of a code answer: the one block (or the bare answer) defining ``step``;
    or, for a request that listed ``listed`` library steps, the one a ``SAME AS <number>`` line
    names. An answer whose first line is ``CANNOT: <reason>`` raises :class:`CannotAnswer`."""
    _check_size(text)
    answer = without_reasoning(text.replace("\r\n", "\n"))
    reason = _cannot(answer)
    if reason is not None:
        raise CannotAnswer(reason)
    same = _same_as(answer, listed)
    blocks = [b for b in _fenced_blocks(answer) if b.closed or b.body.strip()]
    if same is not None:
        if _DEFINES_STEP.search(answer):
            raise UnparseableAnswer(
                f"the answer both names a listed step (SAME AS {same.number}) and gives code "
                "that defines step; expected one of them"
            )
        return same
    if not blocks:
        return _bare_code(answer)
    if not blocks[-1].closed:
        raise UnparseableAnswer("a code block is never closed (the answer looks truncated)")
    python = [b for b in blocks if b.mark in PYTHON_MARKS]
    if not python:
        marks = ", ".join(repr(b.mark) for b in blocks)
        if len(blocks) == 1:
            raise UnparseableAnswer(f"the code block is marked {marks}; expected python")
        raise UnparseableAnswer(f"the code blocks are marked {marks}; expected one python block")
    readings = [_read(b.body) for b in python]
    defining = [r for r in readings if r.step is not None]
    if len(defining) == 1:
        return _step_code(defining[0])
    if defining:
        raise UnparseableAnswer(
            f"the answer holds {len(defining)} code blocks that define step; expected exactly one"
        )
    if len(readings) == 1:
        raise UnparseableAnswer(readings[0].reason)
    reasons = "; ".join(f"block {n}: {r.reason}" for n, r in enumerate(readings, 1))
    raise UnparseableAnswer(
        f"none of the {len(readings)} code blocks defines step(page): {reasons}"
    )


# -- verdict answers ----------------------------------------------------------------------------


def _objects(text: str) -> tuple[list[str], bool]:
    """The outermost ``{…}`` spans of ``text`` in order (braces inside double-quoted strings
    left alone), and whether an object is left open at the end."""
    spans: list[str] = []
    depth = start = 0
    in_string = False
    escaped_at = -1  # the position a backslash escapes
    for token in _JSON_TOKEN.finditer(text):
        at, char = token.start(), token.group(0)
        if at == escaped_at or (depth == 0 and char != "{"):
            continue
        if in_string:
            if char == "\\":
                escaped_at = at + 1
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char == "{":
            start = at if depth == 0 else start
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                spans.append(text[start : at + 1])
    return spans, depth > 0


def _depth(span: str) -> int:
    deepest = depth = 0
    for char in span:
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
    return deepest


def _loads(span: str, budget: list[int]) -> tuple[Any, bool]:
    """The object of one ``{…}`` span and whether it needed a repair; UnparseableAnswer when
    it cannot be read. ``budget`` holds the characters still allowed to the repair."""
    try:
        return json.loads(span), False
    except json.JSONDecodeError as exc:
        problem = f"the answer is not valid JSON: {exc}"
    except RecursionError:
        raise UnparseableAnswer("the answer is not valid JSON: nested too deeply") from None
    if len(span) > min(REPAIR_MAX_CHARS, budget[0]) or _depth(span) > MAX_JSON_DEPTH:
        raise UnparseableAnswer(problem)
    budget[0] -= len(span)
    import json_repair  # loaded only when a slip needs repairing

    try:
        data = json_repair.loads(span, skip_json_loads=True)
    except (ValueError, RecursionError):
        raise UnparseableAnswer(problem) from None
    if not isinstance(data, dict):  # prose in braces, not an object with slips
        raise UnparseableAnswer(problem)
    return data, True


def _canonical(data: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``data`` with field names spelled as ``schema`` names them, where no exact one is given
    (``Root Step`` -> ``root_step``), and so the objects of its lists."""
    properties: dict[str, Any] = schema.get("properties", {})
    names = {_norm(name): name for name in properties}
    renamed = dict(data)
    for key in data:
        name = names.get(_norm(key)) if isinstance(key, str) else None
        if name and name not in renamed:
            renamed[name] = renamed.pop(key)
    for name, field in properties.items():
        items, value = field.get("items"), renamed.get(name)
        if isinstance(items, dict) and "properties" in items and isinstance(value, list):
            renamed[name] = [_canonical(i, items) if isinstance(i, dict) else i for i in value]
    return renamed


def text_field(data: dict[str, Any], key: str, where: str = "the verdict") -> str:
    """The string ``data[key]``; UnparseableAnswer, naming ``where``, when it is not one."""
    if key not in data:
        raise UnparseableAnswer(f"{where} lacks the field {key!r}")
    value = data[key]
    if not isinstance(value, str):
        raise UnparseableAnswer(f"{where}: the field {key!r} must be a string")
    return value


def choice_field(data: dict[str, Any], key: str, allowed: Iterable[str], where: str) -> str:
    """The word of ``allowed`` that ``data[key]`` spells, whatever its case and separators."""
    value = _norm(text_field(data, key, where))
    allowed = [str(word) for word in allowed]
    for word in allowed:
        if _norm(word) == value:
            return word
    raise UnparseableAnswer(f"{where}: {key} {data[key]!r} is not one of {', '.join(allowed)}")


@dataclass(frozen=True)
class Shape:
    """The shape of one kind of verdict (``llm/verdicts.py`` holds them): its JSON schema, which
    a server that constrains answers is asked for and whose field names are matched in any
    spelling; how its fields are read from the JSON object; and what a repaired object must
    still hold (a repair must not lose a finding)."""

    schema: dict[str, Any]
    read: Callable[[dict[str, Any]], Verdict | GateVerdict]
    check_repair: Callable[[str, dict[str, Any]], None] = lambda span, data: None


def _fitting(span: str, shape: Shape, budget: list[int]) -> Verdict | GateVerdict:
    data, repaired = _loads(span, budget)
    if not isinstance(data, dict):
        raise UnparseableAnswer(f"the answer is a JSON {type(data).__name__}; expected an object")
    data = _canonical(data, shape.schema)
    if repaired:
        shape.check_repair(span, data)
    return shape.read(data)


def _no_object(answer: str, unclosed: bool) -> UnparseableAnswer:
    """Why an answer without a closed ``{…}`` holds no verdict."""
    stripped = answer.strip()
    if not stripped:
        return UnparseableAnswer("the answer is empty; expected one JSON object")
    if unclosed:
        return UnparseableAnswer(
            "the answer is not valid JSON: an object is never closed (the answer looks truncated)"
        )
    try:
        data = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return UnparseableAnswer("the answer is not valid JSON: it holds no JSON object")
    return UnparseableAnswer(f"the answer is a JSON {type(data).__name__}; expected an object")


def read_verdict(text: str, shape: Shape) -> Verdict | GateVerdict:
    """The verdict of an answer: the first JSON object of the answer that fits ``shape``."""
    _check_size(text)
    answer = without_reasoning(text)
    spans, unclosed = _objects(answer)
    if not spans:
        raise _no_object(answer, unclosed)
    budget, reasons = [REPAIR_MAX_CHARS], []
    for span in spans[:MAX_JSON_OBJECTS]:
        try:
            return _fitting(span, shape, budget)
        except UnparseableAnswer as exc:
            reasons.append(exc.reason)
    if len(reasons) == 1:
        raise UnparseableAnswer(reasons[0])
    raise UnparseableAnswer(f"{reasons[0]} (and none of the other {len(reasons) - 1} fits either)")
