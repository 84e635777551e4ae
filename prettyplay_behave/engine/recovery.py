"""Group recovery: a failing group step is diagnosed with its group, and the row from the root
step through the failed step is regenerated step by step.

One cycle: a ``diagnose`` request (the classification model, the group prompt, the traces, the
page and the failed step's history) decides ``recoverable | product_defect | incurable``; for
``recoverable`` every step of the row heals as its own unit with a fresh healing counter. A repeat
failure starts a fresh diagnosis while cycles remain; cycles are capped per group prompt per test
by ``healing_attempts``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import IncurableStepError, ProductDefectError, StepFailedError
from ..events import record
from ..llm.answers import UnparseableAnswer, Verdict, parse_verdict
from .executor import DEFECT_HEADLINE, INCURABLE, PRODUCT_DEFECT, StepCycle, quoted
from .step import ScenarioEntry, Trace

if TYPE_CHECKING:
    from .executor import StepExecutor, TestRun

RECOVERABLE = "recoverable"


class GroupRecovery:
    """Recovers one group of one test; the members are its executed steps, in order."""

    def __init__(
        self,
        executor: StepExecutor,
        test: TestRun,
        prompt: str,
        traces: Sequence[Trace],
        members: Sequence[ScenarioEntry],
    ) -> None:
        self.executor = executor
        self.test = test
        self.prompt = prompt
        self.traces = traces
        self.members = members

    def recover(self, failed: ScenarioEntry, failure: StepFailedError) -> None:
        """Recover from ``failure`` of ``failed``, or raise the terminal error.

        A terminal (not a product defect) passes the steering gate with the group context first.
        """
        self.failed = failed
        try:
            self._cycles(failed, failure)
        except IncurableStepError as terminal:
            assert self.failed.spec is not None and self.failed.key is not None
            cycle = StepCycle(
                self.executor, self.test, self.failed.spec, self.failed.key, self.failed
            )
            if not cycle.steer(terminal):
                raise

    def _cycles(self, failed: ScenarioEntry, failure: StepFailedError) -> None:
        while self.test.recovery_cycles.get(self.prompt, 0) < self.test.config.healing_attempts:
            self.test.recovery_cycles[self.prompt] = (
                self.test.recovery_cycles.get(self.prompt, 0) + 1
            )
            verdict = self.diagnose(failed)
            repeat = self.run_row(self.row(verdict, failed, failure), verdict)
            if repeat is None:
                return
            failed, failure = repeat
            self.failed = failed
        cap = self.test.config.healing_attempts
        raise failure.recast(
            IncurableStepError, f"the group's recovery cycles are exhausted ({cap})"
        )

    def diagnose(self, failed: ScenarioEntry) -> Verdict:
        """One diagnose request; a garbage answer degrades to ``incurable``, never a retry."""
        assert failed.spec is not None
        messages = self.executor.render(
            "diagnose",
            group=self.prompt,
            traces=self.traces,
            failed_step=failed.spec,
            base_url=self.test.config.base_url,
            scenario=self.test.scenario,
            history=failed.history,
            page=self.executor.page_state(self.test),
            instructions=self.test.config.instructions,
        )
        answer = self.executor.llm.ask(
            "diagnose", step=failed.sentence, messages=messages, verdict=True
        )
        try:
            verdict = parse_verdict(answer.text, "diagnose")
        except UnparseableAnswer as exc:
            record(logging.WARNING, "group_diagnosis_degraded",
                   "unparseable diagnosis of group %r (%s); taken as incurable; raw answer:\n%s",
                   self.prompt, exc, quoted(answer.text),
                   raw_answer=quoted(answer.text))  # fmt: skip
            degraded = Verdict(INCURABLE, f"the diagnosis answer was unparseable: {exc}", "")
            failed.verdicts.append(degraded)
            return degraded
        assert isinstance(verdict, Verdict)
        failed.verdicts.append(verdict)
        record(logging.INFO, "group_diagnosed", "group %r diagnosed %s (root: %r): %s",
               self.prompt, verdict.label, verdict.root_step, verdict.explanation,
               label=verdict.label, root_step=verdict.root_step)  # fmt: skip
        return verdict

    def row(
        self, verdict: Verdict, failed: ScenarioEntry, failure: StepFailedError
    ) -> list[ScenarioEntry]:
        """The steps to regenerate: from the root step through the failed step."""
        if verdict.label != RECOVERABLE:
            error_type: type[StepFailedError] = IncurableStepError
            headline = "the group cannot recover"
            if verdict.label == PRODUCT_DEFECT:
                error_type, headline = ProductDefectError, DEFECT_HEADLINE
            raise failure.recast(error_type, headline, verdict.explanation, verdict.recommendation)
        last = self.members.index(failed)
        root = next(
            (i for i, m in enumerate(self.members[: last + 1]) if m.sentence == verdict.root_step),
            None,
        )
        if root is None:
            outside = f"the diagnosis traces the failure to {verdict.root_step!r}, a step outside"
            raise failure.recast(
                IncurableStepError, outside + " the group", verdict.explanation,
                verdict.recommendation,
            )  # fmt: skip
        return list(self.members[root : last + 1])

    def run_row(
        self, row: list[ScenarioEntry], verdict: Verdict
    ) -> tuple[ScenarioEntry, IncurableStepError] | None:
        """Regenerate each row step on the current page, gated and written back per step.

        Returns the step that failed again and its failure, or None when the whole row healed.
        """
        for entry in row:
            assert entry.spec is not None and entry.key is not None
            try:
                StepCycle(self.executor, self.test, entry.spec, entry.key, entry).heal(verdict)
            except IncurableStepError as repeat:
                return entry, repeat
            record(logging.INFO, "group_row_recovered", "group %r recovered step %r",
                   self.prompt, entry.sentence)  # fmt: skip
        return None
