"""What each kind of verdict looks like: its JSON schema and the reader of its fields, side by
side, as one :class:`~.answers.Shape`.

A verdict purpose (``llm/purposes.py``) names its shape here. The schema is what a server that
constrains answers is asked for in ``response_format`` (OpenAI's structured outputs, also
served by Ollama, vLLM, LM Studio, llama.cpp and LiteLLM), and the field names the reader
matches in any spelling. The schemas are not strict: a server that does not enforce every
rule still gets the shape, and the answer is read by :mod:`.answers` either way, whatever the
server made of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..vocabulary import GroupLabel, StepLabel
from .answers import (
    Finding,
    GateVerdict,
    Shape,
    UnparseableAnswer,
    Verdict,
    choice_field,
    text_field,
)

DIMENSIONS = ("instructions", "adequacy")
SEVERITIES = ("high", "medium", "low")

_SEVERITY_KEY = re.compile(r"""["']?severity["']?[ \t]*:""", re.IGNORECASE)


def json_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The JSON schema of an object with ``properties``, ``required`` of them, and no other."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TEXT = {"type": "string"}
_ROOT = {"type": ["string", "null"]}


# -- a step's classification ---------------------------------------------------------------------


def _step_verdict(data: dict[str, Any]) -> Verdict:
    return Verdict(
        label=StepLabel(choice_field(data, "label", StepLabel, "the verdict")),
        explanation=text_field(data, "explanation"),
        recommendation=text_field(data, "recommendation"),
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


def _labelled(labels: Iterable[object], required: list[str]) -> dict[str, Any]:
    """The schema of a labelled verdict: one of ``labels``, why, what to do, the root step."""
    label = {"type": "string", "enum": [str(word) for word in labels]}
    fields = {"label": label, "explanation": _TEXT, "recommendation": _TEXT, "root_step": _ROOT}
    return json_object(fields, required)


CLASSIFICATION = Shape(
    _labelled(StepLabel, ["label", "explanation", "recommendation"]), _step_verdict
)


# -- a group's diagnosis -----------------------------------------------------------------------


def _group_verdict(data: dict[str, Any]) -> Verdict:
    label = GroupLabel(choice_field(data, "label", GroupLabel, "the diagnosis"))
    root = _root(data, "the diagnosis", required=True)
    if label is GroupLabel.RECOVERABLE and root is None:
        raise UnparseableAnswer("a recoverable diagnosis must name its root_step")
    return Verdict(
        label=label,
        explanation=text_field(data, "explanation", "the diagnosis"),
        recommendation=text_field(data, "recommendation", "the diagnosis"),
        root_step=root,
    )


DIAGNOSIS = Shape(
    _labelled(GroupLabel, ["label", "root_step", "explanation", "recommendation"]),
    _group_verdict,
)


# -- the compliance gate's findings ------------------------------------------------------------


def _entry_number(item: dict[str, Any], where: str) -> int | None:
    """The proposal a finding of a batch is about; None (about all) when it names none."""
    value = item.get("entry")
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if type(value) is not int:
        raise UnparseableAnswer(f"{where}: 'entry' must be a number, not {value!r}")
    return value


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
                dimension=choice_field(item, "dimension", DIMENSIONS, where),
                severity=choice_field(item, "severity", SEVERITIES, where),
                message=text_field(item, "message", where),
                entry=_entry_number(item, where),
            )
        )
    return GateVerdict(tuple(findings))


def _check_kept_findings(span: str, data: dict[str, Any]) -> None:
    """A repaired gate verdict must keep every finding the text holds: a repair that dropped a
    broken finding could drop a blocking one."""
    findings = data.get("findings")
    kept = sum(1 for f in findings if isinstance(f, dict)) if isinstance(findings, list) else 0
    if len(_SEVERITY_KEY.findall(span)) > kept:
        raise UnparseableAnswer(
            "the gate verdict is broken JSON whose repair loses findings; expected valid JSON"
        )


GATE_VERDICT = Shape(
    json_object(
        {
            "findings": {
                "type": "array",
                "items": json_object(
                    {
                        "dimension": {"type": "string", "enum": list(DIMENSIONS)},
                        "severity": {"type": "string", "enum": list(SEVERITIES)},
                        "message": _TEXT,
                        "entry": {"type": ["integer", "null"]},
                    },
                    ["dimension", "severity", "message"],
                ),
            }
        },
        ["findings"],
    ),
    _gate_verdict,
    _check_kept_findings,
)
