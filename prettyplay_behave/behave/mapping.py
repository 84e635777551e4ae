"""From Gherkin to prettyplay: step kinds, trailing parameters, data."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..engine.step import StepSpec
from ..vocabulary import Kind

# A trailing "[tries=2, delay=0.5]" annotation.
_ANNOTATION = re.compile(r"\s*\[\s*(\w+\s*=\s*[^\]=,]+(?:\s*,\s*\w+\s*=\s*[^\]=,]+)*)\s*\]\s*$")
_PARAMETERS = {"tries": int, "delay": float}


def split_annotation(sentence: str) -> tuple[str, dict[str, Any]]:
    """The sentence without its trailing parameters, and the parameters."""
    match = _ANNOTATION.search(sentence)
    if not match:
        return sentence, {}
    parameters: dict[str, Any] = {}
    for item in match.group(1).split(","):
        name, _, text = (part.strip() for part in item.partition("="))
        if name not in _PARAMETERS:
            raise ValueError(
                f"unknown step parameter {name!r} in {sentence!r}; known: {', '.join(_PARAMETERS)}"
            )
        try:
            parameters[name] = _PARAMETERS[name](text)
        except ValueError:
            raise ValueError(
                f"step parameter {name}={text!r} in {sentence!r} is not a number"
            ) from None
    return sentence[: match.start()].rstrip(), parameters


def render_table(headings: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    lines = [" | ".join(headings)] + [" | ".join(row) for row in rows]
    return "\n".join(f"| {line} |" for line in lines)


def step_data(text: str | None, table: Any) -> str:
    """The step's docstring or table as text: part of the request and of the cache address."""
    if table is not None:
        return render_table(table.headings, (row.cells for row in table.rows))
    return text or ""


def step_spec(
    step_type: str, name: str, text: str | None = None, table: Any = None, outline: str = ""
) -> StepSpec:
    """Given/When (and And/But after them) are actions; Then (and after it) are checks.
    ``outline`` is the Outline step the step was made from, for its placeholders."""
    sentence, parameters = split_annotation(name)
    kind = Kind.CHECK if step_type == "then" else Kind.ACTION
    template = split_annotation(outline)[0] if outline else ""
    return StepSpec(kind, sentence, step_data(text, table), outline=template, **parameters)


def outline_of(scenario: Any, step: Any) -> str:
    """The sentence of the Outline step ``step`` was made from (with its ``<placeholders>``),
    or "" for a step of a plain scenario: behave fills the placeholders in before a step runs,
    and the Outline's own step says which parts of the sentence were placeholders."""
    outline = getattr(scenario, "parent", None)
    if outline is None or not hasattr(outline, "examples"):
        return ""
    for made, written in (
        (scenario.steps, outline.steps),
        (getattr(scenario, "background_steps", None) or [], _background_steps(scenario)),
    ):
        for index, candidate in enumerate(made):
            if candidate is step and index < len(written):
                return str(written[index].name)
    return ""


def _background_steps(scenario: Any) -> list[Any]:
    background = getattr(scenario, "background", None)
    return list(getattr(background, "steps", None) or [])
