"""A scenario's memory: values one step's code remembers and a later step's code recalls.

Real Gherkin names what earlier steps saw ("the count has grown by one", "the order number is
the one shown at checkout"). Step code keeps such a value with ``remember(name, value)`` and
reads it back with ``recall(name)``, as a behave step keeps it on ``context``:

- a value is JSON-like: a string, a number, a boolean or None, or lists and string-keyed dicts
  of them, at most ``MAX_VALUE_CHARS`` characters as JSON; ``MAX_NAMES`` names a scenario;
- a name is a few words (``NAME``): letters, digits, spaces, ``_``, ``-`` and ``.``;
- a secret never enters it: a value that holds a secret's value or a ``${NAME}`` placeholder
  (what a value read back from the page, or a cookie, becomes once redacted), in any spelling
  the redactor knows (letter by letter, spaced, reversed, in any case, escaped), is refused; so
  is one that spells either with the values the scenario remembered before it (in the order
  they were remembered, the new value last or first);
- what an execution remembers counts only when it goes green (a red try leaves nothing behind),
  and a step run again (a replay, a clean page rebuilt, a group's recovery) remembers again;
- it lives and dies with its test: it is never written to the cache.

Every refusal and an unknown name are a :class:`MemoryUseError`: the execution is red with a
message that names the name, and for an unknown one what the earlier steps remembered.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_VALUE_CHARS = 4_000
MAX_NAMES = 50
MAX_DEPTH = 8
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.\-]{0,62}")
# A placeholder once its escapes are read and all but its letters, digits, $, { and } are gone.
_JOINED = re.compile(r"\$\{\w+\}")
_NO_LETTER = re.compile(r"[^\w${}]|_")
_ESCAPED = re.compile(r"\\+(?:u([0-9a-f]{4})|x([0-9a-f]{2}))|%(?:25)?([0-9a-f]{2})", re.IGNORECASE)


class MemoryUseError(Exception):
    """Step code used the scenario's memory in a way it may not; its execution is red."""


@dataclass(frozen=True)
class Remembered:
    """A value, and the sentence of the step that remembered it."""

    name: str
    value: Any
    step: str

    @property
    def shown(self) -> str:
        """The value as requests and reports show it (JSON)."""
        return json.dumps(self.value, ensure_ascii=False)


class ScenarioMemory:
    """The values a test's steps remembered, by name, the newest of each name."""

    def __init__(self) -> None:
        self._values: dict[str, Remembered] = {}

    def items(self) -> list[Remembered]:
        """Everything remembered, in the order it was first remembered."""
        return list(self._values.values())

    def execution(self, step: str, holds_secret: Callable[[str], bool]) -> Execution:
        """The memory as one execution of ``step``'s code sees it."""
        return Execution(self, step, holds_secret)

    def _keep(self, kept: dict[str, Remembered]) -> None:
        self._values.update(kept)


class Execution:
    """``remember`` and ``recall`` for one execution: what it remembers is kept on
    :meth:`commit` (a green execution) and dropped otherwise."""

    def __init__(
        self, memory: ScenarioMemory, step: str, holds_secret: Callable[[str], bool]
    ) -> None:
        self.memory = memory
        self.step = step
        self.holds_secret = holds_secret
        self.pending: dict[str, Remembered] = {}

    def remember(self, name: object, value: object) -> None:
        """Keep ``value`` under ``name`` for the later steps of the scenario."""
        name = _checked_name(name)
        text = _json(name, value)
        if self._holds_secret(text):
            raise MemoryUseError(
                f"remember({name!r}, ...): the value holds a secret (or a placeholder such as "
                "${NAME} that stands for one); a secret is never remembered"
            )
        # a secret or a placeholder split between this value and those kept before it
        kept = [r.shown for r in {**self.memory._values, **self.pending}.values() if r.name != name]
        if kept and any(self._holds_secret(joined) for joined in _joined(text, kept)):
            raise MemoryUseError(
                f"remember({name!r}, ...): the value and the values remembered before it hold "
                "a secret (or a placeholder such as ${NAME} that stands for one) between them; "
                "a secret is never remembered"
            )
        known = {*self.memory._values, *self.pending}
        if name not in known and len(known) >= MAX_NAMES:
            raise MemoryUseError(
                f"remember({name!r}, ...): a scenario remembers at most {MAX_NAMES} names"
            )
        self.pending[name] = Remembered(name, json.loads(text), self.step)

    def _holds_secret(self, text: str) -> bool:
        return self.holds_secret(text) or holds_placeholder(text)

    def recall(self, name: object) -> Any:
        """The value remembered under ``name`` (a copy: changing it changes nothing kept)."""
        name = _checked_name(name)
        found = self.pending.get(name) or self.memory._values.get(name)
        if found is None:
            raise MemoryUseError(_unknown(name, self.memory.items()))
        return json.loads(found.shown)

    def forget(self) -> None:
        """Drop what this execution remembered so far (a try that went red)."""
        self.pending = {}

    def commit(self) -> None:
        """Keep what this execution remembered (it went green)."""
        self.memory._keep(self.pending)
        self.pending = {}


def holds_placeholder(text: str) -> bool:
    """Whether ``text`` holds a ``${NAME}`` placeholder (a secret's, a cookie's: what a value
    becomes once redacted), whatever its name, in any spelling the redactor knows for a secret's
    value (``safety/secrets.py``): as written, its characters with any run of others than
    letters and digits between them (``str(list(p))``, halves in two items of a list, spaced;
    its name's own separators dropped or changed), in any case, reversed, and escaped as a URL,
    HTML, XML, JSON or Python escapes it, once or twice. Linear in the text."""
    plain = text
    for _ in range(2):  # escaped twice: %2524, &amp;#36;
        plain = _ESCAPED.sub(_unescaped, html.unescape(plain))
    joined = _NO_LETTER.sub("", plain)
    return bool(_JOINED.search(joined) or _JOINED.search(joined[::-1]))


def _unescaped(found: re.Match[str]) -> str:
    return chr(int(found[1] or found[2] or found[3], 16))


def _joined(text: str, kept: list[str]) -> tuple[str, str]:
    """The scenario's memory as one text, the new value last and first: a secret spelled in
    pieces across values is spelled there, in the order they were remembered."""
    return "\n".join([*kept, text]), "\n".join([text, *kept])


def _checked_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise MemoryUseError(
            f"{name!r} is no name to remember a value by: a few words of letters, digits, "
            "spaces, '_', '-' or '.', at most 63 characters"
        )
    return name


def _json(name: str, value: object) -> str:
    """``value`` as JSON, when it is JSON-like and small enough."""
    problem = _not_json_like(value)
    if problem:
        raise MemoryUseError(f"remember({name!r}, ...): {problem}")
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if len(text) > MAX_VALUE_CHARS:
        raise MemoryUseError(
            f"remember({name!r}, ...): the value takes {len(text):,} characters as JSON; a "
            f"remembered value takes at most {MAX_VALUE_CHARS:,}"
        )
    return text


def _not_json_like(value: object) -> str:
    """What keeps ``value`` from being remembered, or ''. Every item takes a character of JSON
    at least, so the walk stops past ``MAX_VALUE_CHARS`` items, whatever the value holds."""
    stack: list[tuple[object, int]] = [(value, 0)]
    for _ in range(MAX_VALUE_CHARS):
        if not stack:
            return ""
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"the value nests more than {MAX_DEPTH} deep"
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{item!r} is no number JSON can hold"
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, depth + 1) for inner in item[:MAX_VALUE_CHARS])
        elif isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return "a dict's keys must be strings"
            stack.extend((inner, depth + 1) for inner in list(item.values())[:MAX_VALUE_CHARS])
        else:
            return (
                f"a {type(item).__name__} cannot be remembered: only strings, numbers, booleans, "
                "None, and lists and dicts of them"
            )
    return "" if not stack else f"the value holds more than {MAX_VALUE_CHARS:,} items"


def _unknown(name: str, known: list[Remembered]) -> str:
    if not known:
        return f"recall({name!r}): no earlier step of this scenario remembered anything"
    listed = "; ".join(f"{r.name!r} (by the step {r.step!r})" for r in known)
    return f"recall({name!r}): nothing was remembered under {name!r}; remembered: {listed}"
