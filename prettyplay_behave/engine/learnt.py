"""What a run learnt of its steps, as named records: the engine's routing reads them to
spend fewer requests (reuse, heals served again, renames tried first, verdicts given once,
recovery cycles counted), and only the engine writes them, through the methods here.

A library entry is addressed by its :data:`Place`: the cache file and the entry's identity.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..address import feature_of, scenario_of
from .renames import Rename
from .step import StepIdentity

if TYPE_CHECKING:
    from ..llm.answers import Verdict

Place = tuple[Path, tuple[object, ...]]  # a cache file and an entry's identity in it
Signature = tuple[str, str]  # a failure's error (numbers aside) and the locator it waited for


@dataclass(frozen=True)
class GreenCode:
    """Code that went green for a step of this run."""

    test: str
    sentence: str
    code: str

    @property
    def feature(self) -> str:
        return feature_of(self.test)


@dataclass(frozen=True)
class HealedCode:
    """The code that last rewrote a step's entry in this run, and the test it healed in."""

    test: str
    code: str


class Judgment(NamedTuple):
    """The verdict a failure was given in this run: the step it was given for, that step's
    kind and sentence template, its test (the scenario), the library entry it replayed (None:
    it had none) and the failure as its step saw it."""

    sentence: str
    verdict: Verdict
    template: tuple[str, str] = ("", "")
    test: str = ""
    entry: Place | None = None
    failure: str = ""

    @property
    def scenario(self) -> str:
        """The scenario of its test, as a reader names it."""
        return scenario_of(self.test)


@dataclass
class Learnt:
    """What the run learnt of its steps (see the module docstring)."""

    # by step family, newest first
    green: dict[StepIdentity, list[GreenCode]] = field(default_factory=dict)
    heals: dict[StepIdentity, HealedCode] = field(default_factory=dict)
    # the steps (test, occurrence) each library entry served green
    served: dict[Place, set[tuple[str, int]]] = field(default_factory=dict)
    # gated renames of entries, tried first when their step comes up (see ``renames``)
    renames: dict[Place, Rename] = field(default_factory=dict)
    spread: set[tuple[str, str]] = field(default_factory=set)  # locator changes already spread
    judgments: dict[Signature, Judgment] = field(default_factory=dict)
    # the recovery cycles each group prompt of each test had: (test, prompt) -> cycles
    recovery_cycles: Counter[tuple[str, str]] = field(default_factory=Counter)

    def went_green(
        self, family: StepIdentity, found: GreenCode, place: Place | None, occurrence: int
    ) -> None:
        """A step went green with ``found``; ``place``: the library entry it replayed."""
        known = self.green.setdefault(family, [])
        same = (found.sentence, found.code)
        known[:] = [found, *(k for k in known if (k.sentence, k.code) != same)]
        if place is not None:
            self.served.setdefault(place, set()).add((found.test, occurrence))

    def served_elsewhere(self, place: Place, test: str, occurrence: int) -> bool:
        """Whether the entry at ``place`` went green for another step of this run."""
        return bool(self.served.get(place, set()) - {(test, occurrence)})

    def green_for(self, family: StepIdentity, feature: str) -> list[GreenCode]:
        """Code that went green for the step family: the same feature's first, newest first."""
        return sorted(self.green.get(family, []), key=lambda known: known.feature != feature)

    def next_recovery_cycle(self, test: str, prompt: str, cycles: int) -> bool:
        """Start one more recovery cycle of the group ``prompt`` in ``test``; False once
        ``cycles`` cycles for that prompt are spent."""
        if self.recovery_cycles[test, prompt] >= cycles:
            return False
        self.recovery_cycles[test, prompt] += 1
        return True
