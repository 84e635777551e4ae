"""Every log event is defined once, in the table of ``log_events.py``, at one level; the docs'
table of log records has a row for each, with that level, and for nothing else; and every record
the package logs goes through ``record`` with an event of the table."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest

from prettyplay_behave.log_events import LogEvent, record

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "prettyplay_behave"
ROW = re.compile(r"^\| `([a-z_]+)` \| (DEBUG|INFO|WARNING|ERROR) \| .+ \|$", re.M)


def documented() -> dict[str, str]:
    docs = (ROOT / "docs" / "reporting.md").read_text(encoding="utf-8")
    table = docs[docs.index("## Log records") :]
    table = table[: table.index("\n\n", table.index("| event | level | when |"))]
    return dict(ROW.findall(table))


def test_the_docs_table_of_log_records_is_the_table_of_events() -> None:
    assert documented() == {e.event: logging.getLevelName(e.level) for e in LogEvent}


def test_event_names_are_unique_and_spelt_as_their_members() -> None:
    assert len({e.event for e in LogEvent}) == len(LogEvent)
    assert all(e.name == e.event.upper() for e in LogEvent)


def test_a_record_carries_its_event_at_its_level(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="prettyplay")
    record(LogEvent.CACHE_WRITE, "wrote %s", "x", extra_field=1)
    record(LogEvent.HOOK_FAILED, "a hook raised", exc_info=True)
    first, second = caplog.records
    assert (first.levelno, first.getMessage(), getattr(first, "event", None)) == (
        logging.INFO,
        "wrote x",
        "cache_write",
    )
    assert getattr(first, "extra_field", None) == 1
    assert (second.levelno, getattr(second, "event", None)) == (logging.ERROR, "hook_failed")


def _logging_calls(tree: ast.AST) -> list[int]:
    """The lines that log to a logger directly (``log.info(...)``,
    ``logging.getLogger("prettyplay").warning(...)``, ``extra={"event": ...}``)."""
    methods = {"debug", "info", "warning", "error", "exception", "critical", "log"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in methods:
            owner = ast.unparse(func.value)
            if owner == "log" or owner.startswith("logging.getLogger("):
                found.append(node.lineno)
        if any(k.arg == "extra" for k in node.keywords):
            found.append(node.lineno)
    return found


def test_every_record_goes_through_record_with_an_event_of_the_table() -> None:
    direct = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "log_events.py" and path.parent == PACKAGE:
            continue
        lines = _logging_calls(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            direct[str(path.relative_to(ROOT))] = lines
    assert direct == {}
