"""One entry schema: every field of a library entry as a library file holds it (a keyword of
``@step``), how its literal is read and checked, and how it is written back; the checks that
hold between fields and against the entry's code.

The library file's reader and writer (:mod:`.source`), the migration of formats 1 and 2
(:mod:`.legacy`), ``prettyplay cache list`` and ``prettyplay cache diff`` all read this table.
A new field of an entry is an attribute of ``StepEntry`` and a row of ``FIELDS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import CacheError, CodePolicyError, escape_controls
from ..parameters import MARK
from ..safety.step_code import step_code
from ..vocabulary import Kind, counted
from .library import (
    ORIGINS,
    RED_LABELS,
    Found,
    GreenRecord,
    RedVerdict,
    StepEntry,
    Validate,
    _quoted,
    record_problem,
)

Given = Mapping[str, Any]  # a file's keywords and their literals


@dataclass(frozen=True)
class Field:
    """One field of an entry: the ``@step`` keywords that hold it (the first its own), how the
    given literals become its value (a CacheError naming ``where`` when they cannot), the
    literals it is written as (none: left out of the file), and whether ``cache diff`` lists
    an entry whose field changed."""

    attribute: str
    keywords: tuple[str, ...]
    read: Callable[[str, Given], Any]
    write: Callable[[Any], dict[str, object]]
    reviewed: bool = False
    # what ``cache list`` notes of an entry by this field ("" nothing)
    noted: Callable[[StepEntry], str] | None = None


def _text(name: str, required: bool = False, shown: bool = False) -> Callable[[str, Given], Any]:
    """A string, required or "" when absent; ``shown``: what only describes the entry, read
    with its control characters escaped."""

    def read(where: str, given: Given) -> str:
        if name not in given:
            if required:
                raise CacheError(f"{where}: missing field {name!r}")
            return ""
        if not isinstance(given[name], str):
            raise CacheError(f"{where}: {name!r} must be a string")
        return escape_controls(given[name]) if shown else str(given[name])

    return read


def _texts(name: str, absent: object = ()) -> Callable[[str, Given], Any]:
    def read(where: str, given: Given) -> object:
        if name not in given:
            return absent
        value = given[name]
        if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
            raise CacheError(f"{where}: {name!r} must be a tuple of strings")
        return value

    return read


def _kind(where: str, given: Given) -> str:
    text = _text("kind", required=True)(where, given)
    try:
        return str(Kind(text))
    except ValueError:
        kinds = ", ".join(str(kind) for kind in Kind)
        raise CacheError(
            f"{where}: unknown kind {_quoted(text)} (expected one of {kinds})"
        ) from None


def _origin(where: str, given: Given) -> str:
    return origin_checked(where, _text("origin", required=True)(where, given))


def origin_checked(where: str, origin: str) -> str:
    if origin not in ORIGINS:
        raise CacheError(f"{where}: unknown origin {_quoted(origin)} (expected one of {ORIGINS})")
    return origin


def _scenario(where: str, given: Given) -> str | None:
    if "scenario" not in given:
        return None
    if "feature" not in given:
        raise CacheError(f"{where}: a pinned entry names its feature= beside its scenario=")
    return str(_text("scenario")(where, given))


def _occurrence(where: str, given: Given) -> int:
    occurrence = given.get("occurrence", 1)
    if type(occurrence) is not int or occurrence < 1:
        raise CacheError(
            f"{where}: 'occurrence' must be a whole number from 1, not {_quoted(occurrence)}"
        )
    if "occurrence" in given and "scenario" not in given:
        raise CacheError(f"{where}: 'occurrence' belongs to an entry pinned to a 'scenario'")
    return occurrence


def _verdict(where: str, given: Given) -> RedVerdict | None:
    if "verdict" not in given:
        if "explanation" in given or "recommendation" in given:
            raise CacheError(f"{where}: explanation= and recommendation= belong to a red entry")
        return None
    label = _text("verdict")(where, given)
    if label not in RED_LABELS:
        raise CacheError(
            f"{where}: a red entry's label is one of {RED_LABELS}, not {_quoted(label)}"
        )
    if "scenario" not in given:
        raise CacheError(f"{where}: a red entry ('verdict') is pinned to its 'scenario'")
    return RedVerdict(
        label,
        _text("explanation", required=True)(where, given),
        _text("recommendation")(where, given),
    )


def _written_verdict(verdict: RedVerdict | None) -> dict[str, object]:
    if verdict is None:
        return {}
    return {
        "verdict": verdict.label,
        "explanation": verdict.explanation,
        **({"recommendation": verdict.recommendation} if verdict.recommendation else {}),
    }


# What a record keeps of each element its locators found, in the order a file shows it; the
# default of each (left out of the file) is the dataclass's.
FOUND_TEXTS = ("locator", "role", "name", "test_id", "text", "tag")


def _found(where: str, item: object) -> Found:
    known = {*FOUND_TEXTS, "count", "must_find"}
    if not isinstance(item, dict) or set(item) - known:
        raise CacheError(f"{where}: 'green' 'found' items hold only {sorted(known)}")
    texts = {name: _text(name, required=name == "locator")(where, item) for name in FOUND_TEXTS}
    count, must_find = item.get("count", 1), item.get("must_find", False)
    if type(count) is not int or count < 1:
        raise CacheError(f"{where}: 'green' 'found' 'count' must be a whole number from 1")
    if type(must_find) is not bool:
        raise CacheError(f"{where}: 'green' 'found' 'must_find' must be True or False")
    return Found(**texts, count=count, must_find=must_find)


def _green(where: str, given: Given) -> GreenRecord | None:
    if "green" not in given:
        return None
    raw = given["green"]
    if not isinstance(raw, dict) or set(raw) - {"on", "url", "found"}:
        raise CacheError(f"{where}: 'green' must hold on, url and found")
    found = raw.get("found", ())
    if not isinstance(found, (tuple, list)):
        raise CacheError(f"{where}: 'green' 'found' must be a list of objects")
    elements = tuple(_found(where, item) for item in found)
    green = GreenRecord(_text("on", required=True)(where, raw), _text("url")(where, raw), elements)
    problem = record_problem(green)
    if problem:
        raise CacheError(f"{where}: 'green' is refused: {problem}")
    return green


def _written_green(green: GreenRecord | None) -> dict[str, object]:
    if green is None:
        return {}
    record: dict[str, object] = {"on": green.day}
    if green.url:
        record["url"] = green.url
    if green.found:
        record["found"] = [written_found(found) for found in green.found]
    return {"green": record}


def written_found(found: Found) -> dict[str, object]:
    """One element of a record as a file holds it: what it has, defaults left out."""
    item: dict[str, object] = {name: getattr(found, name) for name in FOUND_TEXTS}
    item = {name: value for name, value in item.items() if value}
    if found.count != 1:
        item["count"] = found.count
    if found.must_find:
        item["must_find"] = True
    return item


def _plain(keyword: str) -> Callable[[Any], dict[str, object]]:
    """Written as its own keyword, left out when it is empty."""
    return lambda value: {keyword: value} if value else {}


def _set(keyword: str) -> Callable[[Any], dict[str, object]]:
    """Written as its own keyword, left out when it is not set (None; empty is set)."""
    return lambda value: {} if value is None else {keyword: value}


def _pinned(entry: StepEntry) -> str:
    if entry.scenario is None:
        return ""
    occurrence = f" #{entry.occurrence}" if entry.occurrence > 1 else ""
    return f"pinned to {entry.scenario!r}{occurrence} of {entry.feature}"


def _red(entry: StepEntry) -> str:
    verdict = entry.verdict
    return f"RED: {verdict.label}: {verdict.explanation}" if verdict is not None else ""


def _quoted_all(values: tuple[str, ...] | None) -> str:
    return ", ".join(map(repr, values or ()))


# fmt: off
FIELDS: tuple[Field, ...] = (
    Field("kind", ("kind",), _kind, _plain("kind"), reviewed=True),
    Field("sentence", ("sentence",), _text("sentence", required=True), _plain("sentence")),
    Field("data", ("data",), _text("data"), _plain("data")),
    Field("values", ("values",), _texts("values", None), _set("values"), reviewed=True,
          noted=lambda e: f"for {_quoted_all(e.values)}" if e.values is not None else ""),
    Field("wordings", ("wordings",), _texts("wordings"), _plain("wordings"), reviewed=True,
          noted=lambda e: f"also {_quoted_all(e.wordings)}" if e.wordings else ""),
    Field("feature", ("feature",), _text("feature"), _plain("feature"),
          noted=lambda e: f"only {e.feature}" if e.feature and e.scenario is None else ""),
    Field("scenario", ("scenario",), _scenario, _set("scenario"), noted=_pinned),
    Field("occurrence", ("occurrence",), _occurrence, lambda _: {}),  # written with scenario
    Field("origin", ("origin",), _origin, _plain("origin"), reviewed=True),
    Field("model", ("model",), _text("model", shown=True), _plain("model")),
    Field("written", ("written",), _text("written", shown=True), _plain("written")),
    Field("verdict", ("verdict", "explanation", "recommendation"), _verdict, _written_verdict,
          reviewed=True, noted=_red),
    Field("green", ("green",), _green, _written_green),
)
# fmt: on
KEYWORDS = tuple(keyword for field in FIELDS for keyword in field.keywords)


def read_field(attribute: str, where: str, given: Given) -> Any:
    """One field of ``given`` keywords, read and checked as an entry's."""
    return next(f for f in FIELDS if f.attribute == attribute).read(where, given)


def entry_from(where: str, given: Given, code: str, validate: Validate) -> StepEntry:
    """The entry of ``given`` keywords and its ``code``, checked (see ``checked``)."""
    unknown = [keyword for keyword in given if keyword not in KEYWORDS]
    if unknown:
        raise CacheError(f"{where}: unknown keyword {_quoted(unknown[0])} of @step")
    values = {field.attribute: field.read(where, given) for field in FIELDS}
    entry = StepEntry(code=code, parameters=step_code(code).parameters, **values)
    return checked(where, entry, validate)


def keywords(entry: StepEntry) -> list[tuple[str, object]]:
    """The keywords an entry is written with, in the order of ``KEYWORDS``."""
    written: dict[str, object] = {}
    for field in FIELDS:
        written |= field.write(getattr(entry, field.attribute))
    if entry.scenario is not None:  # the occurrence of the step it is pinned to
        written["occurrence"] = entry.occurrence
    return [(keyword, written[keyword]) for keyword in KEYWORDS if keyword in written]


def notes(entry: StepEntry) -> list[str]:
    """What ``cache list`` notes of an entry: what narrows it or marks it, field by field."""
    return [note for field in FIELDS if field.noted and (note := field.noted(entry))]


def reviewed(entry: StepEntry) -> tuple[object, ...]:
    """What a review reads of an entry: a change in any of it (its code, or a reviewed field)
    lists the entry in ``cache diff``."""
    return (entry.code, *(getattr(entry, f.attribute) for f in FIELDS if f.reviewed))


def checked(where: str, entry: StepEntry, validate: Validate) -> StepEntry:
    """``entry`` when it may be kept: a known origin, code the policy passes, parameters its
    code takes, and values and wordings that fit its sentence's marks; else a CacheError naming
    ``where`` and the entry."""
    origin_checked(where, entry.origin)
    try:
        validate(entry.code)
    except CodePolicyError as exc:
        raise CacheError(f"{where} ({entry.describe()}): the code is refused: {exc}") from exc
    names = step_code(entry.code).parameters
    if names != entry.parameters:
        raise CacheError(
            f"{where} ({entry.describe()}): 'parameters' {list(entry.parameters)} are not what "
            f"its code takes after page ({list(names)})"
        )
    problem = _unmarked(entry)
    if problem:
        raise CacheError(f"{where} ({entry.describe()}): {problem}")
    return entry


def _unmarked(entry: StepEntry) -> str:
    """What of an entry disagrees with the marks (``{}``) of its sentence, which a lookup and
    the export read it by: a value a mark, code that takes no parameter or one a mark, and
    every wording as many marks. '' when nothing does."""
    marks = entry.sentence.count(MARK)
    spelled = f"its sentence has {counted(marks, 'mark')} ({MARK})"
    if entry.values is not None and len(entry.values) != marks:
        return f"'values' holds {counted(len(entry.values), 'value')}, but {spelled}"
    if len(entry.parameters) not in (0, marks):
        taken = counted(len(entry.parameters), "parameter")
        return f"its code takes {taken} after page, but {spelled}: none, or one a mark"
    for wording in entry.wordings:
        if wording.count(MARK) != marks:
            has = counted(wording.count(MARK), "mark")
            return f"the wording {_quoted(wording)} has {has}, but {spelled}"
    return ""
