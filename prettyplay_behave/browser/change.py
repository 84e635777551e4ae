"""What a step did to the page: the change between two page states, compact.

The accessibility snapshots before and after are compared line by line: lines that appeared,
lines that disappeared, and lines that changed state (the same element, other attributes or
text, such as a checkbox that became ``[checked]``, or a test-id element whose classes changed).
Elements are paired by identity (role and name, a test id, the n-th unnamed checkbox), never by
position: text lines are content and only appear or disappear. A change too large for its budget is
summarised by its counts; the caller then shows the page after instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..vocabulary import counted
from .snapshot import PageState, estimate_tokens

T = TypeVar("T")

# Controls that are told apart by their place among their like when they have no name.
UNNAMED_CONTROLS = frozenset(
    {"checkbox", "combobox", "radio", "searchbox", "slider", "spinbutton", "switch", "textbox"}
)
# The part of a snapshot line that names its element: role and name, without state or text.
_ELEMENT = re.compile(r'^\s*- (?P<role>[\w/-]+)(?: "(?P<name>[^"]*)")?')
# The mark of a role-less element a user clicks (snapshot.py): it rests on the computed cursor,
# which a hover or the page's own styles may set and unset between two captures, so a change
# of the mark alone is no change of the element.
_CLICKABLE = " (clickable)"
# A line of the snapshot's section beyond the tree that names an element by what it is rather
# than by a test id: how it is named, and the element itself (tag, text, classes, state, value).
_BEYOND = re.compile(r'^- (?P<named>clickable|typed|part of) "[^"]*": (?P<element>.*)$')


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
    old_ids, new_ids = _identities(old), _identities(new)
    removed: set[int] = set()
    added: set[int] = set()
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed.update(range(i1, i2))
            added.update(range(j1, j2))
    # an element is paired with itself by identity, wherever the diff put it; content (text)
    # only appears or disappears where the diff says so
    old_of = {k: line for k, line in zip(old_ids, old, strict=True) if k is not None}
    new_of = {k: line for k, line in zip(new_ids, new, strict=True) if k is not None}
    appeared: list[str] = []
    disappeared: list[str] = []
    changed: list[tuple[str, str]] = []
    for i, (k, line) in enumerate(zip(old_ids, old, strict=True)):
        if k is None:
            if i in removed:
                disappeared.append(line)
        elif k not in new_of:
            disappeared.append(line)
        elif _unmarked(new_of[k]) != _unmarked(line):
            changed.append((line, new_of[k]))
    for j, (k, line) in enumerate(zip(new_ids, new, strict=True)):
        if (k is None and j in added) or (k is not None and k not in old_of):
            appeared.append(line)
    disappeared, appeared = _without_mark_flips(disappeared, appeared)
    summary = _summary(len(appeared), len(disappeared), len(changed))
    kept, fits = _fit(appeared, disappeared, changed, budget_tokens)
    return PageChange(before.url, after.url, after.title, *kept, summary=summary, fits=fits)


def _unmarked(line: str) -> str:
    return line.replace(_CLICKABLE, "")


def _without_mark_flips(disappeared: list[str], appeared: list[str]) -> tuple[list[str], list[str]]:
    """Both lists without the elements whose mark alone came or went: an element named
    ``clickable "A1"`` on one side and ``part of "Seats:"`` on the other, itself the same."""
    came = [_beyond(line) for line in appeared]
    flipped: set[int] = set()  # the lines of ``appeared`` that were one of ``disappeared``
    kept: list[str] = []
    for line in disappeared:
        old = _beyond(line)
        twin = next(
            (
                j
                for j, new in enumerate(came)
                if old and new and old[0] != new[0] and old[1] == new[1] and j not in flipped
            ),
            None,
        )
        if twin is None:
            kept.append(line)
        else:
            flipped.add(twin)
    return kept, [line for j, line in enumerate(appeared) if j not in flipped]


def _beyond(line: str) -> tuple[bool, str] | None:
    """For a line beyond the tree not named by a test id: whether it is named as clickable,
    and its element without the mark."""
    found = _BEYOND.match(line)
    if found is None:
        return None
    return found.group("named") == "clickable", _unmarked(found.group("element"))


def _lines(snapshot: str) -> list[str]:
    return [line.strip() for line in snapshot.split("\n") if line.strip()]


def _identities(lines: list[str]) -> list[tuple[str, str, int] | None]:
    """Each line's element: role, name (a test id for a ``testid`` line) and how many lines
    before it named the same; None for content (text, an unnamed container), which is never
    paired, so that one text is not shown as having turned into another."""
    seen: dict[tuple[str, str], int] = {}
    out: list[tuple[str, str, int] | None] = []
    for line in lines:
        found = _ELEMENT.match(line)
        element = (found.group("role"), found.group("name") or "") if found else None
        if element is None or not (element[1] or element[0] in UNNAMED_CONTROLS):
            out.append(None)
            continue
        seen[element] = seen.get(element, 0) + 1
        out.append((*element, seen[element]))
    return out


def _summary(appeared: int, disappeared: int, changed: int) -> str:
    if not (appeared or disappeared or changed):
        return "nothing changed in the accessibility snapshot"
    return f"{counted(appeared, 'line')} appeared, {disappeared} disappeared, {changed} changed"


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
