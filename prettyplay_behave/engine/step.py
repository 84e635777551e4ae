"""What the engine knows of one step and of the scenario around it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cache import CacheKey
from .history import Attempt

ACTION = "step"
CHECK = "expect"


@dataclass(frozen=True)
class StepSpec:
    """One step as written: an action (``step``) or a check (``expect``)."""

    kind: str
    sentence: str
    data: str = ""
    tries: int = 1
    delay: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in (ACTION, CHECK):
            raise ValueError(f"step kind must be {ACTION!r} or {CHECK!r}, not {self.kind!r}")
        if not self.sentence.strip():
            raise ValueError("a step needs a sentence")
        if self.tries < 1:
            raise ValueError(f"tries must be 1 or more, not {self.tries}")
        if self.delay is not None and self.delay < 0:
            raise ValueError(f"delay must be 0 or more seconds, not {self.delay}")

    @property
    def text(self) -> str:
        """The sentence with its data, as it reaches requests and messages."""
        return f"{self.sentence}\n{self.data}" if self.data else self.sentence


@dataclass
class ScenarioEntry:
    """An executed step of the test, as later requests see it; group membership is permanent."""

    kind: str
    sentence: str
    outcome: str
    group: str | None = None
    origin: str = ""
    code: str = ""
    history: list[Attempt] = field(default_factory=list)
    spec: StepSpec | None = None
    key: CacheKey | None = None
    verdicts: list[Any] = field(default_factory=list)  # classifications and diagnoses
    failure: str = ""  # the label of a failure: product_defect, incurable, unavailable, ...
    requests: int = 0  # LLM requests made for this step
    tokens: int = 0


@dataclass(frozen=True)
class Trace:
    """One executed group step, verbatim: recovery never rewrites it."""

    sentence: str
    outcome: str
    url_before: str
    url_after: str
