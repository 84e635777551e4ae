"""Secrets: placeholders, resolution rules and redaction."""

from __future__ import annotations

import logging

import pytest

from prettyplay_behave.errors import CodePolicyError, ConfigError
from prettyplay_behave.safety.secrets import RedactingFilter, Secrets, secret_names


def test_placeholders_are_found_in_order_without_repeats() -> None:
    assert secret_names("log in as ${USER} with ${PASSWORD} (${USER})") == ["USER", "PASSWORD"]


def test_a_missing_secret_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="set the environment variable PASSWORD"):
        Secrets({}).require(["PASSWORD"], "log in with ${PASSWORD}")


def test_redaction_replaces_the_longest_value_first() -> None:
    secrets = Secrets({"SHORT": "abc", "LONG": "abcdef"})
    secrets.require(["SHORT", "LONG"], "s")
    assert secrets.redact("x abcdef y abc") == "x ${LONG} y ${SHORT}"


@pytest.mark.parametrize(
    "encoded",
    [
        "p%40ss+%26w0rd%3C",  # a GET form's query, as the browser writes it
        "p%40ss%20%26w0rd%3c",  # percent-encoded in lower case
        "p&#64;ss &amp;w0rd&lt;",  # page markup
        "p&#x40;ss&#32;&amp;w0rd&#60;",  # numeric entities
        "p%40ss &amp;w0rd<",  # a mix
    ],
)
def test_a_value_is_redacted_in_any_url_or_html_encoding(encoded: str) -> None:
    secrets = Secrets({"PASSWORD": "p@ss &w0rd<"})
    secrets.require(["PASSWORD"], "s")
    assert secrets.redact(f"/welcome?pw={encoded}&next=1") == "/welcome?pw=${PASSWORD}&next=1"


def test_text_without_the_value_keeps_its_encodings() -> None:
    secrets = Secrets({"PASSWORD": "p@ss &w0rd<"})
    secrets.require(["PASSWORD"], "s")
    assert secrets.redact("a%40b &amp; c+d") == "a%40b &amp; c+d"


def test_the_resolver_gives_only_the_steps_own_names_on_allowed_origins() -> None:
    secrets = Secrets({"PASSWORD": "hunter2", "OTHER": "x"})
    secrets.require(["PASSWORD", "OTHER"], "s")
    allowed = [True]
    secret = secrets.resolver(["PASSWORD"], lambda: allowed[0])
    assert secret("PASSWORD") == "hunter2"
    with pytest.raises(CodePolicyError, match="not named"):
        secret("OTHER")
    allowed[0] = False
    with pytest.raises(CodePolicyError, match="outside allowed_origins"):
        secret("PASSWORD")


def test_only_string_literals_count_as_a_leaked_value() -> None:
    secrets = Secrets({"PASSWORD": "secret"})
    secrets.require(["PASSWORD"], "s")
    typed = 'def step(page) -> None:\n    page.get_by_label("P").fill(secret("PASSWORD"))\n'
    leaked = 'def step(page) -> None:\n    page.get_by_label("P").fill("my secret")\n'
    assert secrets.found_in(typed) is None
    assert secrets.found_in(leaked) == "PASSWORD"


def test_log_records_are_redacted() -> None:
    secrets = Secrets({"TOKEN": "tok-123"})
    secrets.require(["TOKEN"], "s")
    record = logging.LogRecord("prettyplay", logging.INFO, "f", 1, "typed %s", ("tok-123",), None)
    RedactingFilter(secrets).filter(record)
    assert record.getMessage() == "typed ${TOKEN}"
