"""Secrets: named in sentences as ``${NAME}``, typed by step code as ``secret("NAME")``.

The value comes from the environment at execution only. Requests, the cache, logs and reports
keep the placeholder; every known value (a secret, or a cookie's value step code read: ``hide``)
is redacted (longest first) where values come in (what step code reads from the page) and again
where they go out (snapshots, error texts, attempt records, requests, log records and reports):
as written, in every URL-, HTML-, JSON- or Python-escaped form, and spelled letter by letter with
any separators between (``str(list(value))``), in any case, reversed. Redaction takes linear time
in the text, whatever the text.
"""

from __future__ import annotations

import html.entities
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import CodePolicyError, ConfigError
from .step_code import step_code

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# What may stand between two characters of a spelled value: any run of characters that are no
# letters or digits (the repr of a list of its letters puts four: ``', '``), among which up to
# ``MAX_ESCAPES`` escapes of such characters as JSON, Python, HTML or a URL writes them (``\u0027``,
# ``\x2c``, ``&#39;``, ``&apos;``, ``%2C``). Plain separators and escapes start with characters of
# their own, and an escape can be read in at most two ways; escapes hold letters, which could
# start a match, so their bound keeps a search of any text linear.
MAX_ESCAPES = 16
_PLAIN = r"(?:[^\w\\&%]|_)*"
_ESCAPE = (
    r"(?:\\(?:u[0-9a-f]{4}|x[0-9a-f]{2})?"
    r"|&(?:[a-z]{2,8};)?(?:#x?[0-9a-f]{1,6};?)?"
    r"|%(?:(?:25)?[0-9a-f]{2})?)"
)
_BETWEEN = f"{_PLAIN}(?:{_ESCAPE}{_PLAIN}){{0,{MAX_ESCAPES}}}"
MIN_SPELLED = 4  # shorter values are redacted as written only: their spellings are everywhere
# A cookie value shorter than this (a theme, a consent flag) carries no session: hiding it would
# redact every "1" or "dark" of every page.
MIN_HIDDEN = 8


def spellings(value: str) -> re.Pattern[str] | None:
    """A pattern of the other spellings of ``value`` that text may carry after a page or step
    code echoed it: any case, reversed, and with any separators between its letters and digits
    (its own separators dropped or changed; see ``_BETWEEN``), each letter or digit as written
    or escaped (see :func:`_letter`). None for a value of fewer than ``MIN_SPELLED`` letters and
    digits."""
    characters = [char for char in value if char.isalnum()]
    if len(characters) < MIN_SPELLED:
        return None
    forms = [_letter(char, _any_case_forms) for char in characters]
    forward = _BETWEEN.join(forms)
    backward = _BETWEEN.join(reversed(forms))
    start = _starts("".join(characters[:2]), "".join(characters[-1:-3:-1]))
    return re.compile(f"{start}(?:{forward}|{backward})", re.IGNORECASE)


def _starts(*pairs: str) -> str:
    """A lookahead for where a match of the pattern may start: an escape, or the first
    character of one of ``pairs`` (two characters each: how a form starts) followed by the
    second or by a separator. The search then passes over most positions of a text at once."""
    branches = [r"[%&\\]"]
    for pair in pairs:
        branches.append(
            re.escape(pair[0]) + (f"(?:{re.escape(pair[1])}|[\\W_])" if pair[1:] else "")
        )
    return "(?=" + "|".join(branches) + ")"


_ENTITY_NAMES = {chr(code): name for code, name in html.entities.codepoint2name.items()}
_ENTITY_NAMES["'"] = "apos"  # XML's (JUnit files), not in HTML 4's table
# The backslashes of one escape: one, or more when a second encoding doubled them. Bounded
# repetitions only: a free one would cost quadratic time on a long run of backslashes.
_BACKSLASH = r"\\{1,4}"


def _escapes(char: str) -> list[str]:
    r"""Patterns of ``char`` escaped as JSON and JavaScript (``\u0026``, a pair of surrogates
    beyond the first plane), Python (``\x26``, ``\U0001f600``) and after a backslash (``\"``),
    its backslash possibly doubled by a second encoding."""
    code = ord(char)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms = [rf"{_BACKSLASH}u{high:04x}{_BACKSLASH}u{low:04x}", rf"{_BACKSLASH}U{code:08x}"]
    else:
        forms = [rf"{_BACKSLASH}u{code:04x}"]
    if code < 0x100:
        forms.append(rf"{_BACKSLASH}x{code:02x}")
    if not char.isalnum():
        forms.append(_BACKSLASH + re.escape(char))
    return forms


def _character_forms(char: str) -> str:
    """A pattern of the ways a URL, an HTML or XML text, a JSON or a Python text may write
    ``char``: as itself, percent-encoded (its UTF-8 bytes, in either case, once or twice), as a
    numeric or named entity (escaped again too: ``&amp;amp;``), escaped with a backslash, and a
    space as ``+``."""
    forms = [re.escape(char), "".join(f"%(?:25)?{byte:02x}" for byte in char.encode("utf-8"))]
    forms += [f"&(?:amp;)?#0{{0,4}}{ord(char)};", f"&(?:amp;)?#x0{{0,4}}{ord(char):x};"]
    if char in _ENTITY_NAMES:
        forms.append(f"&(?:amp;)?{_ENTITY_NAMES[char]};")
    forms += _escapes(char)
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _letter(char: str, forms: Callable[[str], str]) -> str:
    """``char`` as itself when it is an ASCII letter or digit (no encoder escapes those, and a
    pattern of every escape of every letter takes long to compile), else in its ``forms``."""
    return re.escape(char) if char.isascii() and char.isalnum() else forms(char)


def _any_case_forms(char: str) -> str:
    """``char`` written in any of its forms, in either case (an escape names the case)."""
    cases = dict.fromkeys([char, char.lower(), char.upper()])
    return "(?:" + "|".join(_character_forms(case) for case in cases if len(case) == 1) + ")"


def encodings(value: str) -> re.Pattern[str]:
    r"""A pattern of ``value`` in any mix of URL, HTML, JSON and Python encodings (a form's GET
    request puts ``p@ss&w`` into the next page's URL as ``p%40ss%26w``; page markup writes
    ``&amp;``; a JSON serialiser may write ``p@ss\u0026w``)."""
    forms = "".join(_letter(char, _character_forms) for char in value)
    return re.compile(_starts(value[:2]) + forms if value else forms, re.IGNORECASE)


# What marks a cut made before a text reached the redactor: Playwright's call log shows an
# element's text cut at 50 characters, its attributes at 500, each ending in "…".
_ELLIPSIS = r"(?:\u2026|\.\.\.)"


def cut_start(value: str) -> re.Pattern[str] | None:
    """A pattern of a start of ``value`` that someone else's cut ended: its first
    ``MIN_SPELLED`` characters or more (not all of them), as written in any case, right before
    an ellipsis. None for a value too short to have such a start."""
    if len(value) <= MIN_SPELLED:
        return None
    rest = value[MIN_SPELLED:-1]
    # one optional group inside the other, a character each: a match is tried in linear time
    longer = "".join(f"(?:{re.escape(char)}" for char in rest) + ")?" * len(rest)
    return re.compile(f"{re.escape(value[:MIN_SPELLED])}{longer}(?={_ELLIPSIS})", re.IGNORECASE)


def secret_names(text: str) -> list[str]:
    """The names of the ``${NAME}`` placeholders in ``text``, in order, without repeats."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


class Secrets:
    """The run's secret values: looked up on demand, remembered for redaction."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self._values: dict[str, str] = {}
        self._hidden: dict[str, str] = {}  # value: name, for values met during the run
        self._met: Counter[str] = Counter()  # name: how many values were met under it
        self._spelled: list[tuple[str, re.Pattern[str]]] = []
        self._spelled_for: tuple[tuple[str, str], ...] = ()
        # value: its patterns, compiled once (a long value's take some milliseconds)
        self._compiled: dict[str, tuple[re.Pattern[str] | None, ...]] = {}

    def require(self, names: Iterable[str], sentence: str) -> None:
        """Fail before a step runs when one of its secrets is not set; remember the values."""
        for name in names:
            value = self.environ.get(name)
            if not value:
                raise ConfigError(
                    name,
                    "(unset)",
                    "environment",
                    f"the step {sentence!r} names ${{{name}}}: set the environment variable {name}",
                )
            self._values[name] = value

    def filled(self, value: Any, setting: str, source: str) -> Any:
        """``value`` (a setting's table) with each ``${NAME}`` replaced by the environment
        variable's value, remembered for redaction; an unset one is a ConfigError."""
        if isinstance(value, str):
            for name in secret_names(value):
                if not self.environ.get(name):
                    raise ConfigError(
                        setting,
                        "(not shown)",
                        source,
                        f"it names ${{{name}}}: set the environment variable {name}",
                    )
                self._values[name] = self.environ[name]
            return PLACEHOLDER.sub(lambda found: self._values[found.group(1)], value)
        if isinstance(value, Mapping):
            return {key: self.filled(item, setting, source) for key, item in value.items()}
        if isinstance(value, list):
            return [self.filled(item, setting, source) for item in value]
        return value

    def resolver(
        self, names: Iterable[str], origin_allowed: Callable[[], bool]
    ) -> Callable[[str], str]:
        """``secret("NAME")`` for one step: only its own names, only on an allowed origin."""
        own = set(names)

        def secret(name: str) -> str:
            if name not in own:
                raise CodePolicyError(f"secret({name!r}) is not named as ${{{name}}} in the step")
            if not origin_allowed():
                raise CodePolicyError(
                    f"secret({name!r}) is refused here: the page is outside allowed_origins"
                )
            return self._values[name]

        return secret

    def hide(self, name: str, value: str) -> str:
        """Keep ``value`` out of everything that leaves from now on, as ``${name}``: a value the
        run met (a cookie step code read), not one of the environment. Its placeholder is
        returned; a second value under the same name is ``${name (2)}``, so two values stay told
        apart (a session that changed at login). A value shorter than ``MIN_HIDDEN`` is left as
        it is, and returned as it is."""
        if len(value) < MIN_HIDDEN:
            return value
        if value not in self._hidden:
            self._met[name] += 1
            count = self._met[name]
            self._hidden[value] = name if count == 1 else f"{name} ({count})"
        return f"${{{self._hidden[value]}}}"

    def redact(self, text: str) -> str:
        """``text`` with every known value replaced by its placeholder, longest value first: as
        written or in any URL or HTML encoding (see :func:`encodings`), then in every other
        spelling (see :func:`spellings`)."""
        if not self._values and not self._hidden:
            return text
        for name, pattern in self._patterns():
            text = pattern.sub(f"${{{name}}}", text)
        return text

    def _patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        """The encodings, then the spellings, then the cut starts of every value, longest
        value first."""
        known = [*self._values.items(), *((name, value) for value, name in self._hidden.items())]
        key = tuple(sorted(known))
        if key != self._spelled_for:
            values = sorted(known, key=lambda item: -len(item[1]))
            for _, value in values:
                if value not in self._compiled:
                    made = (encodings(value), spellings(value), cut_start(value))
                    self._compiled[value] = made
            self._spelled = [
                (name, pattern)
                for kind in range(3)
                for name, value in values
                if (pattern := self._compiled[value][kind])
            ]
            self._spelled_for = key
        return self._spelled

    def found_in(self, code: str) -> str | None:
        """The name of a secret whose value (in any spelling) a string literal of ``code``
        holds."""
        if not self._values:  # no secret named yet: nothing to find
            return None
        for literal in step_code(code).strings:
            redacted = self.redact(literal)
            for name in self._values:
                placeholder = f"${{{name}}}"
                if redacted.count(placeholder) > literal.count(placeholder):
                    return name
        return None


class RedactingFilter(logging.Filter):
    """Redacts the run's secret values from every record of the ``prettyplay`` logger."""

    def __init__(self, secrets: Secrets) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.secrets.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        raw = getattr(record, "raw_answer", None)
        if isinstance(raw, str):
            record.raw_answer = self.secrets.redact(raw)
        return True
