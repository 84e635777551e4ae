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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from ..cache import StepEntry
from ..config import in_ci
from ..llm.answers import CannotAnswer
from ..llm.purposes import Purpose
from ..vocabulary import Outcome
from .clean_page import CleanPage, Execute
from .history import Attempt

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from ..browser.snapshot import PageState
    from ..config import TestConfig
    from ..errors import IncurableStepError
    from ..safety.secrets import Secrets
    from .advisor import Advisor
    from .page_state import Pages
    from .state import TestState
    from .step import StepRun


@dataclass(frozen=True)
class StuckStep:
    """A step about to end with a final error, and the engine's services a steering part may use."""

    step_run: StepRun  # its spec, its history (every turn joins it) and its group
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


def stuck_step(
    test: TestState,
    step_run: StepRun,
    failure: IncurableStepError,
    advisor: Advisor,
    pages: Pages,
    secrets: Secrets,
    execute: Execute,
    keep: Callable[[str, str, Attempt | None], None],
) -> StuckStep:
    """What a steering part gets for ``step_run``: each turn starts on the page as it was before
    the step (the failed attempts and each red turn may have changed it); ``execute`` runs
    code on the test's page, ``keep`` writes code back as steered with its guidance."""
    once = replace(step_run.spec, tries=1)  # the settle window never re-arms inside the dialog
    seen: dict[str, PageState] = {}  # the page as it was before the last execution
    ran: dict[str, Attempt] = {}  # each code's last green execution: what its locators found
    page = CleanPage(test, pages, execute, dirty=test.renewable)

    def ask(guidance: str) -> str | Attempt:
        seen["before"] = page.get()
        try:
            code = advisor.code(
                Purpose.STEER,
                test,
                step_run,
                seen["before"],
                guidance=guidance,
                restored=page.restored,
            )
        except CannotAnswer as cannot:  # the engineer reads it and guides again
            url = test.page.url
            return Attempt(Outcome.UNPARSEABLE, url, url, "", f"CANNOT: {cannot.reason}")
        assert not isinstance(code, StepEntry)  # a steering request lists no library steps
        return code

    def once_on_the_page(code: str) -> Attempt:
        if "before" not in seen:  # a part that runs code it did not ask for
            seen["before"] = pages.now(test)
        attempt = execute(test, once, code, False)
        page.dirty = True
        if attempt.outcome is Outcome.GREEN:
            ran[code] = attempt
        return attempt

    return StuckStep(
        step_run=step_run,
        failure=failure,
        current_page=lambda: test.page,
        ask=ask,
        execute=once_on_the_page,
        gate=lambda green, guidance: step_run.gated(
            advisor.gate(
                test,
                step_run,
                green,
                seen["before"],
                pages.after_candidate(test),
                guidance=guidance,
            )
        ),
        keep=lambda code, guidance: keep(code, guidance, ran.get(code)),
        snapshot=lambda: secrets.redact(test.page.locator("body").aria_snapshot()),
        redact=secrets.redact,
        pictures=not test.uses_secrets or test.config.screenshot == "on",
    )
