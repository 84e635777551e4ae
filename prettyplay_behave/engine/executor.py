"""The step cycle: replay from the cache, or generate; settle; gate; write back.

Routing of one step::

    cache hit  -> replay -> settle -> green -> done (no LLM call)
    cache miss -> strict? IncurableStepError naming the step and the cache file
               -> no LLM? ProviderUnavailableError naming the settings
               -> the generation loop: request -> code -> policy -> execute -> gate -> cache write

Every non-green attempt joins the step's attempt history, which rides every later request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..browser.snapshot import capture
from ..cache import CacheEntry, CacheKey, CacheStore
from ..errors import (
    CodePolicyError,
    IncurableStepError,
    ProviderUnavailableError,
    describe_exception,
)
from ..events import Events, record
from ..llm.answers import GateVerdict, UnparseableAnswer, extract_code, parse_verdict
from ..llm.prompts import Prompts
from ..safety.sandbox import compile_step, run_step
from .history import GATE_VIOLATION, GREEN, POLICY_VIOLATION, RED, UNPARSEABLE, Attempt
from .settle import Settler
from .step import ScenarioEntry, StepSpec

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from ..config import PrettyConfig
    from ..llm.client import LLMClient

REPLAYED = "replayed"
GENERATED = "generated"


@dataclass
class TestRun:
    """The state of one test around its steps: page, scenario so far, occurrence counts."""

    name: str
    config: PrettyConfig
    page: Page
    settler: Settler
    owned_context: BrowserContext | None = None
    scenario: list[ScenarioEntry] = field(default_factory=list)
    _seen: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def key_for(self, spec: StepSpec) -> CacheKey:
        """The cache address: identical earlier steps of this test count as occurrences."""
        triple = (spec.kind, spec.sentence, spec.data)
        self._seen[triple] = self._seen.get(triple, 0) + 1
        return CacheKey(self.name, spec.kind, spec.sentence, spec.data, self._seen[triple])

    def close(self) -> None:
        """Close the context this test opened (a page handed in stays open)."""
        if self.owned_context is not None:
            self.owned_context.close()
            self.owned_context = None


class StepExecutor:
    """Runs steps for every test of a run; shares the cache, the LLM client and the hooks."""

    def __init__(self, cache: CacheStore, llm: LLMClient, prompts: Prompts, events: Events) -> None:
        self.cache = cache
        self.llm = llm
        self.prompts = prompts
        self.events = events

    def run(self, test: TestRun, spec: StepSpec, group: str | None = None) -> ScenarioEntry:
        key = test.key_for(spec)
        entry = ScenarioEntry(spec.kind, spec.sentence, "running", group)
        self.events.emit("on_step_started", spec.sentence)
        try:
            if spec.delay:
                test.page.wait_for_timeout(spec.delay * 1000)
            cached = self.cache.lookup(key)
            if cached is not None:
                self._replay(test, spec, cached, entry)
            else:
                self._miss(test, spec, key, entry, group)
            entry.outcome = "passed"
        except BaseException:
            entry.outcome = "failed"
            raise
        finally:
            test.scenario.append(entry)
            self.events.emit("on_step_finished", spec.sentence, entry.outcome)
        return entry

    # -- the two routes --------------------------------------------------------------------

    def _replay(
        self, test: TestRun, spec: StepSpec, cached: CacheEntry, entry: ScenarioEntry
    ) -> None:
        attempt = self.execute(test, spec, cached.code)
        entry.code, entry.origin = cached.code, REPLAYED
        entry.history.append(attempt)
        if attempt.outcome == GREEN:
            return
        strict = " (strict: replay only)" if test.config.strict else ""
        raise self._terminal(f"the cached step failed{strict}", spec, attempt)

    def _miss(
        self, test: TestRun, spec: StepSpec, key: CacheKey, entry: ScenarioEntry, group: str | None
    ) -> None:
        if test.config.strict:
            raise IncurableStepError(
                "no cached code for this step (strict: replay only)",
                sentence=spec.text,
                error=f"no {spec.kind} entry in {self.cache.path_for(key.test)} "
                f"(test {key.test!r}, occurrence {key.occurrence})",
            )
        self.llm.require()
        self._generate(test, spec, key, entry, group)

    # -- the generation loop -----------------------------------------------------------------

    def _generate(
        self, test: TestRun, spec: StepSpec, key: CacheKey, entry: ScenarioEntry, group: str | None
    ) -> None:
        history = entry.history
        for number in range(1, test.config.generation_attempts + 1):
            code = self._ask_code("generate", test, spec, history, group)
            record(
                logging.INFO,
                "generation",
                "generation attempt %d of %d for %r",
                number,
                test.config.generation_attempts,
                spec.sentence,
            )
            if isinstance(code, Attempt):
                history.append(code)
                continue
            attempt = self.execute(test, spec, code)
            if attempt.outcome == GREEN:
                attempt = self._gate(test, spec, attempt, history, group)
            if attempt.outcome != GREEN:
                history.append(attempt)
                continue
            self._write(key, code, GENERATED)
            entry.code, entry.origin = code, GENERATED
            return
        last = history[-1]
        raise self._terminal("the generation budget is exhausted", spec, last)

    def _ask_code(
        self, purpose: str, test: TestRun, spec: StepSpec, history: list[Attempt], group: str | None
    ) -> str | Attempt:
        """One code request; the code, or an ``unparseable answer`` record."""
        page = test.page
        messages = self.prompts.render(
            purpose,
            step=spec,
            base_url=test.config.base_url,
            page=capture(page),
            scenario=test.scenario,
            history=history,
            group=group,
            instructions=test.config.instructions,
        )
        answer = self.llm.ask(purpose, step=spec.sentence, messages=messages)
        try:
            return extract_code(answer.text)
        except UnparseableAnswer as exc:
            url = _url(page)
            text = f"{exc}\nfinish_reason: {answer.finish_reason}\nanswer:\n{answer.text}"
            return Attempt(UNPARSEABLE, url, url, "", text)

    def _gate(
        self,
        test: TestRun,
        spec: StepSpec,
        green: Attempt,
        history: list[Attempt],
        group: str | None,
        guidance: str = "",
    ) -> Attempt:
        """The compliance gate on a green candidate: green again, or a ``gate violation``."""
        messages = self.prompts.render(
            "gate",
            guidance=guidance,
            group=group,
            step=spec,
            base_url=test.config.base_url,
            scenario=test.scenario,
            history=history,
            candidate=green.code,
            instructions=test.config.instructions,
        )
        try:
            answer = self.llm.ask("gate", step=spec.sentence, messages=messages, verdict=True)
            verdict = parse_verdict(answer.text, "gate")
        except (ProviderUnavailableError, UnparseableAnswer) as exc:
            raise IncurableStepError(
                "the compliance gate could not judge the candidate; nothing was written",
                sentence=spec.text,
                error=f"{type(exc).__name__}: {exc}",
                code=green.code,
            ) from exc
        assert isinstance(verdict, GateVerdict)
        for finding in verdict.findings:
            if not finding.blocking:
                record(
                    logging.WARNING,
                    "gate_finding",
                    "compliance gate (%s, %s) on %r: %s",
                    finding.dimension,
                    finding.severity,
                    spec.sentence,
                    finding.message,
                )
        if not verdict.blocking:
            return green
        findings = "\n".join(
            f"{f.severity} {f.dimension}: {f.message}" for f in verdict.findings if f.blocking
        )
        return Attempt(GATE_VIOLATION, green.url_before, green.url_after, green.code, findings)

    def _write(self, key: CacheKey, code: str, origin: str) -> None:
        changed = self.cache.write(CacheEntry(key, code, origin))
        record(
            logging.INFO,
            "cache_write",
            "%s %s entry %r in %s",
            "wrote" if changed else "kept",
            origin,
            key.sentence,
            self.cache.path_for(key.test),
        )

    # -- execution ---------------------------------------------------------------------------

    def execute(self, test: TestRun, spec: StepSpec, code: str) -> Attempt:
        """Policy, settle, run, and re-run while ``tries`` last; one record of the outcome."""
        page = test.page
        url_before = page.url
        try:
            function = compile_step(code)
        except CodePolicyError as exc:
            return Attempt(
                POLICY_VIOLATION, url_before, url_before, code, f"CodePolicyError: {exc}"
            )
        settled = True
        for attempt_no in range(1, spec.tries + 1):
            settled = test.settler.settle(test.config.settle_ms)
            try:
                run_step(function, page)
            except Exception as exc:  # a red outcome, whatever raised it
                if attempt_no < spec.tries:
                    record(
                        logging.DEBUG,
                        "step_retry",
                        "red execution %d of %d",
                        attempt_no,
                        spec.tries,
                    )
                    continue
                _, full = describe_exception(exc)
                if not settled:
                    full += f"\n(the page never settled within settle_ms={test.config.settle_ms})"
                return Attempt(RED, url_before, _url(page), code, full)
            return Attempt(GREEN, url_before, _url(page), code, "")
        raise AssertionError("unreachable: tries >= 1")

    @staticmethod
    def _terminal(headline: str, spec: StepSpec, attempt: Attempt) -> IncurableStepError:
        first = attempt.text.splitlines()[0] if attempt.text else attempt.outcome
        return IncurableStepError(
            headline, sentence=spec.text, error=first, details=attempt.text, code=attempt.code
        )


def _url(page: Page) -> str:
    return "(closed)" if page.is_closed() else page.url
