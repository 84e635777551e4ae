"""The words of the step cycle, each written once.

Every member is a ``str`` whose value is the word as it appears in cache files, requests, log
records, the summary and the report, so it compares equal to that word and formats as it.
Adding an origin or a label is one member here (plus what is genuinely new: a branch of the
cycle). The purposes of LLM requests live with all that follows from them, in
``llm/purposes.py``.
"""

from __future__ import annotations

from enum import Enum


def words(text: str) -> frozenset[str]:
    """A table of names written as the words of a text (one word per name)."""
    return frozenset(text.split())


def counted(number: int, noun: str) -> str:
    """A count and its noun, singular for one: ``1 test``, ``2 tests``, ``1 entry``,
    ``3 entries``, ``1,024 requests``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{number:,} {noun if number == 1 else plural}"


class Word(str, Enum):
    """A str-valued enum member that prints as its value on every Python version."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __repr__(self) -> str:  # records print as they did with plain strings
        return repr(str(self.value))


class Kind(Word):
    """What a step is: an action performs its sentence (``t.step``), a check asserts it
    (``t.expect``). Format-1 cache files wrote them ``step`` and ``expect``, which still read."""

    ACTION = "action"
    CHECK = "check"

    @classmethod
    def _missing_(cls, value: object) -> Kind | None:
        return {"step": cls.ACTION, "expect": cls.CHECK}.get(str(value))


class Meaning(Word):
    """What a step's code is asked to do (:mod:`prettyplay_behave.meaning`): an action performs
    its sentence, a precondition makes the condition it states hold, a check asserts it."""

    ACTION = "action"
    PRECONDITION = "precondition"
    CHECK = "check"


class Origin(Word):
    """How a step's code came to be in this run. Every origin but ``replayed`` is written to
    the cache as the entry's origin."""

    REPLAYED = "replayed"
    REUSED = "reused"  # a miss made green by code that went green for the same step this run
    GENERATED = "generated"
    HEALED = "healed"
    RECOVERED = "recovered"
    STEERED = "steered"
    # no code: the model answered that the step cannot be written; kept red with its reason
    CANNOT = "cannot"

    @property
    def passes(self) -> bool:
        """Whether a step's code of this origin can pass."""
        return self is not Origin.CANNOT

    @property
    def stored(self) -> bool:
        """Whether a cache entry may carry this origin."""
        return self is not Origin.REPLAYED

    @property
    def tone(self) -> str:
        """The report's colour of the origin: code that ran as committed, or new code."""
        return "plain" if self is Origin.REPLAYED else "new"


class Outcome(Word):
    """The outcome label of one record of a step's attempt history."""

    GREEN = "green"
    RED = "red"
    UNPARSEABLE = "unparseable answer"
    POLICY_VIOLATION = "policy violation"
    GATE_VIOLATION = "gate violation"
    REJECTED = "rejected by the engineer, not executed"

    @property
    def tone(self) -> str:
        return "good" if self is Outcome.GREEN else "bad"


class StepStatus(Word):
    """Where a step of a test stands."""

    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    # a group step that failed and was made green by its group's recovery
    PASSED_AFTER_RECOVERY = "passed after recovery"

    @property
    def tone(self) -> str:
        return "bad" if self is StepStatus.FAILED else "good"


class StepLabel(Word):
    """A classification of one red step."""

    PRODUCT_DEFECT = "product_defect"
    ROT = "rot"
    FIXABLE = "fixable"
    INCURABLE = "incurable"

    @property
    def healable(self) -> bool:
        """The app changed or the code is wrong: new code may make the step green."""
        return self in (StepLabel.ROT, StepLabel.FIXABLE)


class GroupLabel(Word):
    """A diagnosis of a failed group."""

    RECOVERABLE = "recoverable"
    PRODUCT_DEFECT = "product_defect"
    INCURABLE = "incurable"


class FailureKind(Word):
    """How a failed step is counted in the summary and the report."""

    PRODUCT_DEFECT = "product_defect"
    INCURABLE = "incurable"
    UNAVAILABLE = "unavailable"
    CONFIGURATION = "configuration"
    CACHE = "cache"
    ERROR = "error"
