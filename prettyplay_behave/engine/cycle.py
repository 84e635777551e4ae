"""The step cycle: replay from the cache, or find code for the step; classify what breaks.

Routing of one step, each source of code in the order it is tried::

    kept red -> replay -> red: fail with the stored verdict (no request)
                             -> green: the entry turns green
    cache hit  -> a rename this run's heals found for the entry
               -> replay -> green -> done (no LLM call)
               -> red -> the code that healed the same step earlier in this run
                      -> strict: one classify request (when the LLM is there), fail with it
                      -> locator repair (an action whose lost locators have one clear match)
                      -> classify: product_defect -> ProductDefectError (never healed)
                                   rot | fixable  -> heal requests
                                   incurable      -> IncurableStepError
    cache miss -> strict: IncurableStepError naming the step and the cache file
               -> code that went green for the same step in this run (or another feature's)
               -> generate requests (a failed check is classified at once; an exhausted
                  budget is classified)
    final      -> the steering gate (the engine's) -> IncurableStepError / ProductDefectError

Every source offers :class:`Candidate` code, and every candidate takes the one path of
:meth:`StepCycle.tried`: run on the page, gated where it is new to the step (it ran on the
step's clean page), kept (:mod:`.keeper`), told to the hooks. A red candidate joins the step's
attempt history, which rides every later request of that step; record 0 of a heal is the
failed replay.

A final error whose red is the app's answer (a failed assertion of a check or precondition, a
red replay under strict) is a ``RedStepError``, an ``AssertionError``: behave counts it *failed*.
A step of a group on a normal run is never classified on its own: its failure goes to the
group's recovery (:mod:`.group`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..browser.snapshot import estimate_tokens
from ..cache import CacheStore, GreenRecord, StepEntry, closest
from ..errors import (
    IncurableStepError,
    PrettyPlayError,
    ProductDefectError,
    ProviderUnavailableError,
    RedStepError,
    StepFailedError,
)
from ..llm.answers import CannotAnswer, Verdict
from ..llm.purposes import Purpose
from ..log_events import LogEvent, record
from ..safety.secrets import Secrets, secret_names
from ..vocabulary import Meaning, Origin, Outcome, StepLabel, counted
from .advisor import Advisor, verdict_failure
from .clean_page import CleanPage
from .evidence import Evidence, Sightings, compare, unseen
from .execute import execute, follow_tabs
from .history import Attempt
from .hooks import Events
from .keeper import REWRITES, Keeper
from .learnt import Judgment, Learnt
from .page_state import Pages
from .renames import apply, renamed_here, spelt_in
from .state import TestState
from .step import StepRun, StepSpec

if TYPE_CHECKING:
    from ..browser.snapshot import PageState
    from ..cache import CacheKey

STRICT = " (strict: replay only)"
MAX_REUSE_TRIES = 2
# the library steps a generation request lists as the closest to its step, and their code's size
CLOSEST_STEPS = 5
CLOSEST_TOKENS = 1_000


@dataclass(frozen=True)
class Parts:
    """What a step's cycle works with: the run's library, request desk, page states, hooks,
    secrets, what it learnt and its keeper."""

    cache: CacheStore
    advisor: Advisor
    pages: Pages
    events: Events
    secrets: Secrets
    learnt: Learnt
    keeper: Keeper

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


@dataclass(frozen=True)
class Candidate:
    """Code a source offers for the step, and how the one path treats it."""

    code: str
    origin: Origin  # what it is kept as
    # the clean page it runs on when it is new to the step: the gate then judges what it did
    before: PageState | None = None
    verdict: Verdict | None = None  # what asked for it: its gate sees it, its hooks are told
    # a rewrite with no verdict of its own: why, for the log, the report and the hooks
    healed_by: str = ""
    told: str = ""  # what the hooks are told of a rewrite (by default the heal's verdict)
    logged: tuple[LogEvent, str] | None = None  # the event and message logged as it is kept
    at_once: bool = False  # it runs at once, as a replay does (a rename of cached code)
    wording_of: StepEntry | None = None  # kept as a wording of this entry (SAME AS)
    red_note: str = ""  # added to its outcome when it goes red, for the next request


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

    def __init__(self, parts: Parts, test: TestState, run: StepRun) -> None:
        self.parts = parts
        self.advisor = parts.advisor
        self.keeper = parts.keeper
        self.test = test
        self.config = test.config
        self.run = run
        self.spec = run.spec
        self.history = run.history
        self.in_recoverable_group = run.group is not None and not test.config.strict
        self.page = CleanPage(test, parts.pages, parts.execute)
        self.fixable: Verdict | None = None  # a failed check's verdict, for the next generation

    def perform(self) -> None:
        follow_tabs(self.test)  # a popup that opened after the last step ended is current now
        names = secret_names(self.spec.text)
        self.parts.secrets.require(names, self.spec.text)
        if names:
            self.test.uses_secret()
        cached = self.parts.cache.lookup(self.run.key)
        if cached is not None and cached.red:
            self.replay_red(cached)
        elif cached is not None:
            self.replay(cached)
        elif self.config.strict:
            raise self.strict_miss(self.run.key)
        elif not self.first_kept(self.proven()):
            self.require_llm()
            self.generate()

    # -- the one path of every candidate --------------------------------------------------------

    def first_kept(self, candidates: Iterable[Candidate]) -> bool:
        """Try ``candidates`` in turn (a source offers them lazily); True once one is kept."""
        return any(self.tried(c).outcome is Outcome.GREEN for c in candidates)

    def tried(self, candidate: Candidate) -> Attempt:
        """Run ``candidate`` on the page; a candidate new to the step (it ran on the step's
        clean page) passes the gate; green, it is kept and told. The attempt as it ended: a red
        one has joined the history."""
        attempt = self.parts.execute(self.test, self.spec, candidate.code, candidate.at_once, True)
        if candidate.before is not None:
            self.page.dirty = True  # whatever it did, the next attempt compares the page
            if attempt.outcome is Outcome.GREEN:
                after = self.parts.pages.after_candidate(self.test)
                judged = self.advisor.gate(
                    self.test, self.run, attempt, candidate.before, after, verdict=candidate.verdict
                )
                attempt = self.run.gated(judged)
        if attempt.outcome is not Outcome.GREEN:
            if candidate.red_note:
                attempt = dataclasses.replace(attempt, text=f"{attempt.text}\n{candidate.red_note}")
            self.history.append(attempt)
            return attempt
        self.keep(candidate, attempt)
        return attempt

    def keep(self, candidate: Candidate, ran: Attempt | None) -> None:
        """Keep green code as the step's (``ran``: its green, watched run) and tell the hooks
        of a rewrite."""
        self.run.notes = list(self.test.notes)  # what the green run met: dialogs
        if candidate.healed_by:
            self.run.healed_by = candidate.healed_by
        if candidate.logged is not None:
            record(candidate.logged[0], "%s", candidate.logged[1])
        self.keeper.write(
            self.test, self.run, candidate.code, candidate.origin, ran, candidate.wording_of
        )
        if candidate.origin in REWRITES:
            verdict = None if candidate.healed_by else candidate.verdict
            told = candidate.told or candidate.healed_by
            if not told and verdict is not None:
                told = f"healed ({verdict.label}): {verdict.explanation}"
            self.parts.events.on_healed(
                sentence=self.spec.sentence,
                explanation=told,
                step=self.run,
                test=self.test,
                verdict=verdict,
            )

    # -- the sources of code, in the order the route tries them ----------------------------------

    def renamed(self, cached: StepEntry) -> Iterator[Candidate]:
        """A rename a heal of this run found for this entry, where the page shows it."""
        place = self.keeper.place(cached)
        rename = self.parts.learnt.renames.get(place)
        if rename is None or self.config.strict:
            return
        if not renamed_here(self.test.tabs, rename.changes, self.config.action_timeout_ms):
            return
        why = f"healed with the rename that healed {rename.source!r} in this run"
        yield self.rewrite(rename.code, why, at_once=True)

    def heal_reused(self, cached: StepEntry) -> Iterator[Candidate]:
        """The code that healed the same step earlier in this run."""
        known = self.parts.learnt.heals.get(self.spec.family)
        if known is None or known.code == cached.code:
            return
        why = f"healed with the code that healed this step in {known.test!r} earlier in this run"
        yield self.rewrite(known.code, why)

    def repaired(self, cached: StepEntry) -> Iterator[Candidate]:
        """Locator repair without the model: where each locator of an action's cached code
        that finds nothing now has one clear candidate on the page (see ``evidence``), the
        code with those locators rewritten, from the clean page; the gate alone judges it, told
        why it was tried."""
        evidence = self.run.evidence
        if evidence is None or self.config.strict or self.spec.meaning is not Meaning.ACTION:
            return
        changes = [(spelt_in(cached.code, old), new) for old, new in evidence.repairs]
        spelt = [(old, new) for old, new in changes if old is not None]
        code = apply(cached.code, spelt) if spelt and len(spelt) == len(changes) else None
        if code is None or code == cached.code:
            return
        explanation = "judged without the model: " + "; ".join(
            f"{old} finds nothing now, and {new} finds the one element most like what it "
            f"found when the cached code passed on {evidence.day}"
            for old, new in spelt
        )
        verdict = Verdict(StepLabel.ROT, explanation, "the locator is rewritten to find it")
        yield dataclasses.replace(
            self.rewrite(code, f"healed by locator repair ({explanation})"),
            before=self.page.get(),
            verdict=verdict,
        )

    def rewrite(self, code: str, why: str, at_once: bool = False) -> Candidate:
        """A heal without a request: code already judged for this step (or its rename)."""
        logged = (LogEvent.HEALING, f"{self.spec.sentence!r} {why}")
        return Candidate(code, Origin.HEALED, healed_by=why, logged=logged, at_once=at_once)

    def proven(self) -> Iterator[Candidate]:
        """Code that went green for the same step in this run (kept as ``reused``: it was
        gated for this sentence), with no LLM request."""
        proven = self.keeper.proven(self.test, self.run)[:MAX_REUSE_TRIES]
        if proven:  # a red try must not leave its change to what comes after it
            self.page.mark_start()
        for source, code in proven:
            logged = (LogEvent.REUSE, f"reused the code of {self.spec.sentence!r} from {source}")
            yield Candidate(code, Origin.REUSED, logged=logged)

    def requested(self, purpose: Purpose, verdict: Verdict | None, origin: Origin) -> bool:
        """One request, its code tried; True when it was kept.

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
        if isinstance(answer, str):
            candidate = Candidate(answer, origin, before, verdict)
        else:  # the model named a library step as doing this one
            said = (
                f"{self.spec.sentence!r} does what the library's step {answer.sentence!r} does: "
                "its code went green and passed the gate"
            )
            note = f"(the code of the library's step {answer.sentence!r}, named as the same)"
            logged = (LogEvent.SAME_AS, said)
            candidate = Candidate(answer.code, Origin.REUSED, before, verdict, logged=logged)
            candidate = dataclasses.replace(candidate, wording_of=answer, red_note=note)
        attempt = self.tried(candidate)
        if attempt.outcome is Outcome.GREEN:
            return True
        if attempt.failed_check and not self.in_recoverable_group:
            with self.asking("the check failed", "the classification"):
                check_verdict = self.classify()
            if not self.healable(check_verdict):
                raise self.verdict_failure(check_verdict, "the check failed and cannot be healed")
            self.fixable = check_verdict
        return False

    # -- replay ----------------------------------------------------------------------------------

    def replay(self, cached: StepEntry) -> None:
        self.run.code, self.run.origin = cached.code, Origin.REPLAYED
        self.run.cached = cached
        if self.first_kept(self.renamed(cached)):
            return
        attempt = self.parts.execute(self.test, self.spec, cached.code, at_once=True)
        self.run.notes = list(self.test.notes)
        if attempt.outcome is Outcome.GREEN and cached.green is not None:
            attempt = self.seeing(cached.green, attempt)
        self.history.append(attempt)
        if attempt.outcome is Outcome.GREEN:
            return
        healing = not (self.config.strict or self.in_recoverable_group)
        if healing and self.first_kept(self.heal_reused(cached)):
            return
        if not self.advisor.available:
            why = STRICT if self.config.strict else " (the LLM is unavailable to heal it)"
            raise self.incurable("the cached step failed" + why, attempt)
        self.run.evidence = self.evidence(cached)  # for the group's diagnosis too
        if self.in_recoverable_group:
            raise self.incurable("the cached step failed", attempt)
        self.page.dirty = attempt.url_before != attempt.url_after  # the heal starts where it did
        if self.first_kept(self.repaired(cached)):
            return
        with self.asking("the cached step failed", "the classification"):
            verdict = self.classify()
        if self.config.strict:
            raise self.verdict_failure(verdict, "the cached step failed")
        if not self.healable(verdict):
            raise self.verdict_failure(verdict, "the cached step failed and cannot be healed")
        self.heal(verdict)

    def seeing(self, green: GreenRecord, attempt: Attempt) -> Attempt:
        """A green replay that no longer finds what its code found when it last went green,
        where the code passes whatever it finds (a check that something is absent, a count, a
        list a filter starts from), saw nothing: it is red, a failure of what it checks, and
        goes the way of any red replay (classified: rot heals it to look again, a defect is
        red; strict fails)."""
        lost = unseen(self.test.tabs, green, self.config.action_timeout_ms)
        if not lost:
            return attempt
        told = "; ".join(
            f"{then.locator} found {counted(then.count, 'element')} on {green.day}, finds none now"
            for then in lost
        )
        text = f"passed without seeing what it saw when it last went green: {told}"
        checks = self.spec.meaning is not Meaning.ACTION
        page = self.parts.secrets.redact(attempt.url_after)
        return dataclasses.replace(
            attempt, outcome=Outcome.RED, text=text, failed_check=checks, page=page
        )

    def evidence(self, cached: StepEntry) -> Evidence | None:
        """What the locators of ``cached``'s last green run find on the page now; None for
        an entry with no record of one, in a strict run (which needs none), or when the
        record could not be read within the bound."""
        test = self.test
        if cached.green is None or test.config.strict or test.page.is_closed():
            return None
        redact, within_ms = self.parts.secrets.redact, test.config.action_timeout_ms
        attribute = self.parts.pages.test_id_attribute
        return compare(test.tabs, cached.green, attribute, redact, within_ms)

    def replay_red(self, cached: StepEntry) -> None:
        """A step kept red replays with no request: still red, it fails with the stored
        verdict; green, its entry turns green. It settles first: its code is expected to go red,
        and a run at once would only add one more red execution to wait out."""
        assert cached.verdict is not None
        if cached.origin == Origin.CANNOT:
            self.run.code, self.run.cached = cached.code, cached
            raise self.cannot(cached.verdict.explanation, earlier=True)
        attempt = self.parts.execute(self.test, self.spec, cached.code, watched=False)
        self.run.code, self.run.origin = cached.code, Origin.REPLAYED
        self.run.cached = cached
        self.run.notes = list(self.test.notes)
        self.history.append(attempt)
        stored = cached.verdict
        if attempt.outcome is Outcome.GREEN:
            self.run.turned_green = True
            record(
                LogEvent.TURNED_GREEN,
                "%r was kept red (%s) and is green now",
                self.spec.sentence,
                stored.label,
            )
            if not self.config.strict:
                self.keeper.turn_green(self.run, cached)
            return
        verdict = Verdict(StepLabel(stored.label), stored.explanation, stored.recommendation)
        self.run.verdicts.append(verdict)
        failure = self.verdict_failure(verdict, "the step is still red")
        raise failure.recast(
            type(failure),
            f"{failure.headline} (the verdict of an earlier run: no request was made; "
            "prettyplay cache drop removes it)",
        )

    # -- a miss ----------------------------------------------------------------------------------

    def require_llm(self) -> None:
        """A miss that nothing in the run covers needs the LLM: where it is down, say first
        that the cache has code for a sentence like it (a likely typo)."""
        try:
            self.advisor.require()
        except ProviderUnavailableError as down:
            nearest = self.nearest(self.run.key)
            if not nearest:
                raise
            raise ProviderUnavailableError(
                f"no cached code for this step{nearest}, and generating it needs the LLM: {down}"
            ) from None

    def strict_miss(self, key: CacheKey) -> IncurableStepError:
        return IncurableStepError(
            "no cached code for this step" + STRICT,
            sentence=self.spec.text,
            error=f"no {self.spec.kind} entry in {self.parts.cache.library_dir} serves "
            f"it (its template {key.parameters.template!r}, in scenario {key.scenario!r})"
            + self.nearest(key),
        )

    def nearest(self, key: CacheKey) -> str:
        """The closest sentence the step's cache file has for a step of its kind, as a hint
        (a typo in the feature, a reworded step), or ''."""
        kin = [e for e in self.parts.cache.library().entries if e.kind == key.kind]
        near = closest(key.parameters.template, kin)
        return f"; the nearest is {near[0].sentence!r}" if near else ""

    # -- the request loops -----------------------------------------------------------------------

    def generate(self) -> None:
        """Up to ``generation_attempts`` code requests; an exhausted budget is classified."""
        budget = self.config.generation_attempts
        for number in range(1, budget + 1):
            record(
                LogEvent.GENERATION,
                "generating %r (attempt %d of %d)",
                self.spec.sentence,
                number,
                budget,
            )
            if self.requested(Purpose.GENERATE, self.fixable, Origin.GENERATED):
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
        self.parts.events.on_healing_started(
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
                LogEvent.HEALING,
                "healing %r (%s, attempt %d of %d)",
                self.spec.sentence,
                verdict.label,
                number,
                budget,
            )
            if self.requested(Purpose.HEAL, verdict, origin):
                return
        raise self.verdict_failure(verdict, "the healing budget is exhausted")

    @cached_property
    def closest_steps(self) -> list[StepEntry]:
        """The library's shared entries of this step's kind and data whose sentences are most
        like its own (at most ``CLOSEST_STEPS``, their code within ``CLOSEST_TOKENS``): each
        generation request of the step lists them, and its answer may name one as doing it."""
        key = self.run.key
        kin = [
            e
            for e in self.parts.cache.library().entries
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

    # -- verdicts ----------------------------------------------------------------------------

    def classify(self) -> Verdict:
        """One classification. A verdict that traces the failure to an earlier step ends this
        one at once: a green earlier step is no reason to heal this one (a product defect
        stays a product defect)."""
        last = self.history[-1]
        signature = failure_signature(last)
        judgments = self.parts.learnt.judgments
        judged = judgments.get(signature) if signature else None
        template = (self.spec.kind, self.run.key.parameters.template)
        entry = self.keeper.place(self.run.cached) if self.run.cached is not None else None
        same_step = judged is not None and (
            judged.template == template or (entry is not None and judged.entry == entry)
        )
        if judged is not None and same_step:
            verdict = self.taken(judged)
        else:
            page = self.parts.pages.for_classify(self.test)
            verdict = self.advisor.classify(self.test, self.run, page, judged)
            if signature and not verdict.degraded:
                judgments[signature] = Judgment(
                    self.spec.sentence, verdict, template, self.test.name, entry, last.headline
                )
        self.run.verdicts.append(verdict)
        root = verdict.root_step
        earlier = {other.sentence for other in self.test.scenario}
        blames_earlier = bool(root) and root != self.spec.sentence and root in earlier
        if blames_earlier and verdict.label != StepLabel.PRODUCT_DEFECT:
            raise self.root_failure(verdict, str(root))
        return verdict

    def taken(self, judged: Judgment) -> Verdict:
        """One verdict per cause: the same step (its sentence template, or the library entry it
        replays under any wording) failing the same way in this run takes the verdict already
        given, with no request. The verdict says whose it was: its explanation quotes that
        step's failure, not this one's."""
        where = f"{judged.sentence!r} in {judged.scenario!r}"
        self.run.verdict_taken_from = where
        record(
            LogEvent.VERDICT_TAKEN,
            "%r failed as %s did earlier in this run: it takes that verdict (%s), no request",
            self.spec.sentence,
            where,
            judged.verdict.label,
        )
        verdict = judged.verdict
        explanation = (
            f"the verdict given to {where}, which failed the same way earlier in this run "
            f"({judged.failure}): {verdict.explanation}"
        )
        return dataclasses.replace(verdict, explanation=explanation)

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

    def cannot(self, reason: str, earlier: bool = False) -> IncurableStepError:
        """The step ends at once: the model answered that it cannot be written (``earlier``:
        in an earlier run, whose answer the library keeps). The same error on every run: no
        code of it ever ran, so nothing of the app was judged."""
        self.run.origin = Origin.CANNOT
        if not earlier:
            record(LogEvent.CANNOT, "%r cannot be written: %s", self.spec.sentence, reason)
        headline = "the model answered that this step cannot be written"
        if earlier:
            headline += (
                " (the answer of an earlier run: no request was made; prettyplay cache drop "
                "removes it)"
            )
        return IncurableStepError(
            headline,
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
