"""The attempt history of one step, shared by every request about that step.

Records are complete: the outcome label, the URL before -> after, the whole code and the whole
outcome text. Nothing is truncated or collapsed.
"""

from __future__ import annotations

from dataclasses import dataclass

GREEN = "green"
RED = "red"
UNPARSEABLE = "unparseable answer"
POLICY_VIOLATION = "policy violation"
GATE_VIOLATION = "gate violation"
REJECTED = "rejected by the engineer, not executed"
OUTCOMES = (GREEN, RED, UNPARSEABLE, POLICY_VIOLATION, GATE_VIOLATION, REJECTED)


@dataclass(frozen=True)
class Attempt:
    outcome: str
    url_before: str
    url_after: str
    code: str
    text: str
    failed_check: bool = False  # a check whose assertion failed: the product may be at fault

    def render(self) -> str:
        return (
            f"outcome: {self.outcome}\nURL: {self.url_before} -> {self.url_after}\n"
            f"code:\n{self.code}\n{self.text}"
        )
