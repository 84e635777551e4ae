"""A step library: the entries of one cache file, the address of a step, and how a step finds
its entry (see the package docstring; the order is :mod:`..address`'s).

Contract: everything here is in memory; :mod:`.format` reads and writes files of it and
:mod:`.store` keeps them on disk.
"""

from __future__ import annotations

import ast
import difflib
import re
import reprlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..address import Position, Scope, feature_of, lookup, of_a_feature, scenario_of
from ..errors import CacheError, escape_controls
from ..parameters import Parameters, parameterize
from ..safety.step_code import step_code
from ..vocabulary import Kind, Origin

FORMAT = 3  # the format the library is written in
READS = (1, 2, 3)  # the formats a file may be in (1 and 2 only to migrate them)
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")
NEAR = 0.6  # how alike two sentences must be (difflib's ratio) to be near
ORIGINS = tuple(str(origin) for origin in Origin if origin.stored)
RED_LABELS = ("product_defect", "incurable")
# Characters Windows (or a shell) refuses in file names; `/` is kept as the folder separator.
_HOSTILE = re.compile(r'[<>:"\\|?*\x00-\x1f]')

Validate = Callable[[str], None]

# What a green record may hold. It is data from a file a pull request can edit, and a failing
# step's evidence reads the page with its locators, so a loaded one is refused past these.
MAX_FOUND = 12  # the locators one record keeps at most
FIELD_CHARS = 80  # an element's role, name, test id, text or tag; the record's day
LOCATOR_CHARS = 400  # a locator as the code spells it
URL_CHARS = 2_000
# What a locator's ``re.compile(...)`` may set besides its pattern: what step code's ``re`` offers.
PATTERN_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL

# What a message quotes of a value the file holds: a few levels and items, whatever its size.
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxdict, _QUOTE.maxstring = 2, 4, 4, 200


def _quoted(value: object) -> str:
    return _QUOTE.repr(value)


def unknown_format(path: Path, version: object, library: bool = False) -> CacheError:
    """The error of a file in a format this prettyplay does not read in a file of its kind (a
    library file is of format 3, a JSON file of 1 or 2)."""
    if type(version) is int and version > FORMAT:
        return CacheError(
            f"{path}: cache format {version} is newer than this prettyplay reads (it reads "
            f"formats {', '.join(map(str, READS[:-1]))} and {READS[-1]}; upgrade "
            "prettyplay-behave to read this file)"
        )
    here = f"format {FORMAT} in a library file" if library else "formats 1 and 2 in a JSON file"
    return CacheError(f"{path}: cache format {_quoted(version)} is unknown (it reads {here})")


@dataclass(frozen=True)
class CacheKey:
    """The address of one step of one test: its test, kind, sentence (as the step has it, values
    filled in), data, occurrence (identical steps earlier in the test) and, for an Outline row,
    the Outline step it was made from."""

    test: str
    kind: str
    sentence: str
    data: str = ""
    occurrence: int = 1
    outline: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", str(Kind(self.kind)))

    @cached_property
    def parameters(self) -> Parameters:
        return parameterize(self.sentence, self.outline)

    @property
    def scenario(self) -> str:
        """The test's scenario: the scenario name, or the test's own name."""
        return scenario_of(self.test)

    @property
    def api(self) -> bool:
        """Whether it is a step of a test of the Python API: no feature file to share with, so
        its entries are its own (their ``feature`` is the test's name)."""
        return not of_a_feature(self.test)

    @property
    def feature(self) -> str:
        """What a pin names beside the scenario: the test's feature file (relative to the
        features folder), or the test's own name for a test of the Python API."""
        return feature_of(self.test)

    @property
    def position(self) -> Position:
        """Where the step stands, as its entries are found."""
        return Position.of(self.test, self.occurrence)


@dataclass(frozen=True)
class RedVerdict:
    """The verdict a red entry remembers."""

    label: str
    explanation: str
    recommendation: str = ""

    def __post_init__(self) -> None:
        # the LLM's words, or a planted file's: kept (and shown) with control characters escaped
        for name in ("explanation", "recommendation"):
            object.__setattr__(self, name, escape_controls(getattr(self, name)))


@dataclass(frozen=True)
class Found:
    """What one locator of a green step found: the element's properties, as far as it has them."""

    locator: str  # the locator as the code spells it, e.g. get_by_role("button", name="Add")
    role: str = ""
    name: str = ""
    test_id: str = ""
    text: str = ""
    tag: str = ""
    count: int = 1  # how many elements it found (the first described)
    # the code passed whether or not it found anything (a check that something is absent, a
    # count, the list a filter starts from): a replay is green only where it finds some again
    must_find: bool = False

    def __post_init__(self) -> None:
        for name in ("locator", "role", "name", "test_id", "text", "tag"):
            object.__setattr__(self, name, escape_controls(getattr(self, name)))


def locator_problem(locator: str) -> str | None:
    """What makes ``locator`` (a record's) one that evidence may not read the page with: past
    ``LOCATOR_CHARS``, no Python expression, or a pattern other than ``re.compile("...")``
    with ``PATTERN_FLAGS`` at most that Python compiles; None for one it may."""
    if len(locator) > LOCATOR_CHARS:
        return f"a locator of {len(locator):,} characters (at most {LOCATOR_CHARS})"
    try:
        tree = ast.parse(locator, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return f"the locator {_quoted(locator)} is no Python expression"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "re.compile"):
            continue
        arguments = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        pattern, flags = [*arguments, 0][:2] if 1 <= len(arguments) <= 2 else (None, None)
        if node.keywords or type(pattern) is not str or type(flags) is not int:
            return f'{_quoted(ast.unparse(node))}: a pattern is re.compile("..."[, flags])'
        if flags & ~PATTERN_FLAGS:
            return (
                f"{_quoted(ast.unparse(node))}: a pattern's flags are at most IGNORECASE, "
                "MULTILINE and DOTALL"
            )
        try:
            re.compile(pattern, flags)
        except (re.error, OverflowError, RecursionError, MemoryError) as exc:
            return f"{_quoted(ast.unparse(node))}: not a pattern ({exc})"
    return None


def record_problem(green: GreenRecord) -> str | None:
    """What makes ``green`` more than a record may hold (see ``MAX_FOUND`` and the lengths
    above, and :func:`locator_problem`); None for one within its bounds."""
    if len(green.found) > MAX_FOUND:
        return f"it keeps {len(green.found):,} locators (at most {MAX_FOUND})"
    texts = {"on": (green.day, FIELD_CHARS), "url": (green.url, URL_CHARS)}
    for index, found in enumerate(green.found, start=1):
        problem = locator_problem(found.locator)
        if problem:
            return f"found {index}: {problem}"
        for name in ("role", "name", "test_id", "text", "tag"):
            texts[f"found {index} {name}"] = (getattr(found, name), FIELD_CHARS)
    for name, (text, most) in texts.items():
        if len(text) > most:
            return f"{name} has {len(text):,} characters (at most {most})"
    return None


@dataclass(frozen=True)
class GreenRecord:
    """The last green run of an entry's code: when, on which page, and what its locators found
    there; the evidence a later failure of the same code is judged against."""

    day: str
    url: str = ""
    found: tuple[Found, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "day", escape_controls(self.day))
        object.__setattr__(self, "url", escape_controls(self.url))


@dataclass(frozen=True)
class StepEntry:
    """One entry of the step library."""

    kind: str
    sentence: str  # the template, ``{}`` for each parameter
    code: str
    origin: str
    data: str = ""
    parameters: tuple[str, ...] = ()  # what the code takes after ``page``
    values: tuple[str, ...] | None = None  # only these values, when set
    scenario: str | None = None  # pinned to this scenario of ``feature``, when set
    occurrence: int = 1  # the scenario's occurrence of the step it is pinned to
    model: str = ""
    written: str = ""  # the day its code was written
    verdict: RedVerdict | None = None
    wordings: tuple[str, ...] = ()  # other templates of the same kind and data it serves
    green: GreenRecord | None = None  # its last green run
    feature: str = ""  # only this feature's steps (with ``scenario``: that scenario's), when set

    def __post_init__(self) -> None:
        # One canonical form: the file stores lines, so code always ends in exactly one newline.
        object.__setattr__(self, "code", self.code.rstrip("\n") + "\n")

    @property
    def identity(self) -> tuple[object, ...]:
        """What two entries of one library may not share."""
        pin = (self.scenario, self.occurrence) if self.scenario is not None else (None, 0)
        return (self.kind, self.sentence, self.data, self.values, self.feature, *pin)

    @property
    def step(self) -> tuple[str, str, str]:
        """The step it is an entry of (kind, template, data): one library file holds them all."""
        return (self.kind, self.sentence, self.data)

    @property
    def red(self) -> bool:
        return self.verdict is not None

    def describe_step(self) -> str:
        """The step it is an entry of, as its library file holds it."""
        return f"{self.kind} {_quoted(self.sentence)}" + (" (with its data)" if self.data else "")

    @property
    def scope(self) -> Scope:
        """The steps it serves, as a lookup reads them."""
        return Scope(
            self.feature, self.scenario, self.occurrence, self.values, len(self.parameters)
        )

    def says(self, template: str) -> bool:
        """Whether ``template`` is its sentence or one of its wordings."""
        return template == self.sentence or template in self.wordings

    def takes(self, values: tuple[str, ...]) -> bool:
        """Whether its code can run for a sentence with ``values`` (another wording of it): the
        same values where the code spells them out, else one parameter for each value."""
        if self.values is not None:
            return self.values == values
        return len(self.parameters) == len(values)

    def describe(self) -> str:
        parts = [f"{self.kind} {_quoted(self.sentence)}"]
        if self.values is not None:
            parts.append(f"for {', '.join(map(repr, self.values))}")
        if self.scenario is not None:
            occurrence = f" #{self.occurrence}" if self.occurrence > 1 else ""
            parts.append(f"in {_quoted(self.scenario)}{occurrence}")
        if self.feature:
            parts.append(f"of {_quoted(self.feature)}")
        return " ".join(parts)


@dataclass(frozen=True)
class CacheWrite:
    """Code to keep for the step at ``key``: a library entry, specific to the step's values when
    the code spells them out, or pinned to the step's scenario (``pinned``), red with a
    ``verdict``; a test of the Python API's own; or, with ``wording_of``, the key's template as
    another wording of that entry (whose code ``code`` is)."""

    key: CacheKey
    code: str
    origin: str  # an Origin's value; checked when the entry is written
    pinned: bool = False
    verdict: RedVerdict | None = None
    model: str = ""
    wording_of: StepEntry | None = None
    green: GreenRecord | None = None  # the green run that wrote it

    def library_entry(self, written: str = "") -> StepEntry:
        key, parameters = self.key, self.key.parameters
        code = step_code(self.code)
        names, uses_all = code.parameters, code.uses_all_parameters
        # a red pin serves the values it failed with: another value of its step is its own case
        general = not self.verdict and bool(names) and uses_all
        general = general and len(names) == len(parameters.values)
        return StepEntry(
            kind=key.kind,
            sentence=parameters.template,
            code=self.code,
            origin=self.origin,
            data=key.data,
            parameters=names,
            values=None if general or not parameters.values else parameters.values,
            feature=key.feature if self.pinned or self.verdict or key.api else "",
            scenario=key.scenario if self.pinned or self.verdict else None,
            occurrence=key.occurrence,
            model=self.model,
            written=written,
            verdict=self.verdict,
            green=self.green,
        )


class Library:
    """Entries of the step library (the project's, or one file's), and the format they were
    read in; indexed by their place (kind, data, sentence) so that a lookup costs the same in a
    library of ten entries or ten thousand."""

    def __init__(self, entries: Iterable[StepEntry] = (), format: int = FORMAT) -> None:
        self.format = format
        self._entries: dict[tuple[object, ...], StepEntry] = {}
        self._places: dict[tuple[str, str, str], dict[tuple[object, ...], StepEntry]] = {}
        for entry in entries:
            self.upsert(entry)

    @property
    def entries(self) -> list[StepEntry]:
        """In the order they were added; a replaced entry keeps its place."""
        return list(self._entries.values())

    def find(self, key: CacheKey, pins: bool = True) -> StepEntry | None:
        """The entry that serves ``key``, in the order of a lookup (``pins=False``: the entry
        it would find without its scenario's pin): its template's entries, then the entries of
        its sentence as written (a format-1 entry of an Outline row), which take no values."""
        parameters = key.parameters
        templated = self._at(key.kind, key.data, parameters.template)
        literal = [e for e in self._at(key.kind, key.data, key.sentence) if not e.parameters]
        tiers = [
            ([(entry, entry.scope) for entry in templated], parameters.values),
            ([(entry, entry.scope) for entry in literal], ()),
        ]
        return lookup(key.position, tiers, pins)

    def get(self, identity: tuple[object, ...]) -> StepEntry | None:
        return self._entries.get(identity)

    def _at(self, kind: str, data: str, sentence: str) -> list[StepEntry]:
        return list(self._places.get((kind, data, sentence), {}).values())

    def upsert(self, entry: StepEntry) -> None:
        """Add ``entry``, or replace the one of its identity in place."""
        old = self._entries.get(entry.identity)
        if old is not None:
            self._unplace(old)
        self._entries[entry.identity] = entry
        for sentence in (entry.sentence, *entry.wordings):
            self._places.setdefault((entry.kind, entry.data, sentence), {})[entry.identity] = entry

    def remove(self, doomed: Iterable[StepEntry]) -> None:
        for entry in doomed:
            old = self._entries.pop(entry.identity, None)
            if old is not None:
                self._unplace(old)

    def _unplace(self, entry: StepEntry) -> None:
        for sentence in (entry.sentence, *entry.wordings):
            self._places.get((entry.kind, entry.data, sentence), {}).pop(entry.identity, None)


def closest(template: str, entries: Iterable[StepEntry], floor: float = NEAR) -> list[StepEntry]:
    """The ``entries`` whose sentence (or one of their wordings) is at least ``floor`` alike to
    ``template`` (difflib's ratio), the most alike first (ties in their order)."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(template)
    scored: list[tuple[float, StepEntry]] = []
    for entry in entries:
        best = 0.0
        for sentence in (entry.sentence, *entry.wordings):
            matcher.set_seq1(sentence)
            # the cheap upper bounds first, as difflib.get_close_matches does
            if matcher.real_quick_ratio() >= floor and matcher.quick_ratio() >= floor:
                best = max(best, matcher.ratio())
        if best >= floor:
            scored.append((best, entry))
    scored.sort(key=lambda scored_entry: -scored_entry[0])
    return [entry for _, entry in scored]


def locate(cache_dir: Path, test_name: str) -> tuple[Path, str]:
    """The per-feature file (formats 1 and 2) a test's entries were in, and the test's key
    inside it (its scenario)."""
    if of_a_feature(test_name):
        test_key = scenario_of(test_name)
        parts = _path_parts(test_name, feature_of(test_name))
    else:
        test_key = test_name
        parts = _path_parts(test_name, _HOSTILE.sub("_", test_name))
    parts[-1] += ".json"
    return cache_dir.joinpath(*parts), test_key


def _path_parts(test_name: str, path: str) -> list[str]:
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise CacheError(f"test {test_name!r}: its cache file would lie outside the cache folder")
    if not parts:
        raise CacheError(f"test {test_name!r}: no cache file name can be made from it")
    return parts
