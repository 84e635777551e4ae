"""Green evidence: what the locators of code found when it went green, kept with the entry it
wrote, and what the same locators find when that code fails on a later replay.

A run whose code will be written (a candidate, a reuse, a rename, a steered turn) is watched:
each locator it acts on or checks is read once in the page (``Sightings``) — role, name, test
id, text, tag — and the record (``GreenRecord``: the day, the page, what was found) goes into
the cache with the code. A plain replay is never watched: the proxy only finds no observer.

When cached code goes red, its requests say so (``Evidence``): cached code, passed on that day;
then each locator found this, now it finds that (nothing, another element, several); and, for a
locator that finds nothing now, the elements of the page most like what it found
(:mod:`.repair`).

Every text of the page is redacted before it is cut to what a record keeps (``FIELD_CHARS``):
the page gives it with ``REDACTION_MARGIN`` more, so a secret the page shows across the cut is
whole when the redactor reads it. A record is data from a file: what evidence does on the page
with it (each of its locators, the elements like a lost one, a rewrite's check) ends within a
bound, after which the step is judged without it; a record past its bounds is refused on load
(``record_problem``) and never written.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from playwright.sync_api import Error as PlaywrightError

from ..browser.elements import describe_all, elements_within
from ..browser.stop import ReadStop
from ..cache import FIELD_CHARS, MAX_FOUND, Found, GreenRecord, locator_problem
from ..cache.library import URL_CHARS
from ..errors import escape_controls
from ..log_events import LogEvent, record
from ..safety.policy import LOCATING_METHODS
from ..safety.secrets import PLACEHOLDER
from ..vocabulary import Outcome
from .repair import Candidate, ranked, unambiguous

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.sync_api import Locator, Page

    from ..browser.tabs import Tabs
    from .history import Attempt

SHOWN_CANDIDATES = 3  # the elements like a lost one a request lists
# What the page gives of a text beyond the cut, for the redactor: a secret the cut would split,
# spelt in up to this many characters, is whole there.
REDACTION_MARGIN = 1_000
READ_CHARS = FIELD_CHARS + REDACTION_MARGIN
# What a chain of locators may hold besides the locating methods.
_NARROWING = frozenset({"filter", "nth", "first", "last"})


class Sightings:
    """The observer of one watched execution: what each locator it acted on found, read once,
    redacted like page text; an input's value is never read."""

    def __init__(self, test_id_attribute: str, redact: Callable[[str], str]) -> None:
        self.test_id_attribute = test_id_attribute
        self.redact = redact
        self.seen: dict[str, Found] = {}

    def see(self, locator: Locator, chain: str, needs: bool = True) -> bool:
        """Read what ``locator`` (spelt ``chain``) finds; True once it is known (found one
        element now or before, or the record is full). Where the code passed whatever it found
        (``needs`` false: a count, a negated check, a list gone through), what it found, and
        what the locators it is built from found (the list a filter starts from), are kept as
        what a replay must find again; nothing found sets no such expectation."""
        if chain in self.seen or len(self.seen) >= MAX_FOUND:
            return True
        spelt = self.redact(chain)
        if locator_problem(spelt):  # too long, or a pattern a record may not hold: not kept
            return True
        elements = describe_all(locator, self.test_id_attribute, READ_CHARS)
        if needs:
            if len(elements) != 1:
                return False
            self.seen[chain] = found(spelt, elements[0], self.redact)
            return True
        if elements:
            self._must_find(chain, spelt, elements)
        for parent in built_from(chain):
            if parent not in self.seen and len(self.seen) < MAX_FOUND:
                target = locate(locator.page, parent)
                finds = describe_all(target, self.test_id_attribute, READ_CHARS) if target else []
                if finds:
                    self._must_find(parent, self.redact(parent), finds)
        return True

    def _must_find(self, chain: str, spelt: str, elements: list[dict[str, Any]]) -> None:
        first = found(spelt, elements[0], self.redact)
        self.seen[chain] = replace(first, count=len(elements), must_find=True)

    def forget(self) -> None:
        """A red try of the execution: what it saw is not the green run's."""
        self.seen.clear()

    @property
    def found(self) -> tuple[Found, ...]:
        return tuple(self.seen.values())


def found(locator: str, element: dict[str, Any], redact: Callable[[str], str]) -> Found:
    """The record of one element as the page describes it (``browser.elements``, each text
    read ``READ_CHARS`` long), each text redacted, then cut (:func:`kept_text`)."""
    return Found(
        locator=locator,
        role=kept_text(element.get("role") or "", redact),
        name=kept_text(element.get("name") or "", redact),
        test_id=kept_text(element.get("testId") or "", redact),
        text=kept_text(element.get("text") or "", redact),
        tag=kept_text(element.get("tag") or "", redact),
    )


def kept_text(text: str, redact: Callable[[str], str]) -> str:
    """A text of the page as a record keeps it: redacted whole, then cut to ``FIELD_CHARS``,
    never inside a placeholder (its start goes with it)."""
    text = escape_controls(redact(text))
    if len(text) <= FIELD_CHARS:
        return text
    cut = text[:FIELD_CHARS]
    start = cut.rfind("${")
    return cut[:start] if start != -1 and "}" not in cut[start:] else cut


def green_record(
    attempt: Attempt | None, day: str, redact: Callable[[str], str], base_url: str | None = None
) -> GreenRecord | None:
    """The record a green, watched run leaves with the code it wrote; None for any other. Its
    page is kept as a path where it is of ``base_url``'s origin (a local app's port changes from
    run to run, and would change the file with it); a URL past what a record keeps is left out."""
    if attempt is None or attempt.outcome is not Outcome.GREEN or not attempt.found:
        return None
    url = redact(_within(attempt.url_after, base_url))
    return GreenRecord(day, url if len(url) <= URL_CHARS else "", attempt.found)


def _within(url: str, base_url: str | None) -> str:
    """``url`` as a path where it is of ``base_url``'s origin, else as it is."""
    if not base_url:
        return url
    page, base = urlsplit(url), urlsplit(base_url)
    if (page.scheme, page.netloc) != (base.scheme, base.netloc) or not page.scheme:
        return url
    return urlunsplit(("", "", page.path or "/", page.query, page.fragment))


@dataclass(frozen=True)
class Compared:
    """One locator of cached code: what it found when the code passed, what it finds now, and
    for a lost one the page's elements most like it."""

    then: Found
    now: tuple[Found, ...] | None  # None: the locator cannot be evaluated on this page
    candidates: tuple[Candidate, ...] = ()
    repair: str = ""  # the locator call rewritten to find the one clear candidate

    @property
    def lost(self) -> bool:
        return self.now == ()

    def found_then(self) -> str:
        """What it found when the code passed, in words."""
        more = self.then.count - 1
        return describe(self.then) + (f" and {more} more like it" if more > 0 else "")

    def most_like(self) -> str:
        """The candidates, in words: ``button "Add to basket" (likeness 0.75); …``."""
        return "; ".join(f"{describe(c.element)} (likeness {c.score:.2f})" for c in self.candidates)

    def told(self) -> str:
        """What it finds now, in words."""
        if self.now is None:
            return "(it cannot be evaluated here)"
        if not self.now:
            return "nothing"
        if len(self.now) > 1:
            return f"{len(self.now)} elements, the first {describe(self.now[0])}"
        now = self.now[0]
        return "the same element" if same(now, self.then) else describe(now)


@dataclass(frozen=True)
class Evidence:
    """What a replay failure's requests are told of the cached code's last green run."""

    day: str
    url: str
    compared: tuple[Compared, ...]

    @property
    def repairs(self) -> list[tuple[str, str]]:
        """Each lost locator's call and its rewrite, when every lost one has a clear
        candidate (none otherwise: a partial rewrite would fail on the one left)."""
        lost = [c for c in self.compared if c.lost]
        if not lost or not all(c.repair for c in lost):
            return []
        return [(last_call(c.then.locator) or "", c.repair) for c in lost]


def compare(
    tabs: Tabs,
    green: GreenRecord,
    test_id_attribute: str,
    redact: Callable[[str], str],
    within_ms: float,
) -> Evidence | None:
    """What the locators of ``green`` find on the current page of ``tabs`` now, and what lost
    ones could be; None when reading the page with them takes past ``within_ms`` (the test's
    ``action_timeout_ms``: a pattern of the record that backtracks in the page, a selector that
    walks it too long): the reads are stopped there (see ``ReadStop``), and the step is judged
    without a record."""
    page = tabs.page
    stop = ReadStop(page, f"the green record was read on the page past {within_ms:.0f} ms")
    reads = _Reads(page, stop, test_id_attribute, redact)
    try:
        with stop.armed(within_ms / 1000):
            compared = tuple(reads.compared(then) for then in green.found)
    except _OutOfTime:
        compared = None
    if stop.fired or compared is None:
        tabs.ensure_open()  # where the read could only be stopped by closing the page
        record(
            LogEvent.EVIDENCE_STOPPED,
            "the green record of the failing step was still being read on the page at "
            "action_timeout_ms=%.0f, so the read was stopped: the step is judged without it",
            within_ms,
        )
        return None
    return Evidence(green.day, green.url, compared)


def unseen(tabs: Tabs, green: GreenRecord, within_ms: float) -> tuple[Found, ...] | None:
    """The locators of ``green`` that its code passed whatever they found (``must_find``), that
    found something then and find nothing now: a replay that raised nothing is green only where
    none is. Nothing is read where the record has none (most records: a replay pays nothing).
    None where they could not be read within ``within_ms`` (the reads are stopped, as
    ``compare``'s are, and the replay stands as it ran)."""
    needed = [then for then in green.found if then.must_find]
    if not needed:
        return ()
    page = tabs.page
    stop = ReadStop(page, f"the green record was read on the page past {within_ms:.0f} ms")
    # only a pattern can keep the page busy past any bound: arming the stop (a DevTools session)
    # costs each replay a round trip, so a record of plain locators is counted without it
    patterned = any("re.compile(" in then.locator for then in needed)
    lost: list[Found] = []
    with stop.armed(within_ms / 1000) if patterned else contextlib.nullcontext():
        for then in needed:
            target = None if locator_problem(then.locator) else locate(page, then.locator)
            finds = _count(target) if target is not None else None
            if stop.fired:
                break
            if finds == 0:
                lost.append(then)
    if stop.fired:
        tabs.ensure_open()
        record(
            LogEvent.EVIDENCE_STOPPED,
            "what the step's code must find again was still being read on the page at "
            "action_timeout_ms=%.0f, so the read was stopped: the replay stands as it ran",
            within_ms,
        )
        return None
    return tuple(lost)


def _count(target: Locator) -> int | None:
    """How many elements ``target`` finds now, without waiting; None where it cannot tell."""
    try:
        return target.count()
    except PlaywrightError:
        return None


class _OutOfTime(Exception):
    """A read of the comparison ended by its stop: no read more."""


class _Reads:
    """The reads of one comparison on a page: each element as a record keeps it; once the stop
    fired, none more."""

    def __init__(
        self, page: Page, stop: ReadStop, test_id_attribute: str, redact: Callable[[str], str]
    ) -> None:
        self.page, self.stop = page, stop
        self.test_id_attribute, self.redact = test_id_attribute, redact

    def _checked(self, elements: list[dict[str, Any]], locator: str) -> list[Found]:
        if self.stop.fired:
            raise _OutOfTime
        return [found(locator, element, self.redact) for element in elements]

    def finds(self, target: Locator, locator: str = "") -> list[Found]:
        return self._checked(describe_all(target, self.test_id_attribute, READ_CHARS), locator)

    def within(self, scope: Page | Locator) -> list[Found]:
        return self._checked(elements_within(scope, self.test_id_attribute, READ_CHARS), "")

    def compared(self, then: Found) -> Compared:
        """What one locator of the record finds now."""
        target = None if locator_problem(then.locator) else locate(self.page, then.locator)
        if target is None:
            return Compared(then, None)
        now = tuple(self.finds(target, then.locator))
        return Compared(then, now) if now else self.lost(then)

    def lost(self, then: Found) -> Compared:
        """A locator that finds nothing now: the elements like what it found, within what the
        chain before its last call finds (the page, a product card), and its rewrite to the
        one clear candidate, when the rewritten chain finds that one element."""
        page = self.page
        receiver = receiver_of(then.locator)
        scope = page if receiver == "" else locate(page, receiver) if receiver else None
        if scope is None:
            return Compared(then, ())
        candidates = ranked(then, self.within(scope))
        best = unambiguous(candidates)
        repair = ""
        if best is not None:
            call = last_call(then.locator)
            rewritten = rewrite(call, best.element) if call else None
            if rewritten and call:
                head, _, tail = then.locator.rpartition(call)
                target = locate(page, head + rewritten + tail)
                finds = self.finds(target) if target is not None else []
                if len(finds) == 1 and same(finds[0], best.element):
                    repair = rewritten
        return Compared(then, (), tuple(candidates[:SHOWN_CANDIDATES]), repair)


def describe(element: Found) -> str:
    """``button "Add to cart" [test id add-mug] (text "Add to cart")``."""
    parts = [element.role or element.tag or "element"]
    if element.name:
        parts.append(f'"{element.name}"')
    if element.test_id:
        parts.append(f"[test id {element.test_id}]")
    if element.text and element.text != element.name:
        parts.append(f'(text "{element.text}")')
    if element.role and element.tag and element.tag != element.role:  # an h2, an <a>
        parts.append(f"<{element.tag}>")
    return " ".join(parts)


def same(one: Found, other: Found) -> bool:
    return (one.role, one.name, one.test_id, one.text, one.tag) == (
        other.role,
        other.name,
        other.test_id,
        other.text,
        other.tag,
    )


# -- locator chains as the code spells them: get_by_role("article", name="Mug").first ---------


def _links(chain: str) -> list[ast.expr] | None:
    """The calls and attributes of a chain, from the page outwards; None when it is no chain
    of locating and narrowing calls with literal arguments."""
    try:
        node: ast.expr = ast.parse(chain, mode="eval").body
    except SyntaxError:
        return None
    links: list[ast.expr] = []
    while True:
        links.append(node)
        if isinstance(node, ast.Attribute) and node.attr in ("first", "last"):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in LOCATING_METHODS | _NARROWING:
                return None
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return list(reversed(links)) if node.func.id in LOCATING_METHODS else None
        else:
            return None


def _value(page: Page, node: ast.expr) -> Any:
    """A literal argument; ``re.compile("...", flags)`` as the pattern it compiles, a chain
    from ``page`` (``has=page.get_by_role(...)``) as its locator."""
    source = ast.unparse(node)
    if isinstance(node, ast.Call) and source.startswith("re.compile(") and not node.keywords:
        return re.compile(*(ast.literal_eval(arg) for arg in node.args))
    if source.startswith("page."):
        inner = locate(page, source.removeprefix("page."))
        if inner is None:
            raise ValueError(f"no locator: {source}")
        return inner
    return ast.literal_eval(node)


def locate(page: Page, chain: str) -> Locator | None:
    """The locator ``chain`` spells, on ``page``; None when it spells none."""
    links = _links(chain)
    if links is None:
        return None
    target: Any = page
    try:
        for link in links:
            if isinstance(link, ast.Attribute):
                target = getattr(target, link.attr)
                continue
            assert isinstance(link, ast.Call)
            name = link.func.id if isinstance(link.func, ast.Name) else link.func.attr  # type: ignore[attr-defined]
            if name == "frame_locator":
                return None
            args = [_value(page, arg) for arg in link.args]
            kwargs = {k.arg: _value(page, k.value) for k in link.keywords if k.arg}
            target = getattr(target, name)(*args, **kwargs)
    except (ValueError, TypeError, SyntaxError, re.error):
        return None
    return target


def _locating(links: list[ast.expr]) -> int | None:
    """The index of the chain's last locating call (after it: only narrowing)."""
    for index in range(len(links) - 1, -1, -1):
        link = links[index]
        if isinstance(link, ast.Call):
            func = link.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in LOCATING_METHODS:
                return index
    return None


def last_call(chain: str) -> str | None:
    """The chain's last locating call as spelt: ``get_by_role("button", name="Add")``."""
    links = _links(chain)
    index = _locating(links) if links else None
    if links is None or index is None:
        return None
    source = ast.get_source_segment(chain, links[index]) or ""
    if index == 0:
        return source
    receiver = ast.get_source_segment(chain, links[index - 1]) or ""
    return source[len(receiver) :].lstrip(".")


def built_from(chain: str) -> list[str]:
    """The locators a chain is built from, as it spells them, the outermost last:
    ``get_by_role("list").get_by_role("listitem").filter(has_text="x")`` is built from
    ``get_by_role("list")`` and ``get_by_role("list").get_by_role("listitem")``."""
    links = _links(chain)
    if links is None:
        return []
    spelt = [ast.get_source_segment(chain, link) or "" for link in links[:-1]]
    return [part for part in spelt if part and locator_problem(part) is None]


def receiver_of(chain: str) -> str | None:
    """What the chain's last locating call is made on: "" for the page, or the chain before
    it; None when it spells no chain."""
    links = _links(chain)
    index = _locating(links) if links else None
    if links is None or index is None:
        return None
    return "" if index == 0 else ast.get_source_segment(chain, links[index - 1])


def rewrite(call: str, element: Found) -> str | None:
    """``call`` rewritten in its own style to find ``element``: the test id for
    ``get_by_test_id``, the name for ``get_by_role`` (its role kept), a label's, a
    placeholder's, an alt text's or a title's name, the text for ``get_by_text``; None for a
    call that cannot be (a CSS locator, a pattern) and for a value that holds a secret's
    placeholder (the page shows the secret there: the placeholder finds nothing, and code never
    spells it)."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
        return None
    method = node.func.id
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    others = ", ".join(ast.get_source_segment(call, k) or "" for k in node.keywords)
    if method == "get_by_role":
        name = next((k for k in node.keywords if k.arg == "name"), None)
        if name is None or not isinstance(name.value, ast.Constant) or not element.name:
            return None
        if element.role != first.value or PLACEHOLDER.search(element.name):
            return None
        kept = [ast.get_source_segment(call, k) or "" for k in node.keywords if k.arg != "name"]
        rest = "".join(f", {k}" for k in kept)
        return f"get_by_role({_quoted(first.value)}, name={_quoted(element.name)}{rest})"
    value = {
        "get_by_test_id": element.test_id,
        "get_by_text": element.text,
        "get_by_label": element.name,
        "get_by_placeholder": element.name,
        "get_by_alt_text": element.name,
        "get_by_title": element.name,
    }.get(method, "")
    if not value or PLACEHOLDER.search(value):
        return None
    return f"{method}({_quoted(value)}{', ' + others if others else ''})"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
