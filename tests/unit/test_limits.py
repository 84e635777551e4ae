"""The memory headroom says once when it cannot hold."""

from __future__ import annotations

import logging
import sys

import pytest

from prettyplay_behave.safety import limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's headroom")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if getattr(r, "event", "") == "memory_headroom_unavailable"
    ]


def test_a_data_size_that_cannot_be_read_is_said_once(caplog, monkeypatch) -> None:
    monkeypatch.setattr(limits, "_data_bytes", lambda: 0)
    monkeypatch.setattr(limits, "_said", set())
    with caplog.at_level(logging.WARNING, "prettyplay"):
        for _ in range(3):
            with limits.memory_headroom():
                pass
    assert warnings(caplog) == [
        "the memory headroom of step code does not hold: the process's data size cannot be "
        "read from /proc/self/status; only the size caps bound what a step may build"
    ]


def test_a_limit_that_cannot_be_set_is_said_once(caplog, monkeypatch) -> None:
    import resource

    def refuse(*_: object) -> None:
        raise ValueError("not allowed here")

    monkeypatch.setattr(limits, "_said", set())
    monkeypatch.setattr(resource, "setrlimit", refuse)
    with caplog.at_level(logging.WARNING, "prettyplay"):
        for _ in range(2):
            with limits.memory_headroom():
                pass
    assert len(warnings(caplog)) == 1
    assert "the data segment limit cannot be set (not allowed here)" in warnings(caplog)[0]


def test_a_headroom_that_holds_says_nothing(caplog, monkeypatch) -> None:
    monkeypatch.setattr(limits, "_said", set())
    with caplog.at_level(logging.WARNING, "prettyplay"), limits.memory_headroom():
        pass
    assert warnings(caplog) == []
