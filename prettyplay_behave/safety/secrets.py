"""Secrets: named in sentences as ``${NAME}``, typed by step code as ``secret("NAME")``.

The value comes from the environment at execution only. Requests, the cache, logs and reports
keep the placeholder; every known value is redacted (longest first) from what leaves the page:
snapshots, error texts, attempt records, requests and log records.
"""

from __future__ import annotations

import ast
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping

from ..errors import CodePolicyError, ConfigError

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# Between two characters of a secret: up to three separators (spaces, dashes, dots, commas...).
_BETWEEN = r"[\W_]{0,3}"
MIN_SPELLED = 4  # shorter values are redacted as written only: their spellings are everywhere


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


def secret_names(text: str) -> list[str]:
    """The names of the ``${NAME}`` placeholders in ``text``, in order, without repeats."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


class Secrets:
    """The run's secret values: looked up on demand, remembered for redaction."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self._values: dict[str, str] = {}
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

    def redact(self, text: str) -> str:
        """``text`` with every known value replaced by its placeholder, longest value first,
        and then every other spelling of it (see :func:`spellings`)."""
        for name, value in sorted(self._values.items(), key=lambda item: -len(item[1])):
            if value in text:
                text = text.replace(value, f"${{{name}}}")
        for name, pattern in self._spellings():
            text = pattern.sub(f"${{{name}}}", text)
        return text

    def _spellings(self) -> list[tuple[str, re.Pattern[str]]]:
        key = tuple(sorted(self._values.items()))
        if key != self._spelled_for:
            self._spelled = [
                (name, pattern)
                for name, value in sorted(self._values.items(), key=lambda item: -len(item[1]))
                if (pattern := spellings(value)) is not None
            ]
            self._spelled_for = key
        return self._spelled

    def found_in(self, code: str) -> str | None:
        """The name of a secret whose value (in any spelling) a string literal of ``code``
        holds."""
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
