"""The attempt history of one step, shared by every request about that step.

Records are complete: the outcome label, the URL before -> after, the whole code and the whole
outcome text. Nothing is truncated or collapsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cache import Found
from ..safety.policy import Reach
from ..vocabulary import Outcome


@dataclass(frozen=True)
class Attempt:
    outcome: Outcome
    url_before: str
    url_after: str
    code: str
    text: str
    failed_check: bool = False  # a check whose assertion failed: the product may be at fault
    notes: tuple[str, ...] = ()  # what the execution met on the page: dialogs nobody handled
    reach: Reach = Reach.ACTS  # how far what its code did may still be on its way
    # the page a red execution left, redacted: its URL, and the HTTP error status of its
    # document when it had one ("http://shop/checkout (HTTP 501)"); a final error names it
    page: str = ""
    # what the step code raised, for the traceback of a final error (not compared, not shown)
    error: BaseException | None = field(default=None, compare=False, repr=False)
    found: tuple[Found, ...] = ()  # what the locators of a watched green run found

    @property
    def headline(self) -> str:
        """The first line of the outcome text (or the outcome label): the ``error:`` line."""
        return self.text.splitlines()[0] if self.text else str(self.outcome)

    def render(self) -> str:
        return (
            f"outcome: {self.outcome}\nURL: {self.url_before} -> {self.url_after}\n"
            f"code:\n{self.code}\n{self.text}"
        )


@dataclass(frozen=True)
class Gated:
    """The gate's judgment of a green candidate: the candidate green again, or a ``gate
    violation``; for a green one, what it did to the page in a few lines and the gate's notes
    (the evidence later requests about the scenario get)."""

    attempt: Attempt
    seen: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
