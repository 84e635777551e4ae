"""Every purpose of an LLM request, each defined once, here.

A purpose is what a request is for, and everything that follows from it: its word (the
``X-Prettyplay-Purpose`` header, its line in the summary), its template (``<purpose>.j2``),
the model it goes to (a verdict goes to ``classification_model``), the JSON schema its answer is
asked for in (verdicts only), how its answer is read, and what happens when the answer cannot be
read. The client, the request desk (``engine/advisor.py``) and the docs' table of purposes
(docs/llm-providers.md, kept true by ``tests/unit/test_purposes.py``) all read it from here.

Adding a purpose is one member below and its template; see docs/contributing.md.
"""

from __future__ import annotations

from typing import Any

from ..log_events import LogEvent
from ..vocabulary import Word
from .answers import Shape, extract_code, read_verdict
from .verdicts import CLASSIFICATION, DIAGNOSIS, GATE_VERDICT


class Unreadable(Word):
    """What becomes of an answer that cannot be read."""

    RECORDED = "a red attempt (unparseable answer) in the step's history; the loop goes on"
    INCURABLE = "taken as incurable, the raw answer logged; never a retry"
    FINAL = (
        "asked once more; still unreadable, nothing is written and the step ends with a final"
        " error quoting the answer"
    )


class Purpose(Word):
    """What an LLM request is for, and all that follows from it (see the module docstring)."""

    task: str  # what it asks, for the docs' table
    shape: Shape | None  # a verdict's shape (its schema and reader, llm/verdicts.py); None: code
    unreadable: Unreadable
    subject: str  # what its answer is, in messages: "code", "classification", ...
    degraded_event: LogEvent | None  # the log event of an answer taken as incurable
    lists_closest: bool  # its request lists the library's closest steps; SAME AS names one

    def __new__(
        cls,
        value: str,
        task: str,
        shape: Shape | None,
        unreadable: Unreadable,
        subject: str,
        degraded_event: LogEvent | None = None,
        lists_closest: bool = False,
    ) -> Purpose:
        member = str.__new__(cls, value)
        member._value_ = value
        member.task = task
        member.shape = shape
        member.unreadable = unreadable
        member.subject = subject
        member.degraded_event = degraded_event
        member.lists_closest = lists_closest
        return member

    # fmt: off
    GENERATE = ("generate", "write a step's code, or name a library step that does it", None,
                Unreadable.RECORDED, "code", "", True)
    HEAL = ("heal", "rewrite a step's failed code, given a verdict", None, Unreadable.RECORDED,
            "code")
    CLASSIFY = ("classify", "label a red step product_defect, rot, fixable or incurable",
                CLASSIFICATION, Unreadable.INCURABLE, "classification",
                LogEvent.CLASSIFICATION_DEGRADED)
    DIAGNOSE = ("diagnose", "diagnose a failed group and name its root step", DIAGNOSIS,
                Unreadable.INCURABLE, "diagnosis", LogEvent.GROUP_DIAGNOSIS_DEGRADED)
    GATE = ("gate", "review a green candidate (project rules and adequacy) before it is cached",
            GATE_VERDICT, Unreadable.FINAL, "gate verdict")
    STEER = ("steer", "rewrite a stuck step's code with an engineer's guidance", None,
             Unreadable.RECORDED, "code")
    # fmt: on

    @classmethod
    def of(cls, value: str) -> Purpose:
        """The purpose named ``value``; a ValueError names the known ones."""
        for member in cls:
            if member.value == value:
                return member
        raise ValueError(f"unknown purpose {value!r}; expected one of {', '.join(cls)}")

    @property
    def verdict(self) -> bool:
        """Whether its answer is a verdict (JSON, from the classification model) or code."""
        return self.shape is not None

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema of a verdict's answer; None for code."""
        return None if self.shape is None else self.shape.schema

    def read(self, text: str, listed: int = 0) -> Any:
        """The answer ``text`` as code (str), a :class:`~.answers.SameAs` naming one of the
        ``listed`` library steps its request showed, or a verdict; UnparseableAnswer when it is
        none of them."""
        return extract_code(text, listed) if self.shape is None else read_verdict(text, self.shape)

    @property
    def template(self) -> str:
        """The jinja2 template that renders its messages."""
        return f"{self.value}.j2"

    @property
    def response_format(self) -> dict[str, Any] | None:
        """What a verdict request carries in ``response_format``; None for code."""
        if self.schema is None:
            return None
        return {
            "type": "json_schema",
            "json_schema": {"name": f"prettyplay_{self}", "schema": self.schema, "strict": False},
        }


def docs_row(purpose: Purpose) -> str:
    """The row of ``purpose`` in the docs' table of purposes (docs/llm-providers.md)."""
    model = "`classification_model`" if purpose.verdict else "`model`"
    answer = f"a verdict (JSON, {purpose.subject})" if purpose.verdict else "code"
    return (
        f"| `{purpose}` | {purpose.task} | `{purpose.template}` | {answer} | {model} | "
        f"{purpose.unreadable} |"
    )


def read_answer(text: str, purpose: Purpose | str) -> Any:
    """The answer ``text`` to a request for ``purpose``, read as that purpose reads it."""
    return Purpose.of(purpose).read(text)
