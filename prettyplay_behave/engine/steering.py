"""Interactive steering: the terminal dialog where an engineer guides a stuck step.

It opens exactly where an ``IncurableStepError`` would propagate, and only when ``interactive``
is on, the run is not strict, the LLM is there, stdin and stdout are terminals and ``CI`` is
unset. Every turn shows the complete code and asks before running it; every turn, run or
rejected, joins the step's history. ``quit``, EOF, Ctrl+C, an unreadable stdin or an unavailable
provider end the dialog, and the original failure propagates. A green turn that passes the
compliance gate is written to the cache (origin ``steered``) and the test goes on.

Output goes to the real terminal (``sys.__stdout__``): behave captures ``sys.stdout`` while a
step runs, which would hide the prompt.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from colorama import Fore, Style

from ..errors import IncurableStepError, ProviderUnavailableError
from ..events import record
from .history import GREEN, REJECTED, Attempt

if TYPE_CHECKING:
    from ..config import PrettyConfig
    from .executor import StepCycle

STEERED = "steered"
COMMANDS = "snapshot | screenshot | error | code | quit"
LABEL_WIDTH = 10


class Terminal:
    """Line input and output on the real terminal; any input failure reads as the end."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.__stdin__
        self.stdout = stdout if stdout is not None else sys.__stdout__

    def is_interactive(self) -> bool:
        try:
            return bool(self.stdin and self.stdout and self.stdin.isatty() and self.stdout.isatty())
        except (ValueError, OSError):  # a closed or detached stream
            return False

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


def steering_allowed(config: PrettyConfig, llm_available: bool, terminal: Terminal) -> bool:
    """The dialog's rules: opt-in, never strict, never in CI, never without LLM or terminal."""
    return (
        config.interactive
        and not config.strict
        and not os.environ.get("CI")
        and llm_available
        and terminal.is_interactive()
    )


def _labelled(label: str, text: str) -> str:
    lines = text.rstrip("\n").split("\n") or [""]
    pad = " " * LABEL_WIDTH
    head = f"{label + ':':<{LABEL_WIDTH}}{lines[0]}"
    return "\n".join([head, *(pad + line for line in lines[1:])])


class SteeringDialog:
    """One dialog about one stuck step."""

    def __init__(self, cycle: StepCycle, failure: IncurableStepError, terminal: Terminal) -> None:
        self.cycle = cycle
        self.failure = failure
        self.terminal = terminal
        self.page = cycle.test.page

    def run(self) -> bool:
        """True when a turn went green and was written; False: the failure propagates."""
        self.banner()
        try:
            while True:
                line = self.terminal.ask("guidance> ")
                if line is None or line.strip() == "quit":
                    return self.end("the dialog ended; the original failure stands")
                command = line.strip()
                if not command:
                    continue
                if command in LOCAL_COMMANDS:
                    LOCAL_COMMANDS[command](self)
                elif self.turn(command):
                    return True
        except ProviderUnavailableError as exc:
            return self.end(f"the LLM is unavailable ({exc}); the original failure stands")
        except IncurableStepError as exc:  # the compliance gate could not judge
            return self.end(f"{exc.headline}; the original failure stands")
        except KeyboardInterrupt:
            return self.end("interrupted; the original failure stands")

    def end(self, message: str) -> bool:
        self.terminal.write(self.terminal.colour(f"✗ {message}", Fore.RED))
        self.terminal.write()
        return False

    # -- the banner and the local commands -----------------------------------------------------

    def banner(self) -> None:
        title = f'── step "{self.cycle.spec.sentence}" — about to raise IncurableStepError '
        self.terminal.write()
        self.terminal.write(self.terminal.colour(title.ljust(72, "─"), Fore.YELLOW))
        self.terminal.write(_labelled("code", self.failure.code or "(none)"))
        self.terminal.write(_labelled("error", self.failure.render()))
        self.terminal.write(_labelled("url", self.page.url))
        self.terminal.write(_labelled("shot", self.screenshot_path()))
        self.terminal.write(_labelled("commands", COMMANDS))

    def screenshot_path(self) -> str:
        handle, path = tempfile.mkstemp(prefix="prettyplay-steering-", suffix=".png")
        os.close(handle)
        try:
            self.page.screenshot(path=path, full_page=True)
        except Exception as exc:  # a crashed page still gets its dialog
            return f"(no screenshot: {exc})"
        return path

    def show_snapshot(self) -> None:
        snapshot = self.page.locator("body").aria_snapshot()
        self.terminal.write(self.cycle.executor.secrets.redact(snapshot))

    def show_screenshot(self) -> None:
        self.terminal.write(self.screenshot_path())

    def show_error(self) -> None:
        self.terminal.write(self.failure.render())

    def show_code(self) -> None:
        self.terminal.write(self.failure.code or "(none)")

    # -- a guided turn -----------------------------------------------------------------------

    def turn(self, guidance: str) -> bool:
        """One guided regeneration; True when it went green, passed the gate and was written."""
        cycle = self.cycle
        record(logging.INFO, "guidance", "guidance for %r: %s", cycle.spec.sentence, guidance)
        self.terminal.write(self.terminal.colour("⟳ regenerating with USER GUIDANCE", Fore.CYAN))
        code = cycle.ask_code("steer", guidance=guidance)
        if isinstance(code, Attempt):
            cycle.history.append(code)
            self.terminal.write(_labelled("outcome", f"{code.outcome}: {code.text}"))
            return False
        self.terminal.write("generated code:")
        self.terminal.write(code.rstrip("\n"))
        self.terminal.write()
        answer = self.terminal.ask("run? [y/N] ")
        if answer is None:
            raise KeyboardInterrupt
        if answer.strip().lower() != "y":
            url = self.page.url
            cycle.history.append(Attempt(REJECTED, url, url, code, REJECTED))
            self.terminal.write("not run; the candidate joins the history as rejected")
            return False
        # one execution per turn: the settle window never re-arms inside the dialog
        attempt = cycle.executor.execute(cycle.test, replace(cycle.spec, tries=1), code)
        if attempt.outcome == GREEN:
            attempt = cycle.gate(attempt, guidance=guidance)
        if attempt.outcome != GREEN:
            cycle.history.append(attempt)
            self.terminal.write(self.terminal.colour(f"✗ {attempt.outcome}", Fore.RED))
            self.terminal.write(attempt.text)
            return False
        cycle.write(code, STEERED)
        explanation = f"healed interactively with the engineer's guidance: {guidance}"
        cycle.executor.events.emit("on_healed", cycle.spec.sentence, explanation)
        self.terminal.write(
            self.terminal.colour("✓ step green — healed step written to the cache", Fore.GREEN)
        )
        self.terminal.write()
        return True


LOCAL_COMMANDS = {
    "snapshot": SteeringDialog.show_snapshot,
    "screenshot": SteeringDialog.show_screenshot,
    "error": SteeringDialog.show_error,
    "code": SteeringDialog.show_code,
}
