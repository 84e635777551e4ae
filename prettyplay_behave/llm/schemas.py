"""What a verdict looks like as a JSON schema, for servers that constrain answers to one.

A verdict request (classify, diagnose, gate) may carry its schema in ``response_format``
(OpenAI's structured outputs, also served by Ollama, vLLM, LM Studio, llama.cpp and LiteLLM).
The schemas are not strict: a server that does not enforce every rule still gets the shape,
and the answer is read by :mod:`.answers` either way, whatever the server made of it.
"""

from __future__ import annotations

from typing import Any

from ..vocabulary import GroupLabel, StepLabel
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

CLASSIFICATION_SCHEMA = _object(
    {
        "label": {"type": "string", "enum": [str(label) for label in StepLabel]},
        "explanation": _TEXT,
        "recommendation": _TEXT,
        "root_step": _ROOT,
    },
    ["label", "explanation", "recommendation"],
)
DIAGNOSIS_SCHEMA = _object(
    {
        "label": {"type": "string", "enum": [str(label) for label in GroupLabel]},
        "root_step": _ROOT,
        "explanation": _TEXT,
        "recommendation": _TEXT,
    },
    ["label", "root_step", "explanation", "recommendation"],
)
GATE_SCHEMA = _object(
    {
        "findings": {
            "type": "array",
            "items": _object(
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
)


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` of a verdict request whose answer has ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": f"prettyplay_{name}", "schema": schema, "strict": False},
    }
