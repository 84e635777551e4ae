"""Line input and output on the real terminal.

Output goes to ``sys.__stdout__``: behave captures ``sys.stdout`` while a step runs, which
would hide the prompt. Any input failure (EOF, Ctrl+C, a closed or unreadable stdin) reads as
the end of the dialog, so nothing ever blocks on it.
"""

from __future__ import annotations

import sys
from typing import TextIO

from colorama import Style


class Terminal:
    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.__stdin__
        self.stdout = stdout if stdout is not None else sys.__stdout__

    def is_interactive(self) -> bool:
        return not self.not_interactive()

    def not_interactive(self) -> str:
        """Why no dialog can be held here ("stdout is not a terminal"), or "" when one can."""
        for name, stream in (("stdin", self.stdin), ("stdout", self.stdout)):
            try:
                if stream is None or not stream.isatty():
                    return f"{name} is not a terminal"
            except (ValueError, OSError):  # a closed or detached stream
                return f"{name} is closed"
        return ""

    def colour(self, text: str, colour: str) -> str:
        return f"{colour}{text}{Style.RESET_ALL}"

    def write(self, text: str = "") -> None:
        assert self.stdout is not None
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str | None:
        """One line without its newline; None on EOF, Ctrl+C or an unreadable stdin."""
        assert self.stdout is not None and self.stdin is not None
        self.stdout.write(prompt)
        self.stdout.flush()
        try:
            line = self.stdin.readline()
        except (KeyboardInterrupt, OSError, ValueError, RuntimeError):
            self.stdout.write("\n")
            return None
        if not line:
            self.stdout.write("\n")
            return None
        return line.rstrip("\r\n")
