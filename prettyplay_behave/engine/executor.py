"""The step cycle: replay from the cache, or generate; classify and heal what breaks.

Routing of one step::

    cache hit  -> replay -> green -> done (no LLM call)
               -> red  -> strict: one classify request (when the LLM is there), fail with it
                       -> classify: product_defect -> ProductDefectError (never healed)
                                    rot | fixable  -> the heal loop -> gate -> write back
                                    incurable      -> IncurableStepError
    cache miss -> strict: IncurableStepError naming the step and the cache file
               -> the generation loop -> policy -> execute -> gate -> write
                  (a failed check is classified at once; an exhausted budget is classified)

Every non-green attempt joins the step's attempt history, which rides every later request of
that step; record 0 of a heal is the failed replay.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.sync_api import Error as PlaywrightError

from ..browser.snapshot import PageState, capture
from ..cache import CacheEntry, CacheKey, CacheStore
from ..errors import (
    CacheError,
    CodePolicyError,
    ConfigError,
    IncurableStepError,
    ProductDefectError,
    ProviderUnavailableError,
    StepFailedError,
    describe_exception,
)
from ..events import Events, record
from ..llm.answers import (
    MAX_ANSWER_CHARS,
    GateVerdict,
    UnparseableAnswer,
    Verdict,
    extract_code,
    parse_verdict,
)
from ..llm.prompts import Prompts
from ..safety.sandbox import compile_step, run_step
from ..safety.secrets import Secrets, secret_names
from .history import GATE_VIOLATION, GREEN, POLICY_VIOLATION, RED, UNPARSEABLE, Attempt
from .settle import Settler
from .steering import SteeringDialog, Terminal, steering_allowed
from .step import CHECK, ScenarioEntry, StepSpec

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from ..browser.guard import NavigationGuard
    from ..config import PrettyConfig
    from ..llm.client import LLMClient

REPLAYED = "replayed"
GENERATED = "generated"
HEALED = "healed"
RECOVERED = "recovered"

PRODUCT_DEFECT = "product_defect"
INCURABLE = "incurable"
HEALABLE = ("rot", "fixable")
DEFECT_HEADLINE = "the product does not do what the step says"
RUNAWAY_HEAD_CHARS = 2_000
STRICT = " (strict: replay only)"


@dataclass
class TestRun:
    """The state of one test around its steps: page, scenario so far, occurrence counts."""

    name: str
    config: PrettyConfig
    page: Page
    settler: Settler
    owned_context: BrowserContext | None = None
    guard: NavigationGuard | None = None
    tracing: bool = False  # a Playwright trace is being recorded for this test
    uses_secrets: bool = False  # then screenshots and traces are kept only when asked for
    failed_elsewhere: bool = False  # a step outside prettyplay (a user's own) failed
    screenshot: Path | None = None  # artifacts of a failure, kept in report_dir
    trace: Path | None = None
    started: float = field(default_factory=time.monotonic)
    duration: float = 0.0
    scenario: list[ScenarioEntry] = field(default_factory=list)
    recovery_cycles: dict[str, int] = field(default_factory=dict)  # per group prompt
    _seen: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def key_for(self, spec: StepSpec) -> CacheKey:
        """The cache address: identical earlier steps of this test count as occurrences."""
        triple = (spec.kind, spec.sentence, spec.data)
        self._seen[triple] = self._seen.get(triple, 0) + 1
        return CacheKey(self.name, spec.kind, spec.sentence, spec.data, self._seen[triple])

    @property
    def failed(self) -> bool:
        return self.failed_elsewhere or any(e.outcome == "failed" for e in self.scenario)

    def drop_trace(self) -> None:
        """Stop and discard this test's trace: screenshots in a trace cannot be redacted."""
        if self.tracing:
            self.tracing = False
            self.page.context.tracing.stop()

    def close(self) -> None:
        """Close the context this test opened (a page handed in stays open)."""
        self.duration = time.monotonic() - self.started
        context, self.owned_context = self.owned_context, None
        if context is None:
            return
        try:
            context.close()
        except PlaywrightError:
            browser = context.browser
            if browser is not None and browser.is_connected():
                raise  # a browser that is gone took its contexts with it; anything else is real


class StepExecutor:
    """Runs steps for every test of a run; shares the cache, the LLM client and the hooks."""

    def __init__(
        self, cache: CacheStore, llm: LLMClient, prompts: Prompts, events: Events, secrets: Secrets
    ) -> None:
        self.cache = cache
        self.llm = llm
        self.prompts = prompts
        self.events = events
        self.secrets = secrets
        self.cache_writes = 0  # entries written (changed) in this run

    def render(self, purpose: str, **context: Any) -> list[dict[str, str]]:
        """A request's messages, with every secret value redacted: nothing of it leaves."""
        messages = self.prompts.render(purpose, **context)
        return [{**m, "content": self.secrets.redact(m["content"])} for m in messages]

    def page_state(self, test: TestRun) -> PageState:
        return capture(test.page, redact=self.secrets.redact)

    def run(self, test: TestRun, spec: StepSpec, group: str | None = None) -> ScenarioEntry:
        key = test.key_for(spec)
        entry = ScenarioEntry(spec.kind, spec.sentence, "running", group, spec=spec, key=key)
        cycle = StepCycle(self, test, spec, key, entry)
        self.events.emit("on_step_started", spec.sentence)
        usage_before = self.llm.total_usage
        try:
            if spec.delay:
                test.page.wait_for_timeout(spec.delay * 1000)
            cycle.run()
            entry.outcome = "passed"
        except BaseException as exc:
            entry.outcome, entry.failure = "failed", failure_label(exc)
            raise
        finally:
            usage = self.llm.total_usage
            entry.requests = usage.requests - usage_before.requests
            entry.tokens = usage.total_tokens - usage_before.total_tokens
            test.scenario.append(entry)
            self.events.emit("on_step_finished", spec.sentence, entry.outcome)
        return entry

    def execute(self, test: TestRun, spec: StepSpec, code: str) -> Attempt:
        """Policy, settle, run, and re-run while ``tries`` last; one record of the outcome.

        Texts are redacted of secret values; a navigation outside the bounds makes it red.
        """
        page, guard, redact = test.page, test.guard, self.secrets.redact
        url_before = _url(page)
        try:
            leaked = self.secrets.found_in(code)
            if leaked:
                raise CodePolicyError(f"the code holds the literal value of secret {leaked}")
            resolver = self.secrets.resolver(
                secret_names(spec.text), lambda: guard is None or guard.allows(page.url)
            )
            function = compile_step(code, secret=resolver)
        except CodePolicyError as exc:
            text = redact(f"CodePolicyError: {exc}")
            return Attempt(POLICY_VIOLATION, url_before, url_before, redact(code), text)
        for attempt_no in range(1, spec.tries + 1):
            settled = test.settler.settle(test.config.settle_ms)
            error: Exception | None = None
            try:
                run_step(function, page)
            except Exception as exc:  # a red outcome, whatever raised it
                error = exc
            bound = None
            if guard is not None and not page.is_closed():
                bound = guard.problem(guard.take(), page.url)
            if error is None and bound is None:
                return Attempt(GREEN, url_before, _url(page), code, "")
            if attempt_no < spec.tries and bound is None:
                record(
                    logging.DEBUG, "step_retry", "red execution %d of %d", attempt_no, spec.tries
                )
                continue
            texts = [bound] if bound else []
            restored = guard.restore(page, url_before) if bound and guard else None
            if restored:
                texts.append(f"(the page was taken back to {restored})")
            if error is not None:
                texts.append(describe_exception(error)[1])
            if not settled:
                texts.append(f"(the page never settled within settle_ms={test.config.settle_ms})")
            failed_check = spec.kind == CHECK and isinstance(error, AssertionError) and not bound
            text = redact("\n".join(texts))
            return Attempt(RED, url_before, _url(page), code, text, failed_check)
        raise AssertionError("unreachable: tries >= 1")


class StepCycle:
    """One step's way through the cycle; holds its cache address and attempt history."""

    def __init__(
        self,
        executor: StepExecutor,
        test: TestRun,
        spec: StepSpec,
        key: CacheKey,
        entry: ScenarioEntry,
    ) -> None:
        self.executor = executor
        self.llm = executor.llm
        self.test = test
        self.config = test.config
        self.spec = spec
        self.key = key
        self.entry = entry
        self.history = entry.history
        # A group step on a normal run is never classified on its own: the group diagnosis
        # supplies the verdict.
        self.in_recoverable_group = entry.group is not None and not test.config.strict

    def run(self) -> None:
        names = secret_names(self.spec.text)
        self.executor.secrets.require(names, self.spec.text)
        if names:
            self.test.uses_secrets = True
            if self.config.trace != "on":
                self.test.drop_trace()
        try:
            self.route()
        except IncurableStepError as failure:
            # a step of a recoverable group is steered once its group recovery gives up
            if self.in_recoverable_group or not self.steer(failure):
                raise

    def steer(self, failure: IncurableStepError) -> bool:
        """The steering gate: True when the engineer's dialog made the step green."""
        terminal = Terminal()
        if not steering_allowed(self.config, self.llm.available, terminal):
            return False
        return SteeringDialog(self, failure, terminal).run()

    def route(self) -> None:
        cached = self.executor.cache.lookup(self.key)
        if cached is not None:
            self.replay(cached)
        elif self.config.strict:
            raise IncurableStepError(
                "no cached code for this step" + STRICT,
                sentence=self.spec.text,
                error=f"no {self.spec.kind} entry in {self.executor.cache.path_for(self.key.test)} "
                f"(test {self.key.test!r}, occurrence {self.key.occurrence})",
            )
        else:
            self.llm.require()
            self.generate()

    # -- replay and its classification ---------------------------------------------------------

    def replay(self, cached: CacheEntry) -> None:
        attempt = self.executor.execute(self.test, self.spec, cached.code)
        self.entry.code, self.entry.origin = cached.code, REPLAYED
        self.history.append(attempt)
        if attempt.outcome == GREEN:
            return
        if not self.llm.available:
            why = STRICT if self.config.strict else " (the LLM is unavailable to heal it)"
            raise self.terminal("the cached step failed" + why, attempt)
        if self.in_recoverable_group:
            raise self.terminal("the cached step failed", attempt)
        verdict = self.classify()
        if self.config.strict:
            raise self.verdict_failure(verdict, "the cached step failed")
        if verdict.label not in HEALABLE:
            raise self.verdict_failure(verdict, "the cached step failed and cannot be healed")
        self.heal(verdict)

    # -- the loops ---------------------------------------------------------------------------

    def generate(self) -> None:
        """Up to ``generation_attempts`` code requests; an exhausted budget is classified."""
        budget = self.config.generation_attempts
        for number in range(1, budget + 1):
            record(logging.INFO, "generation", "generating %r (attempt %d of %d)",
                   self.spec.sentence, number, budget)  # fmt: skip
            if self.attempt("generate", None, GENERATED):
                return
        if self.in_recoverable_group:
            raise self.terminal("the generation budget is exhausted", self.history[-1])
        verdict = self.classify()
        raise self.verdict_failure(verdict, "the generation budget is exhausted")

    def heal(self, verdict: Verdict) -> None:
        """Up to ``healing_attempts`` heal requests, each carrying the whole history.

        The verdict is a classification (``rot``/``fixable``) or, for a row step of a group,
        the group diagnosis (``recoverable``).
        """
        self.executor.events.emit("on_healing_started", self.spec.sentence, verdict.label)
        origin = RECOVERED if self.in_recoverable_group else HEALED
        budget = self.config.healing_attempts
        for number in range(1, budget + 1):
            record(logging.INFO, "healing", "healing %r (%s, attempt %d of %d)",
                   self.spec.sentence, verdict.label, number, budget)  # fmt: skip
            if self.attempt("heal", verdict, origin):
                explanation = f"healed ({verdict.label}): {verdict.explanation}"
                self.executor.events.emit("on_healed", self.spec.sentence, explanation)
                return
        raise self.verdict_failure(verdict, "the healing budget is exhausted")

    def attempt(self, purpose: str, verdict: Verdict | None, origin: str) -> bool:
        """One request, its code run and gated; True when it was written to the cache.

        A failed check is classified at once: a product defect or an incurable step ends the
        loop, so an assertion the product fails is never silently regenerated.
        """
        code = self.ask_code(purpose, verdict)
        if isinstance(code, Attempt):
            self.history.append(code)
            return False
        attempt = self.executor.execute(self.test, self.spec, code)
        if attempt.outcome == GREEN:
            attempt = self.gate(attempt)
        if attempt.outcome != GREEN:
            self.history.append(attempt)
            if attempt.failed_check and not self.in_recoverable_group:
                check_verdict = self.classify()
                if check_verdict.label not in HEALABLE:
                    raise self.verdict_failure(
                        check_verdict, "the check failed and cannot be healed"
                    )
            return False
        self.write(code, origin)
        return True

    # -- requests ----------------------------------------------------------------------------

    def ask_code(
        self, purpose: str, verdict: Verdict | None = None, guidance: str = ""
    ) -> str | Attempt:
        """One code request; the code, or an ``unparseable answer`` record."""
        messages = self.executor.render(
            purpose,
            step=self.spec,
            base_url=self.config.base_url,
            page=self.executor.page_state(self.test),
            scenario=self.test.scenario,
            history=self.history,
            group=self.entry.group,
            instructions=self.config.instructions,
            verdict=verdict,
            guidance=guidance,
        )
        answer = self.llm.ask(purpose, step=self.spec.sentence, messages=messages)
        try:
            return extract_code(answer.text)
        except UnparseableAnswer as exc:
            url = _url(self.test.page)
            text = f"{exc}\nfinish_reason: {answer.finish_reason}\nanswer:\n{quoted(answer.text)}"
            return Attempt(UNPARSEABLE, url, url, "", text)

    def classify(self) -> Verdict:
        """One classify request; a garbage answer degrades to ``incurable``, never a retry."""
        messages = self.executor.render(
            "classify",
            step=self.spec,
            base_url=self.config.base_url,
            page=self.executor.page_state(self.test),
            scenario=self.test.scenario,
            history=self.history,
        )
        answer = self.llm.ask("classify", step=self.spec.sentence, messages=messages, verdict=True)
        try:
            verdict = parse_verdict(answer.text, "classify")
        except UnparseableAnswer as exc:
            record(logging.WARNING, "classification_degraded",
                   "unparseable classification of %r (%s); taken as incurable; raw answer:\n%s",
                   self.spec.sentence, exc, quoted(answer.text),
                   raw_answer=quoted(answer.text))  # fmt: skip
            degraded = Verdict(INCURABLE, f"the classification answer was unparseable: {exc}", "")
            self.entry.verdicts.append(degraded)
            return degraded
        assert isinstance(verdict, Verdict)
        self.entry.verdicts.append(verdict)
        record(logging.INFO, "classified", "%r classified %s: %s",
               self.spec.sentence, verdict.label, verdict.explanation)  # fmt: skip
        return verdict

    def gate(self, green: Attempt, guidance: str = "") -> Attempt:
        """The compliance gate on a green candidate: green again, or a ``gate violation``."""
        messages = self.executor.render(
            "gate",
            guidance=guidance,
            group=self.entry.group,
            step=self.spec,
            base_url=self.config.base_url,
            scenario=self.test.scenario,
            history=self.history,
            candidate=green.code,
            instructions=self.config.instructions,
        )
        try:
            answer = self.llm.ask("gate", step=self.spec.sentence, messages=messages, verdict=True)
            verdict = parse_verdict(answer.text, "gate")
        except (ProviderUnavailableError, UnparseableAnswer) as exc:
            raise IncurableStepError(
                "the compliance gate could not judge the candidate; nothing was written",
                sentence=self.spec.text,
                error=f"{type(exc).__name__}: {exc}",
                code=green.code,
            ) from exc
        assert isinstance(verdict, GateVerdict)
        for finding in verdict.findings:
            if not finding.blocking:
                record(logging.WARNING, "gate_finding", "compliance gate (%s, %s) on %r: %s",
                       finding.dimension, finding.severity, self.spec.sentence,
                       finding.message)  # fmt: skip
        if not verdict.blocking:
            return green
        findings = "\n".join(
            f"{f.severity} {f.dimension}: {f.message}" for f in verdict.findings if f.blocking
        )
        return Attempt(GATE_VIOLATION, green.url_before, green.url_after, green.code, findings)

    def write(self, code: str, origin: str) -> None:
        cache = self.executor.cache
        changed = cache.write(CacheEntry(self.key, code, origin))
        self.executor.cache_writes += changed
        record(logging.INFO, "cache_write", "%s %s entry %r in %s",
               "wrote" if changed else "kept", origin, self.key.sentence,
               cache.path_for(self.key.test))  # fmt: skip
        self.entry.code, self.entry.origin = code, origin

    # -- terminal errors -----------------------------------------------------------------------

    def terminal(self, headline: str, attempt: Attempt) -> IncurableStepError:
        first = attempt.text.splitlines()[0] if attempt.text else attempt.outcome
        return IncurableStepError(
            headline, sentence=self.spec.text, error=first, details=attempt.text, code=attempt.code
        )

    def verdict_failure(self, verdict: Verdict, headline: str) -> StepFailedError:
        """The terminal error a verdict calls for: a product defect, or an incurable step."""
        last = self.history[-1]
        first = last.text.splitlines()[0] if last.text else last.outcome
        error_type: type[StepFailedError] = IncurableStepError
        if verdict.label == PRODUCT_DEFECT:
            error_type, headline = ProductDefectError, DEFECT_HEADLINE
        if self.config.strict:
            headline += STRICT
        return error_type(
            headline,
            sentence=self.spec.text,
            error=first,
            details=last.text,
            explanation=verdict.explanation,
            recommendation=verdict.recommendation,
            code=last.code,
        )


def quoted(answer: str) -> str:
    """An answer as records and logs keep it: whole, unless it is past the answer size limit,
    where its head stands for it (it would otherwise ride every later request of the step)."""
    if len(answer) <= MAX_ANSWER_CHARS:
        return answer
    head = RUNAWAY_HEAD_CHARS
    return f"{answer[:head]}\n… ({len(answer) - head:,} more characters of a runaway answer)"


def failure_label(exc: BaseException) -> str:
    """How a step failed, for the summary and the report."""
    if isinstance(exc, ProductDefectError):
        return PRODUCT_DEFECT
    if isinstance(exc, IncurableStepError):
        return INCURABLE
    if isinstance(exc, ProviderUnavailableError):
        return "unavailable"
    if isinstance(exc, ConfigError):
        return "configuration"
    if isinstance(exc, CacheError):
        return "cache"
    return "error"


def _url(page: Page) -> str:
    return "(closed)" if page.is_closed() else page.url
