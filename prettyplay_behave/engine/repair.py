"""Locator repair without the model: the elements of a page most like what a locator found
when its code last went green (:mod:`.evidence`), scored on the properties the record keeps.

A test id it shares with the record makes an element the element itself, whatever its role or
tag became (a ``label`` that is a ``span`` now); any other is a candidate only with the same
role (or, for a role-less one, the same tag), and its name or its text, compared as text, make
its score, a little more with the same tag. Elements alike in
every property are one candidate (three products' "Add to basket" buttons): the locator's own
narrowing (``.first``, the product card it starts from) picks among them. A candidate is clear
when it scores at least ``FLOOR`` and ``MARGIN`` above the next one.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cache import Found

FLOOR = 0.6
MARGIN = 0.15
SAME_ELEMENT = 1.0  # the test id it had
SAME_TAG = 0.1  # what the same tag adds to the likeness of a name or a text


@dataclass(frozen=True)
class Candidate:
    """An element of the page now, and how much it is like what the locator found."""

    element: Found
    score: float


def score(then: Found, element: Found) -> float:
    """How much ``element`` is like ``then``, from 0 (another kind of element) to 1."""
    if then.test_id and element.test_id == then.test_id:
        return SAME_ELEMENT  # whatever it became (a label now a span): the test id was kept
    if (then.role or element.role) and element.role != then.role:
        return 0.0
    if not then.role and element.tag != then.tag:
        return 0.0
    likeness = max(_like(then.name, element.name), _like(then.text, element.text))
    if then.test_id and element.test_id:
        likeness *= 0.8  # another test id: likely another element
    if likeness and element.tag == then.tag:
        likeness = min(likeness + SAME_TAG, 0.99)  # an h2 for an h2
    return round(likeness, 2)


def _like(one: str, other: str) -> float:
    if not one or not other:
        return 0.0
    return difflib.SequenceMatcher(None, one.casefold(), other.casefold()).ratio()


def ranked(then: Found, elements: list[Found]) -> list[Candidate]:
    """The elements like ``then``, best first; alike elements once, in document order."""
    scored = {}
    for element in elements:
        key = (element.role, element.name, element.test_id, element.text, element.tag)
        if key not in scored and (value := score(then, element)) > 0:
            scored[key] = Candidate(element, value)
    return sorted(scored.values(), key=lambda candidate: -candidate.score)


def unambiguous(candidates: list[Candidate]) -> Candidate | None:
    """The one clear candidate, if any."""
    if not candidates or candidates[0].score < FLOOR:
        return None
    if len(candidates) > 1 and candidates[0].score - candidates[1].score < MARGIN:
        return None
    return candidates[0]
