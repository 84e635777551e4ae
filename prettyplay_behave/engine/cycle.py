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
    final      -> the steering gate -> IncurableStepError / ProductDefectError

A final error whose red is the app's answer (a failed assertion of a check or precondition, a
red replay under strict) is a ``RedStepError``, an ``AssertionError``: behave counts it *failed*.

Every non-green attempt joins the step's attempt history, which rides every later request of
that step; record 0 of a heal is the failed replay. A step of a group on a normal run is never
classified on its own: its failure goes to the group's recovery (:mod:`.group`).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..browser.snapshot import estimate_tokens
from ..cache import RED_LABELS, CacheStore, CacheWrite, RedVerdict, StepEntry, closest, today
from ..errors import (
    CacheError,
    IncurableStepError,
    PrettyPlayError,
    ProductDefectError,
    ProviderUnavailableError,
    RedStepError,
    StepFailedError,
    failure_kind,
    rendered,
)
from ..events import record
from ..llm.answers import CannotAnswer, Verdict
from ..llm.purposes import Purpose
from ..safety.secrets import Secrets, secret_names
from ..safety.step_code import step_code
from ..vocabulary import Meaning, Origin, Outcome, StepLabel, StepStatus, counted
from .advisor import Advisor, verdict_failure
from .clean_page import CleanPage
from .evidence import Evidence, Sightings, compare, green_record
from .execute import execute, follow_tabs
from .history import Attempt
from .hooks import Events
from .page_state import Pages
from .renames import Proposal, Rename, apply, locator_changes, renamed_here, spelt_in
from .run_memory import GreenCode, HealedCode, Judgment, Place, RunMemory, feature_of
from .state import TestState
from .steering import Steering, steering_allowed, stuck_step
from .step import StepRun, StepSpec

if TYPE_CHECKING:
    from ..cache import CacheKey

STRICT = " (strict: replay only)"
MAX_REUSE_TRIES = 2
# the library steps a generation request lists as the closest to its step, and their code's size
CLOSEST_STEPS = 5
CLOSEST_TOKENS = 1_000


class Engine:
    """Runs the steps of every test of a run, with the run's cache, advisor, hooks and secrets;
    ``steering`` is the part behind the steering gate (none: the gate never opens)."""

    def __init__(
        self,
        cache: CacheStore,
        advisor: Advisor,
        events: Events,
        secrets: Secrets,
        pages: Pages,
        steering: Steering | None = None,
    ) -> None:
        self.cache = cache
        self.advisor = advisor
        self.pages = pages
        self.events = events
        self.secrets = secrets
        self.steering = steering
        self.cache_writes = 0  # entries written (changed) in this run
        self.memory = RunMemory()

    def perform(self, test: TestState, spec: StepSpec, group: str | None = None) -> StepRun:
        """Perform one step of ``test`` (a member of ``group``, when given); its run in
        the scenario. A PrettyPlayError it raises carries that run."""
        run = StepRun(spec, test.key_for(spec), group)
        if not test.scenario and test.page.url != "about:blank":
            test.touched_elsewhere()  # a hook had the page before the first step
        self.events.on_step_started(sentence=spec.sentence, step=run, test=test)
        try:
            with self.booked(run):
                if spec.delay:
                    pause(test, spec.delay)
                StepCycle(self, test, run).perform()
            run.outcome = StepStatus.PASSED
            self._went_green(test, run)
        except BaseException as exc:
            run.outcome, run.failure = StepStatus.FAILED, failure_kind(exc)
            run.error = rendered(exc)
            if isinstance(exc, PrettyPlayError) and exc.step_run is None:
                exc.step_run = run
            if isinstance(exc, StepFailedError):
                self.remember(test, run, exc)
            raise
        finally:
            test.add_step(run)
            self.events.on_step_finished(
                sentence=spec.sentence, outcome=run.outcome, step=run, test=test
            )
        return run

    @contextmanager
    def booked(self, run: StepRun) -> Iterator[None]:
        """Book on ``run`` the LLM requests and tokens of what runs inside."""
        before = self.advisor.llm.total_usage
        try:
            yield
        finally:
            usage = self.advisor.llm.total_usage
            run.requests += usage.requests - before.requests
            run.tokens += usage.total_tokens - before.total_tokens

    def evidence(self, test: TestState, cached: StepEntry) -> Evidence | None:
        """What the locators of ``cached``'s last green run find on the page now; None for
        an entry with no record of one, in a strict run (which needs none), or when the
        record could not be read within the bound."""
        if cached.green is None or test.config.strict or test.page.is_closed():
            return None
        redact, within_ms = self.secrets.redact, test.config.action_timeout_ms
        return compare(test.tabs, cached.green, self.pages.test_id_attribute, redact, within_ms)

    def place(self, test: TestState, cached: StepEntry) -> Place:
        """Where a library entry is: its step's file, and its identity there."""
        return self.cache.path_of(cached), cached.identity

    def _went_green(self, test: TestState, run: StepRun) -> None:
        place = self.place(test, run.cached) if run.cached is not None else None
        found = GreenCode(test.name, run.sentence, run.code)
        self.memory.went_green(run.spec.family, found, place, run.key.occurrence)

    def _served_elsewhere(self, test: TestState, run: StepRun) -> bool:
        """Whether the shared library entry this step replayed went green for another step of
        this run: then new code for this step is pinned to its scenario, not shared."""
        cached = run.cached
        if cached is None or cached.scenario is not None:
            return False
        return self.memory.served_elsewhere(self.place(test, cached), test.name, run.key.occurrence)

    def proven(self, test: TestState, run: StepRun) -> list[tuple[str, str]]:
        """Code for the same step that went green in this run (the same feature's first, newest
        first), then the entries the library keeps for it as other features' own (by its
        sentence or one of their wordings): (where, code). Code that spells its values out
        serves only a step with those values."""
        known = self.memory.green_for(run.spec.family, feature_of(test.name))
        found = [(k.test, k.code) for k in known if _fits(run, k.sentence, k.code)]
        kind, template, data = run.spec.family
        for path, other in self.cache.everywhere():
            if other.feature in ("", run.key.feature) or other.red or other.scenario is not None:
                continue
            if (other.kind, other.data) != (kind, data) or not other.says(template):
                continue
            if other.values is None or other.values == run.spec.parameters.values:
                found.append((str(path), other.code))
        unique = dict.fromkeys(code for _, code in found)
        return [next(f for f in found if f[1] == code) for code in unique]

    def execute(
        self,
        test: TestState,
        spec: StepSpec,
        code: str,
        at_once: bool = False,
        watched: bool | None = None,
    ) -> Attempt:
        """Run ``code`` for ``spec``; ``watched`` (by default, code that does not replay at
        once: a candidate) records what its locators find, for the entry it may write."""
        watch = not at_once if watched is None else watched
        sightings = Sightings(self.pages.test_id_attribute, self.secrets.redact) if watch else None
        attempt = execute(test, spec, code, self.secrets, at_once, sightings)
        if attempt.outcome is not Outcome.POLICY_VIOLATION:  # code that never ran met nothing
            test.met(attempt.notes, attempt.reach)
        return attempt

    def next_recovery_cycle(self, test: TestState, prompt: str) -> bool:
        """Start one more recovery cycle of the group ``prompt`` in ``test``; False once the
        test's ``healing_attempts`` cycles for that prompt are spent."""
        return self.memory.next_recovery_cycle(test.name, prompt, test.config.healing_attempts)

    def write(
        self,
        test: TestState,
        run: StepRun,
        code: str,
        origin: Origin,
        ran: Attempt | None,
        wording_of: StepEntry | None = None,
    ) -> None:
        """Keep ``code`` as the step's cache entry, with its origin and what its green run
        (``ran``) found: in the feature's library, or pinned to the step's scenario where the
        shared entry it replaced still serves other steps (or it replaced a pin); the cache
        decides what the new entry replaces (``CacheStore.replace``). With ``wording_of`` (the
        entry whose code ``code`` is), the step's template is kept as another wording of that
        entry."""
        old = run.cached
        pinned = (old is not None and old.scenario is not None) or self._served_elsewhere(test, run)
        green = green_record(ran, today(), self.secrets.redact)
        keep = CacheWrite(
            run.key, code, origin, pinned=pinned, model=self.advisor.code_model,
            wording_of=wording_of, green=green,
        )  # fmt: skip
        changed, written = self.cache.replace(keep, old)
        self.cache_writes += changed
        if written.sentence == run.key.parameters.template:
            what = f"{origin} entry {run.sentence!r}"
        elif wording_of is not None:
            what = f"{run.sentence!r} as a wording of the entry {written.sentence!r}"
        else:
            what = f"{origin} entry {written.sentence!r}, found by its wording {run.sentence!r}"
        record(
            logging.INFO,
            "cache_write",
            "%s %s in %s",
            "wrote" if changed else "kept",
            what,
            self.cache.path_of(written),
        )
        replaced = run.code if run.code and run.code != code else None
        if run.replaced is None and replaced is not None:
            run.replaced = replaced  # the code the run found there, for a review of the change
        if origin in (Origin.HEALED, Origin.RECOVERED, Origin.STEERED):
            self.memory.heals[run.spec.family] = HealedCode(test.name, code)
            if replaced is not None:
                self.spread_renames(test, run, replaced, code)
        run.code, run.origin, run.cached = code, origin, written

    def remember(self, test: TestState, run: StepRun, failure: StepFailedError) -> None:
        """A step judged ``product_defect`` or ``incurable`` keeps the code that ran, the
        verdict and its explanation, pinned to its scenario and marked red: a later replay that
        is still red fails with that verdict and no request."""
        cached = run.cached
        if (
            test.config.strict
            or failure.label not in RED_LABELS
            or not failure.code.strip()
            or (cached is not None and cached.red)
        ):
            return
        verdict = RedVerdict(failure.label, failure.explanation, failure.recommendation)
        origin = cached.origin if cached is not None else str(run.origin or Origin.GENERATED)
        keep = CacheWrite(run.key, failure.code, origin, verdict=verdict)
        try:
            changed = self.cache.write(keep)
        except CacheError as exc:  # code the policy refuses is no code to replay
            record(logging.INFO, "verdict_not_kept", "%r: %s", run.sentence, exc)
            return
        self.cache_writes += changed
        record(
            logging.INFO,
            "verdict_kept",
            "%r is remembered red (%s) in %s",
            run.sentence,
            failure.label,
            self.cache.path_of(keep.library_entry()),
        )

    def turn_green(self, test: TestState, run: StepRun, red: StepEntry) -> None:
        """A step remembered red went green: its pin loses the verdict, or goes when the shared
        entry has the same code."""
        self.cache_writes += self.cache.turn_green(run.key, red)

    def spread_renames(self, test: TestState, run: StepRun, old: str, new: str) -> None:
        """One heal per rename: the locators the heal changed are changed in every other entry
        of the cache that names them, judged by the gate in one request (see ``renames``)."""
        changes = locator_changes(old, new)
        if not changes or test.config.strict or set(changes) <= self.memory.spread:
            return
        self.memory.spread.update(changes)
        own = self.place(test, run.cached) if run.cached else None
        proposals: list[tuple[Path, StepEntry, str]] = []
        for path, other in self.cache.everywhere():
            if other.red or (path, other.identity) == own:
                continue
            changed = apply(other.code, changes)
            if changed is not None and changed != other.code:
                proposals.append((path, other, changed))
        if not proposals:
            return
        batch = [Proposal(other.sentence, other.code, changed) for _, other, changed in proposals]
        passed = self.advisor.gate_batch(test, run, new, changes, batch)
        for (path, other, changed), ok in zip(proposals, passed, strict=True):
            if ok:
                self.memory.renames[(path, other.identity)] = Rename(
                    changed, tuple(changes), run.sentence
                )
        record(
            logging.INFO,
            "rename_spread",
            "the rename that healed %r is tried first in %s",
            run.sentence,
            counted(sum(passed), "other entry"),
        )

    def steer(self, test: TestState, run: StepRun, failure: IncurableStepError) -> bool:
        """The steering gate: True when the part behind it made the step green."""
        if self.steering is None or not steering_allowed(test.config, self.advisor.available):
            return False

        def keep(code: str, guidance: str, ran: Attempt | None) -> None:
            run.guidance = guidance  # for the report; never in the cache
            self.write(test, run, code, Origin.STEERED, ran)
            explanation = f"healed interactively with the engineer's guidance: {guidance}"
            self.events.on_healed(
                sentence=run.sentence, explanation=explanation, step=run, test=test,
                verdict=None,
            )  # fmt: skip

        stuck = stuck_step(
            test, run, failure, self.advisor, self.pages, self.secrets, self.execute, keep
        )
        return self.steering.steer(stuck)


def after_request(
    failure: StepFailedError, request: str, down: ProviderUnavailableError
) -> PrettyPlayError:
    """The error of a step that was red (``failure``) when ``request`` about it failed: the
    failure, then the request's failure. The app's answer stays a behave failure; anything else
    ends as the provider's error, with the same text."""
    told = failure.followed_by(f"{request} failed: {down}")
    if isinstance(told, (RedStepError, ProductDefectError)):
        return told
    return ProviderUnavailableError(told.body)


def pause(test: TestState, seconds: float) -> None:
    """The one way the engine waits: on the test's page, so that its events go on arriving."""
    test.page.wait_for_timeout(seconds * 1000)


def _fits(run: StepRun, sentence: str, code: str) -> bool:
    """Whether code that went green for ``sentence`` fits ``run``'s step: it takes the values
    as parameters, or the values are the same."""
    return bool(step_code(code).parameters) or sentence == run.sentence


_WAITING = "- waiting for "


def failure_signature(attempt: Attempt) -> tuple[str, str] | None:
    """What makes two failures the same: the error (its quoted values and numbers aside: the
    same check of another value fails the same way) and the locator it was waiting for. None
    for a failure that waited for no locator."""
    lines = [line.strip() for line in attempt.text.splitlines()]
    locator = next((line[len(_WAITING) :] for line in lines if line.startswith(_WAITING)), "")
    if not lines or not locator:
        return None
    return re.sub(r"\d+", "N", re.sub(_QUOTED, "'…'", lines[0])), locator


_QUOTED = r"'[^']*'|\"[^\"]*\""


class StepCycle:
    """One step's way through the cycle."""

    def __init__(self, engine: Engine, test: TestState, run: StepRun) -> None:
        self.engine = engine
        self.advisor = engine.advisor
        self.test = test
        self.config = test.config
        self.run = run
        self.spec = run.spec
        self.history = run.history
        self.in_recoverable_group = run.group is not None and not test.config.strict
        self.page = CleanPage(test, engine.pages, engine.execute)
        self.fixable: Verdict | None = None  # a failed check's verdict, for the next generation

    def perform(self) -> None:
        follow_tabs(self.test)  # a popup that opened after the last step ended is current now
        names = secret_names(self.spec.text)
        self.engine.secrets.require(names, self.spec.text)
        if names:
            self.test.uses_secret()
        try:
            self.route()
        except IncurableStepError as failure:
            # a step of a recoverable group is steered once its group recovery gives up
            if self.in_recoverable_group or not self.engine.steer(self.test, self.run, failure):
                raise

    def route(self) -> None:
        cached = self.engine.cache.lookup(self.run.key)
        if cached is not None and cached.red:
            self.replay_red(cached)
        elif cached is not None:
            self.replay(cached)
        elif self.config.strict:
            raise self.strict_miss(self.run.key)
        elif not self.reuse():
            try:
                self.advisor.require()
            except ProviderUnavailableError as down:
                nearest = self.nearest(self.run.key)
                if not nearest:
                    raise
                # a likely typo: say first that the cache has code for a sentence like it
                raise ProviderUnavailableError(
                    f"no cached code for this step{nearest}, and generating it needs the LLM: "
                    f"{down}"
                ) from None
            self.generate()

    def strict_miss(self, key: CacheKey) -> IncurableStepError:
        return IncurableStepError(
            "no cached code for this step" + STRICT,
            sentence=self.spec.text,
            error=f"no {self.spec.kind} entry in {self.engine.cache.path_for(key.test)} serves "
            f"it (its template {key.parameters.template!r}, in scenario {key.scenario!r})"
            + self.nearest(key),
        )

    def nearest(self, key: CacheKey) -> str:
        """The closest sentence the step's cache file has for a step of its kind, as a hint
        (a typo in the feature, a reworded step), or ''."""
        kin = [e for e in self.engine.cache.library().entries if e.kind == key.kind]
        near = closest(key.parameters.template, kin)
        return f"; the nearest is {near[0].sentence!r}" if near else ""

    # -- replay and its classification ---------------------------------------------------------

    def replay(self, cached: StepEntry) -> None:
        self.run.code, self.run.origin = cached.code, Origin.REPLAYED
        self.run.cached = cached
        if self.renamed(cached):
            return
        attempt = self.engine.execute(self.test, self.spec, cached.code, at_once=True)
        self.run.notes = list(self.test.notes)
        self.history.append(attempt)
        if attempt.outcome is Outcome.GREEN:
            return
        if not (self.config.strict or self.in_recoverable_group) and self.reuse_heal(cached):
            return
        if not self.advisor.available:
            why = STRICT if self.config.strict else " (the LLM is unavailable to heal it)"
            raise self.incurable("the cached step failed" + why, attempt)
        self.run.evidence = self.engine.evidence(self.test, cached)  # for the group's too
        if self.in_recoverable_group:
            raise self.incurable("the cached step failed", attempt)
        self.page.dirty = attempt.url_before != attempt.url_after  # the heal starts where it did
        if self.repaired(cached):
            return
        with self.asking("the cached step failed", "the classification"):
            verdict = self.classify()
        if self.config.strict:
            raise self.verdict_failure(verdict, "the cached step failed")
        if not self.healable(verdict):
            raise self.verdict_failure(verdict, "the cached step failed and cannot be healed")
        self.heal(verdict)

    def renamed(self, cached: StepEntry) -> bool:
        """A rename a heal of this run found for this entry, tried first where the page shows
        it; green, it is written as healed with no request."""
        place = self.engine.place(self.test, cached)
        rename = self.engine.memory.renames.get(place)
        if rename is None or self.config.strict or not renamed_here(self.test.page, rename.changes):
            return False
        attempt = self.engine.execute(self.test, self.spec, rename.code, True, watched=True)
        if attempt.outcome is not Outcome.GREEN:
            self.history.append(attempt)
            return False
        self.engine.memory.take_rename(place)
        explanation = f"healed with the rename that healed {rename.source!r} in this run"
        self.run.healed_by = explanation
        record(logging.INFO, "healing", "%r %s", self.spec.sentence, explanation)
        self.engine.write(self.test, self.run, rename.code, Origin.HEALED, attempt)
        self.healed(explanation, None)
        return True

    def repaired(self, cached: StepEntry) -> bool:
        """Locator repair without the model: where each locator of an action's cached code
        that finds nothing now has one clear candidate on the page (see ``evidence``), the
        code with those locators rewritten runs from the clean page; green, the gate alone
        judges it (told why it was tried), and it is written as healed."""
        evidence = self.run.evidence
        if evidence is None or self.config.strict or self.spec.meaning is not Meaning.ACTION:
            return False
        changes = [(spelt_in(cached.code, old), new) for old, new in evidence.repairs]
        spelt = [(old, new) for old, new in changes if old is not None]
        code = apply(cached.code, spelt) if spelt and len(spelt) == len(changes) else None
        if code is None or code == cached.code:
            return False
        explanation = "judged without the model: " + "; ".join(
            f"{old} finds nothing now, and {new} finds the one element most like what it "
            f"found when the cached code passed on {evidence.day}"
            for old, new in spelt
        )
        before = self.page.get()
        attempt = self.engine.execute(self.test, self.spec, code)
        self.page.dirty = True
        if attempt.outcome is Outcome.GREEN:
            after = self.engine.pages.after_candidate(self.test)
            verdict = Verdict(StepLabel.ROT, explanation, "the locator is rewritten to find it")
            judged = self.advisor.gate(self.test, self.run, attempt, before, after, verdict=verdict)
            attempt = self.run.gated(judged)
        if attempt.outcome is not Outcome.GREEN:
            self.history.append(attempt)
            return False
        self.run.notes = list(self.test.notes)
        self.run.healed_by = f"healed by locator repair ({explanation})"
        record(logging.INFO, "healing", "%r %s", self.spec.sentence, self.run.healed_by)
        self.engine.write(self.test, self.run, code, Origin.HEALED, attempt)
        self.healed(self.run.healed_by, None)
        return True

    def healed(self, explanation: str, verdict: Verdict | None) -> None:
        """Tell the hooks that this step's new code was written."""
        self.engine.events.on_healed(
            sentence=self.spec.sentence,
            explanation=explanation,
            step=self.run,
            test=self.test,
            verdict=verdict,
        )

    def replay_red(self, cached: StepEntry) -> None:
        """A step remembered red replays with no request: still red, it fails with the stored
        verdict; green, its entry turns green. It settles first: its code is expected to go red,
        and a run at once would only add one more red execution to wait out."""
        assert cached.verdict is not None
        attempt = self.engine.execute(self.test, self.spec, cached.code, watched=False)
        self.run.code, self.run.origin = cached.code, Origin.REPLAYED
        self.run.cached = cached
        self.run.notes = list(self.test.notes)
        self.history.append(attempt)
        stored = cached.verdict
        if attempt.outcome is Outcome.GREEN:
            self.run.turned_green = True
            record(
                logging.INFO,
                "turned_green",
                "%r was remembered red (%s) and is green now",
                self.spec.sentence,
                stored.label,
            )
            if not self.config.strict:
                self.engine.turn_green(self.test, self.run, cached)
            return
        verdict = Verdict(StepLabel(stored.label), stored.explanation, stored.recommendation)
        self.run.verdicts.append(verdict)
        failure = self.verdict_failure(verdict, "the step is still red")
        raise failure.recast(
            type(failure),
            f"{failure.headline} (the verdict of an earlier run: no request was made; "
            "prettyplay cache drop removes it)",
        )

    def classify(self) -> Verdict:
        """One classification. A verdict that traces the failure to an earlier step ends this
        one at once: a green earlier step is no reason to heal this one (a product defect
        stays a product defect)."""
        signature = failure_signature(self.history[-1])
        judged = self.engine.memory.judgments.get(signature) if signature else None
        template = (self.spec.kind, self.run.key.parameters.template)
        if judged is not None and judged.template == template:
            verdict = self.taken(judged)
        else:
            page = self.engine.pages.for_classify(self.test)
            verdict = self.advisor.classify(self.test, self.run, page, judged)
            if signature and not verdict.degraded:
                self.engine.memory.judgments[signature] = Judgment(
                    self.spec.sentence, verdict, template
                )
        self.run.verdicts.append(verdict)
        root = verdict.root_step
        earlier = {other.sentence for other in self.test.scenario}
        blames_earlier = bool(root) and root != self.spec.sentence and root in earlier
        if blames_earlier and verdict.label != StepLabel.PRODUCT_DEFECT:
            raise self.root_failure(verdict, str(root))
        return verdict

    def taken(self, judged: Judgment) -> Verdict:
        """One verdict per failure: the same step (its sentence template) failing the same way
        in this run takes the verdict already given, with no request."""
        self.run.verdict_taken_from = judged.sentence
        record(
            logging.INFO,
            "verdict_taken",
            "%r failed as %r did earlier in this run: it takes that verdict (%s), no request",
            self.spec.sentence,
            judged.sentence,
            judged.verdict.label,
        )
        return judged.verdict

    def root_failure(self, verdict: Verdict, root: str) -> IncurableStepError:
        advice = f"fix the step {root!r}, or tag the scenario @group so its steps heal together"
        if verdict.recommendation:
            advice += f"; {verdict.recommendation}"
        last = self.history[-1]
        return self.final_error_type(last)(
            "the failure starts at an earlier step" + (STRICT if self.config.strict else ""),
            sentence=self.spec.text,
            error=f"the classification traces it to the earlier step {root!r}",
            details=last.text,
            explanation=verdict.explanation,
            recommendation=advice,
            code=last.code,
            page=last.page,
        )

    # -- reuse: code that went green in this run, before any request ---------------------------

    def reuse(self) -> bool:
        """A miss first tries code that went green for the same step in this run; a green try is
        kept as ``reused`` (it was gated for this sentence), with no LLM request."""
        proven = self.engine.proven(self.test, self.run)[:MAX_REUSE_TRIES]
        if proven:  # a red try must not leave its change to what comes after it
            self.page.mark_start()
        for source, code in proven:
            attempt = self.engine.execute(self.test, self.spec, code)
            if attempt.outcome is Outcome.GREEN:
                record(
                    logging.INFO,
                    "reuse",
                    "reused the code of %r from %s",
                    self.spec.sentence,
                    source,
                )
                self.engine.write(self.test, self.run, code, Origin.REUSED, attempt)
                return True
            self.history.append(attempt)
        return False

    def reuse_heal(self, cached: StepEntry) -> bool:
        """A red replay first tries the code that healed the same step earlier in this run."""
        known = self.engine.memory.heals.get(self.spec.family)
        if known is None or known.code == cached.code:
            return False
        source, code = known.test, known.code
        attempt = self.engine.execute(self.test, self.spec, code)
        if attempt.outcome is not Outcome.GREEN:
            self.history.append(attempt)
            return False
        explanation = (
            f"healed with the code that healed this step in {source!r} earlier in this run"
        )
        self.run.healed_by = explanation
        record(logging.INFO, "healing", "%r %s", self.spec.sentence, explanation)
        self.engine.write(self.test, self.run, code, Origin.HEALED, attempt)
        self.healed(explanation, None)
        return True

    # -- the loops ---------------------------------------------------------------------------

    def generate(self) -> None:
        """Up to ``generation_attempts`` code requests; an exhausted budget is classified."""
        budget = self.config.generation_attempts
        for number in range(1, budget + 1):
            record(
                logging.INFO,
                "generation",
                "generating %r (attempt %d of %d)",
                self.spec.sentence,
                number,
                budget,
            )
            if self.attempt(Purpose.GENERATE, self.fixable, Origin.GENERATED):
                return
        if self.in_recoverable_group:
            raise self.incurable("the generation budget is exhausted", self.history[-1])
        with self.asking("the generation budget is exhausted", "the classification"):
            verdict = self.classify()
        raise self.verdict_failure(verdict, "the generation budget is exhausted")

    def heal(self, verdict: Verdict) -> None:
        """Up to ``healing_attempts`` heal requests, each carrying the whole history.

        The verdict is a classification (``rot``/``fixable``) or, for a row step of a group,
        the group diagnosis (``recoverable``).
        """
        self.engine.events.on_healing_started(
            sentence=self.spec.sentence,
            category=verdict.label,
            step=self.run,
            test=self.test,
            verdict=verdict,
        )
        origin = Origin.RECOVERED if self.in_recoverable_group else Origin.HEALED
        budget = self.config.healing_attempts
        for number in range(1, budget + 1):
            record(
                logging.INFO,
                "healing",
                "healing %r (%s, attempt %d of %d)",
                self.spec.sentence,
                verdict.label,
                number,
                budget,
            )
            if self.attempt(Purpose.HEAL, verdict, origin):
                explanation = f"healed ({verdict.label}): {verdict.explanation}"
                self.healed(explanation, verdict)
                return
        raise self.verdict_failure(verdict, "the healing budget is exhausted")

    def attempt(self, purpose: Purpose, verdict: Verdict | None, origin: Origin) -> bool:
        """One request, its code run and gated; True when it was written to the cache.

        A failed check is classified at once: a product defect or an incurable step ends the
        loop, so an assertion the product fails is never silently regenerated; a ``fixable``
        verdict rides the next generation. A ``CANNOT:`` answer ends the step at once.
        """
        before = self.page.get()
        listed = self.closest_steps if purpose.lists_closest else []
        try:
            with self.asking("the step's last attempt failed", f"the {purpose} request"):
                answer = self.advisor.code(
                    purpose,
                    self.test,
                    self.run,
                    before,
                    verdict,
                    restored=self.page.restored,
                    closest=listed,
                )
        except CannotAnswer as cannot:
            raise self.cannot(cannot.reason) from None
        if isinstance(answer, Attempt):
            self.history.append(answer)
            return False
        same = answer if isinstance(answer, StepEntry) else None
        code = answer.code if isinstance(answer, StepEntry) else answer
        attempt = self.engine.execute(self.test, self.spec, code)
        self.page.dirty = True  # whatever it did, the next attempt compares the page with the start
        if attempt.outcome is Outcome.GREEN:
            after = self.engine.pages.after_candidate(self.test)
            judged = self.advisor.gate(self.test, self.run, attempt, before, after, verdict=verdict)
            attempt = self.run.gated(judged)
        if attempt.outcome is not Outcome.GREEN:
            if same is not None:  # the next request tells it from code the model wrote
                note = f"(the code of the library's step {same.sentence!r}, named as the same)"
                attempt = dataclasses.replace(attempt, text=f"{attempt.text}\n{note}")
            self.history.append(attempt)
            if attempt.failed_check and not self.in_recoverable_group:
                with self.asking("the check failed", "the classification"):
                    check_verdict = self.classify()
                if not self.healable(check_verdict):
                    raise self.verdict_failure(
                        check_verdict, "the check failed and cannot be healed"
                    )
                self.fixable = check_verdict
            return False
        self.run.notes = list(self.test.notes)  # what the green run met: dialogs
        if same is None:
            self.engine.write(self.test, self.run, code, origin, attempt)
            return True
        self.engine.write(self.test, self.run, code, Origin.REUSED, attempt, wording_of=same)
        record(
            logging.INFO,
            "same_as",
            "%r does what the library's step %r does: its code went green and passed the gate",
            self.spec.sentence,
            same.sentence,
        )
        return True

    @cached_property
    def closest_steps(self) -> list[StepEntry]:
        """The library's shared entries of this step's kind and data whose sentences are most
        like its own (at most ``CLOSEST_STEPS``, their code within ``CLOSEST_TOKENS``): each
        generation request of the step lists them, and its answer may name one as doing it."""
        key = self.run.key
        kin = [
            e
            for e in self.engine.cache.library().entries
            if (e.kind, e.data) == (key.kind, key.data)
            and e.scenario is None  # no pin, no red
            and e.feature in ("", key.feature)  # shared, or this feature's own
        ]
        listed: list[StepEntry] = []
        tokens = 0
        for near in closest(key.parameters.template, kin):
            cost = estimate_tokens(near.code)
            if tokens + cost <= CLOSEST_TOKENS:
                listed.append(near)
                tokens += cost
            if len(listed) == CLOSEST_STEPS:
                break
        return listed

    def cannot(self, reason: str) -> IncurableStepError:
        """The step ends at once: the model answered that it cannot be written. The code kept
        with the remembered verdict fails with the reason, so a replay says it again."""
        record(logging.INFO, "cannot", "%r cannot be written: %s", self.spec.sentence, reason)
        return IncurableStepError(
            "the model answered that this step cannot be written",
            sentence=self.spec.text,
            error=f"CANNOT: {reason}",
            explanation=reason,
            recommendation="reword the step, or change the app so that it can be done",
            code=f"def step(page) -> None:\n    assert False, {reason!r}\n",
            label=StepLabel.INCURABLE,
        )

    @staticmethod
    def healable(verdict: Verdict) -> bool:
        return isinstance(verdict.label, StepLabel) and verdict.label.healable

    # -- final errors --------------------------------------------------------------------------

    @contextmanager
    def asking(self, headline: str, request: str) -> Iterator[None]:
        """A request that follows a red attempt of the step: when the LLM fails it, the step's
        error tells first what made the step red (``headline``, the last attempt), then that
        ``request`` failed, and why."""
        try:
            yield
        except ProviderUnavailableError as down:
            if not self.history:
                raise
            headline += STRICT if self.config.strict else ""
            red = self.incurable(headline, self.history[-1])
            raise after_request(red, request, down) from down

    def incurable(self, headline: str, attempt: Attempt) -> IncurableStepError:
        return self.final_error_type(attempt)(
            headline,
            sentence=self.spec.text,
            error=attempt.headline,
            details=attempt.text,
            code=attempt.code,
            page=attempt.page,
        )

    def final_error_type(self, attempt: Attempt) -> type[IncurableStepError]:
        """What a final error about ``attempt`` is to behave: a failure (``RedStepError``)
        when its red is the app's answer (a failed assertion of a check or a precondition, a
        cached step red under strict replay), else an error."""
        replayed_red = self.config.strict and attempt.outcome is Outcome.RED
        return RedStepError if attempt.failed_check or replayed_red else IncurableStepError

    def verdict_failure(self, verdict: Verdict, headline: str) -> StepFailedError:
        """The final error a verdict calls for, about the step's last attempt."""
        failure = verdict_failure(verdict, headline, self.incurable(headline, self.history[-1]))
        if self.config.strict:
            failure = failure.recast(type(failure), failure.headline + STRICT)
        return failure
