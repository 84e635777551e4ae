"""What the engine knows of one step: the step as written, and its run in the scenario."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..cache import CacheKey, StepEntry
from ..meaning import meaning_of
from ..parameters import Parameters, parameterize
from ..vocabulary import FailureKind, Kind, Meaning, Origin, Outcome, StepStatus
from .history import Attempt, Gated

if TYPE_CHECKING:
    from ..llm.answers import Verdict
    from .evidence import Evidence


StepIdentity = tuple[Kind, str, str]  # what makes two steps the same: kind, sentence, data


@dataclass(frozen=True)
class StepSpec:
    """One step as written: an action or a check, its sentence and data, tries and delay."""

    kind: Kind
    sentence: str
    data: str = ""
    tries: int = 1
    delay: float | None = None
    outline: str = ""  # the Outline step it was made from, with its <placeholders>

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            kinds = " or ".join(repr(str(k)) for k in Kind)
            raise ValueError(f"step kind must be {kinds}, not {self.kind!r}") from None
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

    @property
    def meaning(self) -> Meaning:
        """What its code is asked to do: perform, make its stated condition hold, or check."""
        return meaning_of(self.kind, self.sentence)

    @property
    def parameters(self) -> Parameters:
        """Its sentence's template, and the names and values of its parameters."""
        return parameterize(self.sentence, self.outline)

    @property
    def family(self) -> StepIdentity:
        """What makes two steps share code whatever their values: kind, template and data."""
        return self.kind, self.parameters.template, self.data

    @property
    def identity(self) -> StepIdentity:
        """What makes two steps the same step, whatever their test: kind, sentence and data."""
        return self.kind, self.sentence, self.data


@dataclass
class StepRun:
    """An executed step of the test, as later requests see it; group membership is permanent."""

    spec: StepSpec
    key: CacheKey
    group: str | None = None
    outcome: StepStatus = StepStatus.RUNNING
    origin: Origin | None = None
    code: str = ""
    history: list[Attempt] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # classifications and diagnoses
    failure: FailureKind | None = None
    error: str = ""  # the final error a failed step ended with, as rendered
    requests: int = 0  # LLM requests made for this step
    tokens: int = 0
    replaced: str | None = None  # the code a rewrite of this run replaced (heal, recovery, steer)
    guidance: str = ""  # the engineer's guidance of a steered turn that was kept
    healed_by: str = ""  # why new code replaced its code without a verdict of its own
    notes: list[str] = field(default_factory=list)  # what its last run met: unhandled dialogs
    cached: StepEntry | None = None  # the library entry its code came from, or was written as
    turned_green: bool = False  # a step kept red that went green in this run
    # a red replay: what its cached code's locators found when it last passed, and find now
    evidence: Evidence | None = None
    # what its kept code did to the page, as its gate saw it, and the gate's notes on it: the
    # evidence a later classification of the scenario gets
    seen: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    # the step whose verdict for the same failure this step took, with no request of its own
    verdict_taken_from: str = ""

    @property
    def kind(self) -> Kind:
        return self.spec.kind

    @property
    def sentence(self) -> str:
        return self.spec.sentence

    @property
    def meaning(self) -> Meaning:
        """What its code was asked to do: an action, a precondition or a check."""
        return self.spec.meaning

    def gated(self, judged: Gated) -> Attempt:
        """The candidate as its gate judged it; a green one's evidence is kept on the run."""
        if judged.attempt.outcome is Outcome.GREEN:
            self.seen, self.findings = judged.seen, judged.findings
        return judged.attempt


@dataclass(frozen=True)
class GroupStepRecord:
    """One executed group step, verbatim (a trace of ``g.traces``): recovery never rewrites it."""

    sentence: str
    outcome: StepStatus
    url_before: str
    url_after: str


def step_code_error(failure: BaseException) -> BaseException | None:
    """What the failed step's own code raised last (see ``StepCodeError``), for the cause a
    final error is shown with; None when the step's code never raised."""
    run = getattr(failure, "step_run", None)
    history = run.history if isinstance(run, StepRun) else []
    return next((a.error for a in reversed(history) if a.error is not None), None)


def shown_error(failure: BaseException, full: bool) -> BaseException:
    """A final error as a run shows it, caused by what the step code's own lines raised:
    without prettyplay's frames, or with ``full`` as raised, through all of them."""
    cause = step_code_error(failure)
    if not full:
        failure = failure.with_traceback(None)
    if cause is not None:
        failure.__cause__, failure.__suppress_context__ = cause, True
    return failure


def shown_text(error: BaseException) -> str:
    """An error as a run prints it when tracebacks are short: the step code's own lines where
    it raised (its cause), then the error's message, with no frame of the runner's or of
    prettyplay's."""
    shown = traceback.TracebackException.from_exception(error)
    shown.stack = traceback.StackSummary()
    return "".join(shown.format()).rstrip("\n")
