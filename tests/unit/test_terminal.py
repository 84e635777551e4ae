"""The dialog's terminal says why it cannot hold a dialog: a piped stdout (``behave | tee``) with
a terminal on stdin is no terminal to talk on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TextIO

import pytest

from prettyplay_behave.interactive.terminal import Terminal


@pytest.fixture
def tty() -> Iterator[tuple[TextIO, TextIO]]:
    """A real terminal (a pseudo-terminal's end) and a real pipe."""
    leader, follower = os.openpty()
    read, write = os.pipe()
    with (
        os.fdopen(follower, "r") as terminal,
        os.fdopen(write, "w") as pipe,
        os.fdopen(read) as _,
    ):
        yield terminal, pipe
    os.close(leader)


def test_a_piped_stdout_is_said_to_be_no_terminal(tty: tuple[TextIO, TextIO]) -> None:
    terminal, pipe = tty
    assert Terminal(terminal, pipe).not_interactive() == "stdout is not a terminal"
    assert Terminal(pipe, terminal).not_interactive() == "stdin is not a terminal"
    assert Terminal(terminal, terminal).not_interactive() == ""
    assert Terminal(terminal, terminal).is_interactive()


def test_a_closed_stream_is_said_to_be_closed(tty: tuple[TextIO, TextIO]) -> None:
    terminal, _ = tty
    closed = open(os.devnull)  # noqa: SIM115
    closed.close()
    assert Terminal(terminal, closed).not_interactive() == "stdout is closed"
