"""The end-of-run summary: how steps ran, what the LLM cost, what the cache gained.

The LLM's cost is in US dollars by purpose where the model that served the purpose has a price
(see :mod:`..llm.prices`); an unpriced purpose shows its tokens only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from colorama import Fore, Style

from ..errors import escape_controls
from ..llm.prices import PRICES_TAKEN, format_cost
from ..llm.purposes import Purpose
from ..vocabulary import FailureKind, Origin, StepStatus, counted

if TYPE_CHECKING:
    from ..engine.state import TestState
    from ..llm.client import Usage
    from ..llm.prices import Price


@dataclass(frozen=True)
class Rewritten:
    """A cache entry this run rewrote over the code it had (healed, recovered or steered)."""

    test: str  # the feature file and scenario, e.g. ``shop/cart.feature::Add a product``
    sentence: str
    origin: Origin
    occurrence: int = 1

    def line(self) -> str:
        occurrence = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"rewritten ({self.origin}) {self.test}: {self.sentence}{occurrence}"


@dataclass
class RunSummary:
    tests: int = 0
    tests_failed: int = 0
    steps: Counter[Origin] = field(default_factory=Counter)  # passed steps by origin
    failed: Counter[FailureKind] = field(default_factory=Counter)  # failed steps by kind
    usage: Mapping[Purpose, Usage] = field(default_factory=dict)
    cache_written: int = 0
    obsolete: int | None = None  # None: not a full run, obsolete entries unknown
    wall_time: float = 0.0
    costs: Mapping[Purpose, float | None] = field(default_factory=dict)  # None: unpriced
    prices: Mapping[str, Price | None] = field(default_factory=dict)  # by model
    rewritten: list[Rewritten] = field(default_factory=list)  # in the order the steps ran
    turned_green: list[str] = field(default_factory=list)  # steps kept red, green now

    @classmethod
    def of(
        cls,
        tests: Sequence[TestState],
        usage: Mapping[Purpose, Usage],
        cache_written: int,
        obsolete: int | None,
        wall_time: float,
        costs: Mapping[Purpose, float | None] | None = None,
        prices: Mapping[str, Price | None] | None = None,
    ) -> RunSummary:
        summary = cls(len(tests), sum(t.failed for t in tests), usage=dict(usage))
        summary.costs, summary.prices = dict(costs or {}), dict(prices or {})
        for test in tests:
            for run in test.scenario:
                if run.outcome is StepStatus.FAILED:
                    summary.failed[run.failure or FailureKind.ERROR] += 1
                elif run.origin:
                    summary.steps[run.origin] += 1
        summary.rewritten = [
            Rewritten(test.name, run.sentence, run.origin, run.key.occurrence)
            for test in tests
            for run in test.scenario
            if run.replaced is not None and run.origin is not None
        ]
        summary.turned_green = [
            f"turned green (kept red) {test.name}: {run.sentence}"
            for test in tests
            for run in test.scenario
            if run.turned_green
        ]
        summary.cache_written, summary.obsolete, summary.wall_time = (
            cache_written,
            obsolete,
            wall_time,
        )
        return summary

    def lines(self) -> list[str]:
        passed = sum(self.steps.values())
        origins = ", ".join(f"{self.steps[o]} {o}" for o in Origin if o.passes)
        failed = sum(self.failed.values())
        labels = ", ".join(f"{n} {label}" for label, n in sorted(self.failed.items()))
        lines = [
            f"{counted(self.tests, 'test')} ({self.tests_failed} failed); "
            f"{counted(passed + failed, 'step')}: {origins}; "
            f"{failed} failed" + (f" ({labels})" if labels else ""),
        ]
        lines.append(self.llm_line())
        cache = f"cache: {counted(self.cache_written, 'entry')} written"
        if self.obsolete is not None:
            cache += f", {self.obsolete} obsolete"
            if self.obsolete:
                them = "it" if self.obsolete == 1 else "them"
                cache += f" (prettyplay cache prune removes {them})"
        lines.append(cache)
        lines.append(f"wall time: {self.wall_time:.1f} s")
        lines += [rewrite.line() for rewrite in self.rewritten]
        lines += self.turned_green
        return [escape_controls(line) for line in lines]  # names and sentences of the features

    def cost_of(self, purpose: Purpose) -> str:
        """``$0.0031`` for a priced purpose, an empty text for an unpriced one."""
        cost = self.costs.get(purpose)
        return "" if cost is None else format_cost(cost)

    @property
    def total_cost(self) -> str:
        """``, $0.0123``; ``, at least $0.0091`` when some purposes are unpriced; else nothing."""
        known = [self.costs.get(purpose) for purpose in self.usage]
        priced = [cost for cost in known if cost is not None]
        if not priced:
            return ""
        return f", {'' if len(priced) == len(known) else 'at least '}{format_cost(sum(priced))}"

    def llm_line(self) -> str:
        requests = sum(u.requests for u in self.usage.values())
        tokens = sum(u.total_tokens for u in self.usage.values())
        by_purpose = ", ".join(
            f"{purpose} {u.requests} ({counted(u.total_tokens, 'token')}"
            + (f", {self.cost_of(purpose)})" if self.cost_of(purpose) else ")")
            for purpose, u in sorted(self.usage.items())
        )
        total = f"{counted(requests, 'request')}, {counted(tokens, 'token')}{self.total_cost}"
        return f"LLM: {total}" + (f" ({by_purpose})" if by_purpose else "")

    def price_notes(self) -> list[str]:
        """How each model of the run was priced, for the report."""
        notes = []
        for model, price in sorted(self.prices.items()):
            if price is None:
                notes.append(
                    f"{model}: no known price (set prettyplay.price_per_mtok_input "
                    "and prettyplay.price_per_mtok_output to show its cost)"
                )
                continue
            source = _SOURCES[price.source].format(taken=PRICES_TAKEN)
            notes.append(
                f"{model}: {_dollars(price.input)} input, {_dollars(price.output)} "
                f"output per million tokens ({source})"
            )
        return notes

    def render(self, colour: bool) -> str:
        prefix = "prettyplay: "
        if not colour:
            return "\n".join(prefix + line for line in self.lines())
        tint = Fore.RED if self.tests_failed else Fore.GREEN
        first, *rest = self.lines()
        lines = [f"{Style.BRIGHT}{prefix}{tint}{first}{Style.RESET_ALL}"]
        lines += [f"{Style.DIM}{prefix}{Style.RESET_ALL}{line}" for line in rest]
        return "\n".join(lines)


_SOURCES = {
    "table": "the shipped price table of {taken}",
    "settings": "the price settings",
    "settings and table": "the price settings and the shipped price table of {taken}",
}


def _dollars(amount: float) -> str:
    """A price as written: ``$0.40``, ``$2.50``, ``$0.075``."""
    return f"${amount:.2f}" if round(amount, 2) == amount else f"${amount:g}"
