"""Secrets: named in sentences as ``${NAME}``, typed by step code as ``secret("NAME")``.

The value comes from the environment at execution only. Requests, the cache, logs and reports
keep the placeholder; every known value is redacted (longest first) where values come in (what
step code reads from the page) and again where they go out (snapshots, error texts, attempt
records, requests, log records and reports), as written, in every URL- or HTML-encoded form a
page or a browser may give it, and in other spellings.
"""

from __future__ import annotations

import ast
import html.entities
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import CodePolicyError, ConfigError

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# Between two characters of a secret: up to three separators (spaces, dashes, dots, commas...).
_BETWEEN = r"[\W_]{0,3}"
MIN_SPELLED = 4  # shorter values are redacted as written only: their spellings are everywhere
# A cookie value shorter than this (a theme, a consent flag) carries no session: hiding it would
# redact every "1" or "dark" of every page.
MIN_HIDDEN = 8


def spellings(value: str) -> re.Pattern[str] | None:
    """A pattern of the other spellings of ``value`` that text may carry after a page echoed
    it: any case, reversed, and with separators between its characters (its own separators
    dropped or changed). None for a value of fewer than ``MIN_SPELLED`` letters and digits."""
    characters = [char for char in value if char.isalnum()]
    if len(characters) < MIN_SPELLED:
        return None
    forward = _BETWEEN.join(re.escape(char) for char in characters)
    backward = _BETWEEN.join(re.escape(char) for char in reversed(characters))
    return re.compile(f"{forward}|{backward}", re.IGNORECASE)


_ENTITY_NAMES = {chr(code): name for code, name in html.entities.codepoint2name.items()}


def _character_forms(char: str) -> str:
    """A pattern of the ways a URL or an HTML text may write ``char``: as itself,
    percent-encoded (its UTF-8 bytes, in either case), as a numeric or named entity, and a
    space as ``+``."""
    forms = [re.escape(char), "".join(f"%{byte:02x}" for byte in char.encode("utf-8"))]
    forms += [f"&#0*{ord(char)};", f"&#x0*{ord(char):x};"]
    if char in _ENTITY_NAMES:
        forms.append(f"&{_ENTITY_NAMES[char]};")
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def encodings(value: str) -> re.Pattern[str]:
    """A pattern of ``value`` in any mix of URL and HTML encodings (a form's GET request puts
    ``p@ss&w`` into the next page's URL as ``p%40ss%26w``; page markup writes ``&amp;``)."""
    return re.compile("".join(_character_forms(char) for char in value), re.IGNORECASE)


def secret_names(text: str) -> list[str]:
    """The names of the ``${NAME}`` placeholders in ``text``, in order, without repeats."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


class Secrets:
    """The run's secret values: looked up on demand, remembered for redaction."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self._values: dict[str, str] = {}
        self._hidden: dict[str, str] = {}  # value: name, for values met during the run
        self._spelled: list[tuple[str, re.Pattern[str]]] = []
        self._spelled_for: tuple[tuple[str, str], ...] = ()

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

    def hide(self, name: str, value: str) -> None:
        """Keep ``value`` out of everything that leaves from now on, as ``${name}``: a value the
        run met (a cookie step code read), not one of the environment. A value shorter than
        ``MIN_HIDDEN`` is left as it is."""
        if len(value) >= MIN_HIDDEN:
            self._hidden.setdefault(value, name)

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
        """The encodings, then the spellings, of every value, longest value first."""
        known = [*self._values.items(), *((name, value) for value, name in self._hidden.items())]
        key = tuple(sorted(known))
        if key != self._spelled_for:
            values = sorted(known, key=lambda item: -len(item[1]))
            self._spelled = [(name, encodings(value)) for name, value in values]
            self._spelled += [
                (name, pattern) for name, value in values if (pattern := spellings(value))
            ]
            self._spelled_for = key
        return self._spelled

    def found_in(self, code: str) -> str | None:
        """The name of a secret whose value (in any spelling) a string literal of ``code``
        holds."""
        if not self._values:  # no secret named yet: nothing to find (and no parse per replay)
            return None
        try:
            tree = ast.parse(code)
        except SyntaxError:  # the policy reports it
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                redacted = self.redact(node.value)
                for name in self._values:
                    placeholder = f"${{{name}}}"
                    if redacted.count(placeholder) > node.value.count(placeholder):
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
