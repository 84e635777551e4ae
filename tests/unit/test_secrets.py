"""Secrets: placeholders, resolution rules and redaction."""

from __future__ import annotations

import json
import logging
import time

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


# -- spellings with any separators, escaped forms, decoded storage ------------------------------

CODE = "Pa@ss&w0rd-7Hq2"


def known(value: str = CODE) -> Secrets:
    secrets = Secrets({"CODE": value})
    secrets.require(["CODE"], "s")
    return secrets


@pytest.mark.parametrize(
    "spelled",
    [
        str(list(CODE)),  # one letter per item: four separators between two letters
        str(list(CODE[::-1])),
        "\n\n".join(CODE),
        (" " * 40).join(CODE.upper()),
        "', '".join(CODE).join("[]"),
        str(list(CODE)).replace("'", "&apos;"),  # an XML attribute (JUnit)
        str(list(CODE)).replace("'", "&#x27;"),  # html.escape
        json.dumps(str(list(CODE))),
        ascii(list(CODE)),
    ],
)
def test_a_value_split_letter_by_letter_with_any_separators_is_redacted(spelled: str) -> None:
    redacted = known().redact(f"got {spelled} here")
    assert "${CODE}" in redacted
    assert "w0rd" not in redacted.replace(" ", "").replace("'", "").replace(",", "")


@pytest.mark.parametrize(
    "escaped",
    [
        json.dumps({"p": CODE}).replace("&", "\\u0026"),  # a serialiser safe for HTML
        json.dumps(json.dumps({"p": CODE}).replace("&", "\\u0026")),  # that JSON in JSON
        "Pa\\x40ss\\x26w0rd\\x2d7Hq2",  # a Python repr of bytes
        "Pa%2540ss%2526w0rd-7Hq2",  # percent-encoded twice
        "Pa@ss&amp;amp;w0rd-7Hq2",  # an entity escaped again
    ],
)
def test_a_value_is_redacted_in_json_python_and_doubly_escaped_forms(escaped: str) -> None:
    redacted = known().redact(escaped)
    assert "${CODE}" in redacted, redacted
    assert "w0rd" not in redacted


@pytest.mark.parametrize(
    "spelled",
    [
        "p%C3%A4ssw%C3%B6rt-Zx9w",  # a URL's
        json.dumps("pässwört-Zx9w"),  # ensure_ascii: \u00e4
        str(list("PÄSSWÖRT-ZX9W")),
        ascii(list("pässwört-Zx9w")),  # '\xe4'
    ],
)
def test_a_letter_beyond_ascii_is_matched_in_its_escapes_too(spelled: str) -> None:
    redacted = known("pässwört-Zx9w").redact(spelled)
    assert "${CODE}" in redacted, redacted
    assert "Zx9w" not in redacted


def test_a_secret_in_unpadded_json_in_a_storage_line_of_a_request_is_redacted() -> None:
    """The snapshot's line for a key the app keeps, as a request carries it."""
    stored = json.dumps({"user": "ann", "p": CODE}, separators=(",", ":")).replace("&", "\\u0026")
    line = f"  local {json.dumps('draft')}: {json.dumps(stored, ensure_ascii=False)}"
    assert known().redact(line) == '  local "draft": "{\\"user\\":\\"ann\\",\\"p\\":\\"${CODE}\\"}"'


def test_text_without_the_value_is_left_alone_however_it_is_escaped() -> None:
    text = "Pa\\u0026ss &amp; w0rd: 7 %26 [\\x27Pa\\x27] ', ' P, a, s, s"
    assert known().redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "P" + "\\" * 20_000 + "x",
        "P" + "&amp;" * 5_000 + "x",
        "P" + "%25" * 7_000 + "x",
        ("Pa" + ", " * 50) * 400,
        "\\u0050\\x61" * 5_000,
        "Pa@ss&w0rd-7Hq " * 2_000,
        "Pa@ss&w0rd-7H" * 2_000 + "x…",  # a start of the value again and again, no ellipsis
    ],
)
def test_redaction_takes_linear_time_on_texts_made_to_backtrack(text: str) -> None:
    secrets = known()
    secrets.hide("cookie sid", "s3cr3t-Session-7Hq2Zx9w")
    started = time.monotonic()
    secrets.redact(text)
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("<p>Found: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxPa@ss&w…</p>", "xxx${CODE}…</p>"),
        ('data-info="Found: PA@SS&W0RD-7…', "Found: ${CODE}…"),  # any case
        ("a start cut as some write it: Pa@ss&w0...", "it: ${CODE}..."),
        ("Pa@s… and Pa@… and Pa@ss and Pa@ss…x", "${CODE}… and Pa@… and Pa@ss and ${CODE}…x"),
    ],
)
def test_the_start_of_a_value_that_anothers_cut_ended_with_an_ellipsis_is_redacted(
    text: str, redacted: str
) -> None:
    """Playwright's call log shows an element's text cut at 50 characters, ``…`` after it,
    before the text reaches any redactor: the start of a value is not shown there either, from
    its fourth character on; without the ellipsis, a start is no cut."""
    assert redacted in known().redact(text)


def test_a_hidden_value_gives_its_placeholder_and_a_second_value_its_own() -> None:
    secrets = Secrets({})
    assert secrets.hide("cookie sid", "first-Session-1") == "${cookie sid}"
    assert secrets.hide("cookie sid", "first-Session-1") == "${cookie sid}"
    assert secrets.hide("cookie sid", "second-Session-2") == "${cookie sid (2)}"
    assert secrets.hide("cookie theme", "dark") == "dark"  # too short to be a session
    assert secrets.redact(str(list("second-Session-2"))) == "['${cookie sid (2)}']"
    assert secrets.redact("theme dark") == "theme dark"
