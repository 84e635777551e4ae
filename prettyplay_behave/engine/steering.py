"""The steering gate: where a human may guide a stuck step, and what a steering part gets.

Every ``IncurableStepError`` passes the gate before it propagates. The gate opens only when
``interactive`` is on, the run is not strict, ``CI`` is unset and the LLM is there; the part
behind it (the terminal dialog of :mod:`prettyplay_behave.interactive`, given to the engine by
the runtime) decides whether it can talk to someone at all. A part works on a
:class:`StuckStep`: the step, its failure and history, and what it may do about them: ask for
code with guidance, run code once on the live page, gate a green candidate, keep it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..config import in_ci

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from ..config import TestConfig
    from ..errors import IncurableStepError
    from .history import Attempt
    from .step import ScenarioEntry


@dataclass(frozen=True)
class StuckStep:
    """A step about to end with a final error, and the engine's services a steering part may use."""

    entry: ScenarioEntry  # its spec, its history (every turn joins it) and its group
    failure: IncurableStepError  # what propagates unless a turn goes green
    current_page: Callable[[], Page]  # the test's page now (a clean page for a turn is new)
    ask: Callable[[str], str | Attempt]  # a steer request with this guidance: code, or a record
    execute: Callable[[str], Attempt]  # one execution on the live page (no re-runs)
    gate: Callable[[Attempt, str], Attempt]  # the compliance gate, judging the guidance too
    keep: Callable[[str, str], None]  # write the code back as steered, with its guidance
    snapshot: Callable[[], str]  # the page's accessibility snapshot, redacted
    redact: Callable[[str], str]  # what anything shown of the page passes through
    # whether a picture of the page may be taken: not of a test that types a secret (a picture
    # cannot be redacted) unless its screenshot policy is ``on``
    pictures: bool = True

    @property
    def page(self) -> Page:
        """The test's page as it is now."""
        return self.current_page()


class Steering(Protocol):
    """A steering part: True when it made the stuck step green (and kept its code)."""

    def steer(self, stuck: StuckStep) -> bool: ...


def steering_allowed(config: TestConfig, llm_available: bool) -> bool:
    """The gate's rules: opt-in, never strict, never in CI, never without the LLM."""
    return config.interactive and not config.strict and not in_ci() and llm_available
