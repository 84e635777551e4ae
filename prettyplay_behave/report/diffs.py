"""What a run rewrote in the cache: the old and the new code of an entry as a unified diff, and
the verdict or guidance that caused the rewrite.

A heal, a group row's recovery and a steered turn replace code a step already had; the engine
keeps the code it replaced (``StepRun.replaced``). A reviewer reads the change as a diff
beside its cause: the classification of a healed step, the group diagnosis of a recovered one
(booked on the group step that failed, which may be a later one), the guidance of a steered one.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..safety.step_code import dropped_assertions
from ..vocabulary import Origin

if TYPE_CHECKING:
    from ..engine.state import TestState
    from ..engine.step import StepRun
    from ..llm.answers import Verdict


def unified_diff(old: str, new: str, old_label: str, new_label: str) -> list[str]:
    """The unified diff of two codes, line by line (no line endings); empty when equal."""
    return list(
        difflib.unified_diff(old.splitlines(), new.splitlines(), old_label, new_label, lineterm="")
    )


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff and what it is: ``added``, ``removed``, ``hunk``, ``file``
    (the ``---``/``+++`` labels) or ``context``."""

    text: str
    tone: str


def diff_lines(lines: Sequence[str]) -> list[DiffLine]:
    marked: list[DiffLine] = []
    for line in lines:
        if line.startswith(("--- ", "+++ ")) and len(marked) < 2:
            tone = "file"
        elif line.startswith("@@"):
            tone = "hunk"
        elif line.startswith("+"):
            tone = "added"
        elif line.startswith("-"):
            tone = "removed"
        else:
            tone = "context"
        marked.append(DiffLine(line, tone))
    return marked


@dataclass(frozen=True)
class Change:
    """A rewrite of this run: the diff of its code and what caused it."""

    origin: Origin
    lines: list[DiffLine]
    verdict: Verdict | None  # the classification (healed) or the group diagnosis (recovered)
    guidance: str  # the engineer's guidance (steered)
    note: str = ""  # why, for new code that came without a verdict (a rename, a heal reused)
    dropped: tuple[str, ...] = ()  # the assertions of the old code the new one no longer makes


def cause(test: TestState, run: StepRun) -> Verdict | None:
    """The verdict that started a rewrite: the run's own last verdict, or for a row step
    recovered without one, the diagnosis booked on the later group step that failed."""
    if run.verdicts:
        return run.verdicts[-1]
    place = next((i for i, other in enumerate(test.scenario) if other is run), None)
    for other in test.scenario[place + 1 :] if place is not None else []:
        if other.group == run.group and other.verdicts:
            return other.verdicts[-1]
    return None


def change_of(test: TestState, run: StepRun, redact: Callable[[str], str]) -> Change | None:
    """The change a rewrite of the step's code made (``run.replaced`` to ``run.code``),
    redacted; None when nothing rewrote it."""
    if run.replaced is None or run.origin is None:
        return None
    lines = unified_diff(redact(run.replaced), redact(run.code), "cached", str(run.origin))
    verdict = None if run.healed_by else cause(test, run)
    dropped = tuple(redact(a) for a in dropped_assertions(run.replaced, run.code))
    return Change(run.origin, diff_lines(lines), verdict, run.guidance, run.healed_by, dropped)
