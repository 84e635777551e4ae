"""What a verdict looks like as a JSON schema, for servers that constrain answers to one.

A verdict request (classify, diagnose, gate) may carry its schema in ``response_format``
(OpenAI's structured outputs, also served by Ollama, vLLM, LM Studio, llama.cpp and LiteLLM).
The schemas are not strict: a server that does not enforce every rule still gets the shape,
and the answer is read by :mod:`.answers` either way, whatever the server made of it.
"""

from __future__ import annotations

from typing import Any

from ..vocabulary import GroupLabel, Purpose, StepLabel
from .answers import DIMENSIONS, SEVERITIES


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TEXT = {"type": "string"}
_ROOT = {"type": ["string", "null"]}

VERDICT_SCHEMAS: dict[Purpose, dict[str, Any]] = {
    Purpose.CLASSIFY: _object(
        {
            "label": {"type": "string", "enum": [str(label) for label in StepLabel]},
            "explanation": _TEXT,
            "recommendation": _TEXT,
            "root_step": _ROOT,
        },
        ["label", "explanation", "recommendation"],
    ),
    Purpose.DIAGNOSE: _object(
        {
            "label": {"type": "string", "enum": [str(label) for label in GroupLabel]},
            "root_step": _ROOT,
            "explanation": _TEXT,
            "recommendation": _TEXT,
        },
        ["label", "root_step", "explanation", "recommendation"],
    ),
    Purpose.GATE: _object(
        {
            "findings": {
                "type": "array",
                "items": _object(
                    {
                        "dimension": {"type": "string", "enum": list(DIMENSIONS)},
                        "severity": {"type": "string", "enum": list(SEVERITIES)},
                        "message": _TEXT,
                    },
                    ["dimension", "severity", "message"],
                ),
            }
        },
        ["findings"],
    ),
}


def response_format(purpose: Purpose) -> dict[str, Any] | None:
    """The ``response_format`` of a request for ``purpose``; None for a code purpose."""
    schema = VERDICT_SCHEMAS.get(purpose)
    if schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": f"prettyplay_{purpose}", "schema": schema, "strict": False},
    }
