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


def secret_names(text: str) -> list[str]:
    """The names of the ``${NAME}`` placeholders in ``text``, in order, without repeats."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


class Secrets:
    """The run's secret values: looked up on demand, remembered for redaction."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self._values: dict[str, str] = {}

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
        """``text`` with every known value replaced by its placeholder, longest value first."""
        for name, value in sorted(self._values.items(), key=lambda item: -len(item[1])):
            if value in text:
                text = text.replace(value, f"${{{name}}}")
        return text

    def found_in(self, code: str) -> str | None:
        """The name of a secret whose value a string literal of ``code`` holds."""
        try:
            tree = ast.parse(code)
        except SyntaxError:  # the policy reports it
            return None
        literals = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
        return next(
            (name for name, value in self._values.items() if any(value in s for s in literals)),
            None,
        )


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
