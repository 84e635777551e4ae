"""What a run keeps of its steps' results: code kept at a step's address (with what its green
run found), a red verdict kept, a kept red turned green, the locator changes of a
heal tried on the library's other entries, and the code the run proved green for a step.

The step cycle (:mod:`.cycle`) decides; the keeper writes the library and what the run learnt
(:mod:`.learnt`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..address import feature_of
from ..cache import RED_LABELS, CacheStore, CacheWrite, RedVerdict, StepEntry, today
from ..errors import CacheError
from ..log_events import LogEvent, record
from ..safety.step_code import step_code
from ..vocabulary import Origin, counted
from .evidence import green_record
from .learnt import GreenCode, HealedCode, Learnt, Place
from .renames import Proposal, Rename, apply, locator_changes

if TYPE_CHECKING:
    from ..errors import StepFailedError
    from ..safety.secrets import Secrets
    from .advisor import Advisor
    from .history import Attempt
    from .state import TestState
    from .step import StepRun

# the origins of code that replaced a step's code
REWRITES = (Origin.HEALED, Origin.RECOVERED, Origin.STEERED)


class Keeper:
    """Keeps the results of a run's steps in the library and in what the run learnt."""

    def __init__(
        self, cache: CacheStore, advisor: Advisor, secrets: Secrets, learnt: Learnt
    ) -> None:
        self.cache = cache
        self.advisor = advisor
        self.secrets = secrets
        self.learnt = learnt
        self.written: set[tuple[object, ...]] = set()  # the entries that changed

    @property
    def writes(self) -> int:
        """The library entries written in this run: each counts once, however many times it
        was written (its code and then a wording of it, a verdict and its turning green)."""
        return len(self.written)

    def _wrote(self, changed: bool, entry: StepEntry) -> None:
        if changed:
            self.written.add(entry.identity)

    def place(self, cached: StepEntry) -> Place:
        """Where a library entry is: its step's file, and its identity there."""
        return self.cache.path_of(cached), cached.identity

    def went_green(self, test: TestState, run: StepRun) -> None:
        """``run``'s code went green: later steps of the same family may reuse it."""
        place = self.place(run.cached) if run.cached is not None else None
        found = GreenCode(test.name, run.sentence, run.code)
        self.learnt.went_green(run.spec.family, found, place, run.key.occurrence)

    def _served_elsewhere(self, test: TestState, run: StepRun) -> bool:
        """Whether the shared library entry this step replayed went green for another step of
        this run: then new code for this step is pinned to its scenario, not shared."""
        cached = run.cached
        if cached is None or cached.scenario is not None:
            return False
        return self.learnt.served_elsewhere(self.place(cached), test.name, run.key.occurrence)

    def proven(self, test: TestState, run: StepRun) -> list[tuple[str, str]]:
        """Code for the same step that went green in this run (the same feature's first, newest
        first), then the entries the library keeps for it as other features' own (by its
        sentence or one of their wordings): (where, code). Code that spells its values out
        serves only a step with those values."""
        known = self.learnt.green_for(run.spec.family, feature_of(test.name))
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
        # a pin's new code stays a pin where another entry serves the step; where none does
        # (a red pin of a step the library had no other code for) it becomes the step's entry
        stays_pinned = old is not None and old.scenario is not None
        stays_pinned = stays_pinned and self.cache.library().find(run.key, pins=False) is not None
        pinned = stays_pinned or self._served_elsewhere(test, run)
        green = green_record(ran, today(), self.secrets.redact, test.config.base_url)
        keep = CacheWrite(
            run.key, code, origin, pinned=pinned, model=self.advisor.code_model,
            wording_of=wording_of, green=green,
        )  # fmt: skip
        changed, written = self.cache.replace(keep, old)
        self._wrote(changed, written)
        if old is not None and self._rewritten(old):  # a rename of the old code fits no more
            self.learnt.renames.pop(self.place(old), None)
        if written.sentence == run.key.parameters.template:
            what = f"{origin} entry {run.sentence!r}"
        elif wording_of is not None:
            what = f"{run.sentence!r} as a wording of the entry {written.sentence!r}"
        else:
            what = f"{origin} entry {written.sentence!r}, found by its wording {run.sentence!r}"
        record(
            LogEvent.CACHE_WRITE,
            "%s %s in %s",
            "wrote" if changed else "kept",
            what,
            self.cache.path_of(written),
        )
        replaced = run.code if run.code and run.code != code else None
        if run.replaced is None and replaced is not None:
            run.replaced = replaced  # the code the run found there, for a review of the change
        if origin in REWRITES:
            self.learnt.heals[run.spec.family] = HealedCode(test.name, code)
            if replaced is not None:
                self.spread_renames(test, run, replaced, code)
        run.code, run.origin, run.cached = code, origin, written

    def _rewritten(self, old: StepEntry) -> bool:
        """Whether the library no longer holds ``old`` with its code."""
        now = self.cache.library().get(old.identity)
        return now is None or now.code != old.code

    def keep_verdict(self, test: TestState, run: StepRun, failure: StepFailedError) -> None:
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
        if run.origin is Origin.CANNOT:  # a reviewer reads that this code was never written
            origin = str(Origin.CANNOT)
        pin = CacheWrite(run.key, failure.code, origin, verdict=verdict).library_entry(today())
        template = run.key.parameters.template
        if cached is not None and template in cached.wordings:  # kept in its entry's file
            pin = replace(pin, sentence=cached.sentence, wordings=(template,))
        try:
            changed = self.cache.keep([pin])
        except CacheError as exc:  # code the policy refuses is no code to replay
            record(LogEvent.VERDICT_NOT_KEPT, "%r: %s", run.sentence, exc)
            return
        self._wrote(changed, pin)
        record(
            LogEvent.VERDICT_KEPT,
            "%r is kept red (%s) in %s",
            run.sentence,
            failure.label,
            self.cache.path_of(pin),
        )

    def turn_green(self, run: StepRun, red: StepEntry) -> None:
        """A step kept red went green: its pin loses the verdict, or goes when the shared
        entry has the same code."""
        self._wrote(self.cache.turn_green(run.key, red), red)

    def spread_renames(self, test: TestState, run: StepRun, old: str, new: str) -> None:
        """One heal per rename: the locators the heal changed are changed in every other entry
        of the cache that names them, judged by the gate in one request (see ``renames``)."""
        changes = locator_changes(old, new)
        if not changes or test.config.strict or set(changes) <= self.learnt.spread:
            return
        self.learnt.spread.update(changes)
        own = self.place(run.cached) if run.cached else None
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
                self.learnt.renames[(path, other.identity)] = Rename(
                    changed, tuple(changes), run.sentence
                )
        record(
            LogEvent.RENAME_SPREAD,
            "the rename that healed %r is tried first in %s",
            run.sentence,
            counted(sum(passed), "other entry"),
        )


def _fits(run: StepRun, sentence: str, code: str) -> bool:
    """Whether code that went green for ``sentence`` fits ``run``'s step: it takes the values
    as parameters, or the values are the same."""
    return bool(step_code(code).parameters) or sentence == run.sentence
