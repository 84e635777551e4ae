"""What a step did to the page: the change between two page states, compact.

The accessibility snapshots before and after are compared line by line: lines that appeared,
lines that disappeared, and lines that changed state (the same element, other attributes or
text, such as a checkbox that became ``[checked]``). A change too large for its budget is
summarised by its counts; the caller then shows the page after instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .snapshot import PageState, estimate_tokens

T = TypeVar("T")

# The part of a snapshot line that names its element: role and name, without state or text.
_ELEMENT = re.compile(r'^\s*- (?P<role>[\w/-]+)(?: "(?P<name>[^"]*)")?')


@dataclass(frozen=True)
class PageChange:
    """The change of the page across one execution."""

    url_before: str
    url_after: str
    title_after: str
    appeared: tuple[str, ...]
    disappeared: tuple[str, ...]
    changed: tuple[tuple[str, str], ...]  # (before, after) of an element whose line changed
    summary: str  # one line: the counts, or "nothing changed"
    fits: bool  # False: the lists were too long for the budget and hold only their heads

    @property
    def nothing(self) -> bool:
        return not (self.appeared or self.disappeared or self.changed)


def page_change(before: PageState, after: PageState, budget_tokens: int = 1_500) -> PageChange:
    """The change from ``before`` to ``after``, its lists cut to ``budget_tokens``."""
    old, new = _lines(before.snapshot), _lines(after.snapshot)
    appeared: list[str] = []
    disappeared: list[str] = []
    changed: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete", "insert"):
            _sort(old[i1:i2], new[j1:j2], appeared, disappeared, changed)
    summary = _summary(len(appeared), len(disappeared), len(changed))
    kept, fits = _fit(appeared, disappeared, changed, budget_tokens)
    return PageChange(before.url, after.url, after.title, *kept, summary=summary, fits=fits)


def _lines(snapshot: str) -> list[str]:
    return [line.strip() for line in snapshot.split("\n") if line.strip()]


def _element(line: str) -> tuple[str, str] | None:
    found = _ELEMENT.match(line)
    return (found.group("role"), found.group("name") or "") if found else None


def _sort(
    old: list[str],
    new: list[str],
    appeared: list[str],
    disappeared: list[str],
    changed: list[tuple[str, str]],
) -> None:
    """Pair removed and added lines that name the same element; the rest appeared or went."""
    unmatched = list(new)
    for line in old:
        element = _element(line)
        twin = next((n for n in unmatched if element and _element(n) == element), None)
        if twin is None:
            disappeared.append(line)
        else:
            unmatched.remove(twin)
            changed.append((line, twin))
    appeared.extend(unmatched)


def _summary(appeared: int, disappeared: int, changed: int) -> str:
    if not (appeared or disappeared or changed):
        return "nothing changed in the accessibility snapshot"
    return f"{appeared} lines appeared, {disappeared} disappeared, {changed} changed"


def _fit(
    appeared: list[str], disappeared: list[str], changed: list[tuple[str, str]], budget: int
) -> tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]], bool]:
    """The lists cut, changed lines first, to what the budget holds."""
    pairs, room = _take(changed, lambda pair: f"{pair[0]} -> {pair[1]}", budget)
    added, room = _take(appeared, str, room)
    removed, room = _take(disappeared, str, room)
    fits = (len(pairs), len(added), len(removed)) == (len(changed), len(appeared), len(disappeared))
    return (tuple(added), tuple(removed), tuple(pairs)), fits


def _take(items: list[T], render: Callable[[T], str], room: int) -> tuple[list[T], int]:
    kept: list[T] = []
    for item in items:
        cost = estimate_tokens(render(item)) + 2
        if cost > room:
            return kept, 0
        room -= cost
        kept.append(item)
    return kept, room
