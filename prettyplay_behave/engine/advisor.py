"""The request desk: every request to the LLM about a step, and how its answer is read.

A code request (generate, heal, steer) gives code or an ``unparseable answer`` record. A verdict
request (classify, diagnose) gives a :class:`Verdict`; a garbage answer degrades to
``incurable`` with the raw answer logged, never a retry. The gate gives the candidate back green
or as a ``gate violation``; a gate answer that cannot be read is asked once more, and a gate that
still cannot judge ends the step with a final error that quotes its answer. Every
request is rendered from its template and redacted of secret values before it leaves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..browser.change import PageChange, page_change
from ..browser.snapshot import PageState, neutralise
from ..errors import (
    IncurableStepError,
    ProductDefectError,
    ProviderUnavailableError,
    StepFailedError,
)
from ..llm.answers import MAX_ANSWER_CHARS, GateVerdict, SameAs, UnparseableAnswer, Verdict
from ..llm.purposes import Purpose, Unreadable
from ..log_events import LogEvent, record
from ..safety.limits import cut_text
from ..safety.step_code import dropped_assertions, step_code
from ..vocabulary import Outcome, StepLabel, counted
from .execute import page_url
from .history import Attempt, Gated

if TYPE_CHECKING:
    from ..cache import StepEntry
    from ..llm.client import Answer, LLMClient
    from ..llm.templates import RequestTemplates
    from ..safety.secrets import Secrets
    from .learnt import Judgment
    from .renames import Proposal
    from .state import TestState
    from .step import GroupStepRecord, StepRun

DEFECT_HEADLINE = "the product does not do what the step says"
RUNAWAY_HEAD_CHARS = 2_000
SEEN_LINES = 4  # the changed lines of an earlier step a classification is shown
# the change a candidate made, shown to its gate (the page after it, when the change is too
# large: page_state.CHANGE_PAGE_TOKENS)
CHANGE_TOKENS = 1_500
SHOWN_ANSWER_CHARS = 1_000  # of an unreadable gate answer, in the log and the step's failure


class Advisor:
    """Asks the LLM about the steps of a run; it reads nothing of the page and writes nothing
    of the step: the engine hands it the page states and keeps what it answers."""

    def __init__(self, llm: LLMClient, templates: RequestTemplates, secrets: Secrets) -> None:
        self.llm = llm
        self.templates = templates
        self.secrets = secrets

    @property
    def available(self) -> bool:
        return self.llm.available

    @property
    def code_model(self) -> str:
        """The model that writes step code (recorded with each entry it wrote)."""
        return self.llm.config.model

    def require(self) -> None:
        self.llm.require()

    def _send(self, purpose: Purpose, run: StepRun, **context: Any) -> Answer:
        """Render, redact and send one request about ``run``.

        The user message carries page-derived text outside the untrusted block too (outcome
        texts, URLs, quoted answers): all of it is neutralised, the block's own markers kept.
        """
        page: PageState | None = context.get("page")
        system, user = self.templates.render(purpose, **context)
        user = {**user, "content": _neutralised(user["content"], page)}
        messages = [{**m, "content": self.secrets.redact(m["content"])} for m in (system, user)]
        return self.llm.ask(purpose, step=run.sentence, messages=messages)

    def _step_context(self, test: TestState, run: StepRun) -> dict[str, Any]:
        return {
            "step": run.spec,
            "base_url": test.config.base_url,
            "scenario": test.scenario,
            "history": run.history,
            "evidence": run.evidence,
            "group": run.group,
            "instructions": test.config.instructions,
            "remembered": test.memory.items(),
            "replaced_assertions": step_code(run.code).assertions if run.code else (),
        }

    # -- code ----------------------------------------------------------------------------------

    def code(
        self,
        purpose: Purpose,
        test: TestState,
        run: StepRun,
        page: PageState,
        verdict: Verdict | None = None,
        guidance: str = "",
        restored: str = "",
        closest: Sequence[StepEntry] = (),
    ) -> str | StepEntry | Attempt:
        """One code request about the page as it is (``page``; what ``restored`` says of it),
        listing the library steps ``closest`` to this one; the code, the listed step the answer
        names as doing this one (``SAME AS <number>``), or an ``unparseable answer`` record. A
        ``CANNOT:`` answer raises :class:`CannotAnswer`."""
        context = self._step_context(test, run)
        answer = self._send(
            purpose,
            run,
            page=page,
            verdict=verdict,
            guidance=guidance,
            restored=restored,
            closest=list(closest),
            **context,
        )
        try:
            code: str | SameAs = purpose.read(answer.text, listed=len(closest))
            if isinstance(code, SameAs):
                return _same_step(closest[code.number - 1], code.number, run)
            return code
        except UnparseableAnswer as exc:
            url = page_url(test.page)
            text = f"{exc}\nfinish_reason: {answer.finish_reason}\nanswer:\n{quoted(answer.text)}"
            return Attempt(Outcome.UNPARSEABLE, url, url, "", text)

    # -- verdicts ------------------------------------------------------------------------------

    def classify(
        self,
        test: TestState,
        run: StepRun,
        page: PageState,
        earlier: Judgment | None = None,
    ) -> Verdict:
        """One classify request about a red step: the scenario so far with the code that ran
        for each step (and what it did to the page, with its gate's notes), the step's history,
        the page, and the verdict ``earlier`` given to the same failure in this run."""
        answer = self._send(
            Purpose.CLASSIFY, run, page=page, earlier=earlier, **self._step_context(test, run)
        )
        verdict = self._verdict(Purpose.CLASSIFY, run, answer.text, repr(run.sentence))
        record(
            LogEvent.CLASSIFIED,
            "%r classified %s: %s",
            run.sentence,
            verdict.label,
            verdict.explanation,
        )
        return verdict

    def diagnose(
        self,
        test: TestState,
        prompt: str,
        records: Sequence[GroupStepRecord],
        failed: StepRun,
        page: PageState,
    ) -> Verdict:
        """One diagnose request about a failed group step."""
        context = self._step_context(test, failed)
        context.update(group=prompt, traces=records, failed_step=failed.spec)
        answer = self._send(Purpose.DIAGNOSE, failed, page=page, **context)
        verdict = self._verdict(Purpose.DIAGNOSE, failed, answer.text, f"group {prompt!r}")
        record(
            LogEvent.GROUP_DIAGNOSED,
            "group %r diagnosed %s (root: %r): %s",
            prompt,
            verdict.label,
            verdict.root_step,
            verdict.explanation,
            label=verdict.label,
            root_step=verdict.root_step,
        )
        return verdict

    def _verdict(self, purpose: Purpose, run: StepRun, text: str, about: str) -> Verdict:
        """The verdict of a classify or diagnose answer (``about`` a step or a group); one that
        cannot be read is taken as incurable, as its purpose says, the raw answer logged."""
        assert purpose.unreadable is Unreadable.INCURABLE
        try:
            verdict = purpose.read(text)
        except UnparseableAnswer as exc:
            assert purpose.degraded_event is not None
            record(
                purpose.degraded_event,
                "unparseable %s of %s (%s); taken as incurable; raw answer:\n%s",
                purpose.subject,
                about,
                exc,
                quoted(text),
                raw_answer=quoted(text),
            )
            verdict = Verdict(
                StepLabel.INCURABLE,
                f"the {purpose.subject} answer was unparseable: {exc}",
                "",
                degraded=True,
            )
        assert isinstance(verdict, Verdict)
        return verdict

    # -- the compliance gate ------------------------------------------------------------------

    def gate(
        self,
        test: TestState,
        run: StepRun,
        green: Attempt,
        before: PageState,
        after: PageState,
        *,
        verdict: Verdict | None = None,
        guidance: str = "",
    ) -> Gated:
        """The compliance gate on a green candidate: green again, or a ``gate violation``.

        The request shows what the candidate did (the page ``before`` it ran and ``after``) and
        the verdict or guidance that asked for it.
        """
        context = self._step_context(test, run)
        change = page_change(before, after, CHANGE_TOKENS)
        shown = {
            "page": after,
            "change": change,
            "candidate_outcome": green.outcome,
            "verdict": verdict,
            "candidate_assertions": step_code(green.code).assertions,
            "dropped_assertions": dropped_assertions(run.code, green.code) if run.code else (),
        }
        try:
            review = self._review(
                run,
                guidance=guidance,
                candidate=green.code,
                batch=[],
                renames=[],
                **shown,
                **context,
            )
        except (ProviderUnavailableError, UnreadableReview) as exc:
            unread = exc if isinstance(exc, UnreadableReview) else None
            raise IncurableStepError(
                "the compliance gate could not judge the candidate; nothing was written",
                sentence=run.spec.text,
                error=unread.error if unread else f"{type(exc).__name__}: {exc}",
                details=unread.shown if unread else "",
                code=green.code,
            ) from exc
        for finding in review.findings:
            if not finding.blocking:
                record(
                    LogEvent.GATE_FINDING,
                    "compliance gate (%s, %s) on %r: %s",
                    finding.dimension,
                    finding.severity,
                    run.sentence,
                    finding.message,
                )
        if not review.blocking:
            notes = tuple(f"{f.severity} {f.dimension}: {f.message}" for f in review.findings)
            return Gated(green, _seen(change), notes)
        findings = "\n".join(
            f"{f.severity} {f.dimension}: {f.message}" for f in review.findings if f.blocking
        )
        return Gated(
            Attempt(Outcome.GATE_VIOLATION, green.url_before, green.url_after, green.code, findings)
        )

    def gate_batch(
        self,
        test: TestState,
        run: StepRun,
        healed: str,
        renames: Sequence[tuple[str, str]],
        batch: Sequence[Proposal],
    ) -> list[bool]:
        """One gate request about the locators the heal of ``run`` (its new code,
        ``healed``) renamed, applied to other entries (``batch``); for each, whether it may be
        written. A gate that cannot judge passes none: nothing is written, and each step heals
        on its own when it goes red."""
        context = self._step_context(test, run)
        try:
            review = self._review(
                run,
                guidance="",
                candidate=healed,
                batch=list(batch),
                renames=list(renames),
                page=None,
                change=None,
                candidate_outcome=Outcome.GREEN,
                verdict=None,
                **context,
            )
        except (ProviderUnavailableError, UnreadableReview) as exc:
            record(
                LogEvent.RENAME_NOT_SPREAD,
                "the gate could not judge the rename of %r for %s (%s); they heal on their own",
                run.sentence,
                counted(len(batch), "other entry"),
                exc,
            )
            return [False] * len(batch)
        return _passed(review, len(batch))

    def _review(self, run: StepRun, **context: Any) -> GateVerdict:
        """One gate request, asked once more when its answer cannot be read (a model slips
        now and then, and what waits on the verdict is code that went green); an answer still
        unreadable raises :class:`UnreadableReview`. Each unreadable answer is logged, cut."""
        for again in (True, False):
            answer = self._send(Purpose.GATE, run, **context)
            try:
                review: GateVerdict = Purpose.GATE.read(answer.text)
                return review
            except UnparseableAnswer as exc:
                record(
                    LogEvent.GATE_UNREADABLE,
                    "the gate's answer about %r cannot be read (%s)%s; the answer:\n%s",
                    run.sentence,
                    exc,
                    "; it is asked again" if again else "",
                    cut_text(answer.text, SHOWN_ANSWER_CHARS),
                )
                if not again:
                    raise UnreadableReview(exc, answer) from exc
        raise AssertionError("unreachable: the second unreadable answer raised")


class UnreadableReview(Exception):
    """The gate's answer could not be read, asked twice: the ``error:`` line of the final
    error, and (a cut of) the last answer."""

    def __init__(self, reading: UnparseableAnswer, answer: Answer) -> None:
        self.error = f"UnparseableAnswer: {reading} (asked twice)"
        self.shown = (
            f"the gate's last answer (finish_reason: {answer.finish_reason}):\n"
            + cut_text(answer.text, SHOWN_ANSWER_CHARS)
        )
        super().__init__(self.error)


def _same_step(listed: StepEntry, number: int, run: StepRun) -> StepEntry:
    """The listed step ``number`` an answer names as doing ``run``'s step; UnparseableAnswer
    when its code cannot run with the step's values."""
    values = run.spec.parameters.values
    if listed.takes(values):
        return listed
    named = f"the answer names step {number} (SAME AS {number}), {listed.sentence!r}"
    if listed.values is not None:
        raise UnparseableAnswer(
            f"{named}, whose code spells out the values {', '.join(map(repr, listed.values))}; "
            f"this step's are {', '.join(map(repr, values)) or 'none'}"
        )
    takes = ", ".join(listed.parameters) or "none"
    raise UnparseableAnswer(
        f"{named}, whose code takes {counted(len(listed.parameters), 'parameter')} ({takes}); "
        f"this step has {counted(len(values), 'value')}"
    )


def _seen(change: PageChange) -> tuple[str, ...]:
    """What a kept candidate did to the page, in a few lines: the counts, then changed lines."""
    lines = [f"{before}  =>  {after}" for before, after in change.changed]
    lines += [f"+ {line}" for line in change.appeared] + [
        f"- {line}" for line in change.disappeared
    ]
    more = len(lines) - SEEN_LINES
    kept = lines[:SEEN_LINES] + ([f"… {more} more"] if more > 0 else [])
    return (change.summary, *kept)


def _passed(review: GateVerdict, count: int) -> list[bool]:
    """For each of ``count`` proposals, whether no high finding names it (or all of them)."""
    blocked = {f.entry for f in review.findings if f.blocking}
    if None in blocked:
        return [False] * count
    return [number not in blocked for number in range(1, count + 1)]


def _neutralised(text: str, page: PageState | None) -> str:
    """``text`` with every marker look-alike quoted, but for the real markers of ``page``."""
    if page is None:
        return neutralise(text)
    markers = re.compile(
        re.escape(f'<untrusted-page-data id="{page.fence}">')
        + "|"
        + re.escape(f'</untrusted-page-data id="{page.fence}">')
    )
    pieces = markers.split(text)
    kept = markers.findall(text)
    out = [neutralise(pieces[0])]
    for marker, piece in zip(kept, pieces[1:], strict=True):
        out += [marker, neutralise(piece)]
    return "".join(out)


def verdict_failure(verdict: Verdict, headline: str, failure: StepFailedError) -> StepFailedError:
    """The final error a verdict calls for: a product defect (never healed), or the
    ``failure`` under ``headline`` (an incurable step, a failure when its red is the app's
    answer), both carrying the verdict."""
    if verdict.label == StepLabel.PRODUCT_DEFECT:
        error_type: type[StepFailedError] = ProductDefectError
        headline = DEFECT_HEADLINE
    else:
        error_type = type(failure)
    label = "" if verdict.degraded else str(verdict.label)
    return failure.recast(
        error_type, headline, verdict.explanation, verdict.recommendation, label=label
    )


def quoted(answer: str) -> str:
    """An answer as records and logs keep it: whole, unless it is past the answer size limit,
    where its head stands for it (it would otherwise ride every later request of the step)."""
    if len(answer) <= MAX_ANSWER_CHARS:
        return answer
    head = RUNAWAY_HEAD_CHARS
    return f"{answer[:head]}\n… ({len(answer) - head:,} more characters of a runaway answer)"
