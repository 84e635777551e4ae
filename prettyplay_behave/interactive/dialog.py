"""The steering dialog: an engineer guides the regeneration of a stuck step.

The engine opens it through the steering gate (:mod:`prettyplay_behave.engine.steering`) where an
``IncurableStepError`` would propagate; it opens only on a terminal. Every turn shows the
complete code and asks before running it; every turn, run or rejected, joins the step's
history. ``quit``, EOF, Ctrl+C, an unreadable stdin or an unavailable provider end the dialog,
and the original failure propagates. A green turn that passes the compliance gate is kept
(origin ``steered``) and the test goes on. Screenshots follow the artifact rules for secrets
(none of a test that types one, unless ``screenshot=on``) and are deleted when the dialog ends.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING

from colorama import Fore

from ..engine.history import Attempt
from ..errors import IncurableStepError, ProviderUnavailableError
from ..log_events import LogEvent, record
from ..vocabulary import Outcome
from .terminal import Terminal

if TYPE_CHECKING:
    from ..engine.steering import StuckStep

COMMANDS = "snapshot | screenshot | error | code | quit"
LABEL_WIDTH = 10


class TerminalSteering:
    """The steering part the runtime gives the engine: a dialog on the real terminal."""

    def __init__(self, terminal: Terminal | None = None) -> None:
        self.terminal = terminal
        self.said_off = False  # why no dialog opens is said once a run

    def steer(self, stuck: StuckStep) -> bool:
        terminal = self.terminal or Terminal()
        why = terminal.not_interactive()
        if why:
            if not self.said_off:
                self.said_off = True
                record(
                    LogEvent.INTERACTIVE_OFF,
                    "interactive steering is off: %s (a pipe or a file?), so no dialog opens "
                    "for %r or any later step of this run; run behave in a terminal to steer",
                    why,
                    stuck.step_run.sentence,
                )
            return False
        return SteeringDialog(stuck, terminal).open()


def _labelled(label: str, text: str) -> str:
    lines = text.rstrip("\n").split("\n") or [""]
    pad = " " * LABEL_WIDTH
    head = f"{label + ':':<{LABEL_WIDTH}}{lines[0]}"
    return "\n".join([head, *(pad + line for line in lines[1:])])


class SteeringDialog:
    """One dialog about one stuck step."""

    def __init__(self, stuck: StuckStep, terminal: Terminal) -> None:
        self.stuck = stuck
        self.failure = stuck.failure
        self.terminal = terminal
        self.shots: list[str] = []  # the screenshots taken, removed when the dialog ends

    def open(self) -> bool:
        """True when a turn went green and was kept; False: the failure propagates."""
        try:
            return self._talk()
        finally:
            for path in self.shots:
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def _talk(self) -> bool:
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
        sentence = self.stuck.step_run.sentence
        title = f'── step "{sentence}" — about to raise IncurableStepError '
        self.terminal.write()
        self.terminal.write(self.terminal.colour(title.ljust(72, "─"), Fore.YELLOW))
        self.terminal.write(_labelled("code", self.failure.code or "(none)"))
        self.terminal.write(_labelled("error", self.stuck.redact(self.failure.render())))
        self.terminal.write(_labelled("url", self.stuck.redact(self.stuck.page.url)))
        self.terminal.write(_labelled("shot", self.screenshot_path()))
        self.terminal.write(_labelled("commands", COMMANDS))

    def screenshot_path(self) -> str:
        if not self.stuck.pictures:
            return (
                "(no screenshot: this test types a secret, and a picture of the page cannot be "
                "redacted; screenshot=on takes them anyway)"
            )
        handle, path = tempfile.mkstemp(prefix="prettyplay-steering-", suffix=".png")
        os.close(handle)
        self.shots.append(path)
        try:
            self.stuck.page.screenshot(path=path, full_page=True)
        except Exception as exc:  # a crashed page still gets its dialog
            return f"(no screenshot: {exc})"
        return path

    def show_snapshot(self) -> None:
        self.terminal.write(self.stuck.snapshot())

    def show_screenshot(self) -> None:
        self.terminal.write(self.screenshot_path())

    def show_error(self) -> None:
        self.terminal.write(self.stuck.redact(self.failure.render()))

    def show_code(self) -> None:
        self.terminal.write(self.failure.code or "(none)")

    # -- a guided turn -----------------------------------------------------------------------

    def turn(self, guidance: str) -> bool:
        """One guided regeneration; True when it went green, passed the gate and was kept."""
        stuck, history = self.stuck, self.stuck.step_run.history
        record(LogEvent.GUIDANCE, "guidance for %r: %s", stuck.step_run.sentence, guidance)
        self.terminal.write(self.terminal.colour("⟳ regenerating with USER GUIDANCE", Fore.CYAN))
        code = stuck.ask(guidance)
        if isinstance(code, Attempt):
            history.append(code)
            self.terminal.write(_labelled("outcome", f"{code.outcome}: {code.text}"))
            return False
        self.terminal.write("generated code:")
        self.terminal.write(code.rstrip("\n"))
        self.terminal.write()
        answer = self.terminal.ask("run? [y/N] ")
        if answer is None:
            raise KeyboardInterrupt
        if answer.strip().lower() != "y":
            url = self.stuck.page.url
            history.append(Attempt(Outcome.REJECTED, url, url, code, str(Outcome.REJECTED)))
            self.terminal.write("not run; the candidate joins the history as rejected")
            return False
        # one execution per turn: the settle window never re-arms inside the dialog
        attempt = stuck.execute(code)
        if attempt.outcome is Outcome.GREEN:
            attempt = stuck.gate(attempt, guidance)
        if attempt.outcome is not Outcome.GREEN:
            history.append(attempt)
            self.terminal.write(self.terminal.colour(f"✗ {attempt.outcome}", Fore.RED))
            self.terminal.write(self.stuck.redact(attempt.text))
            return False
        stuck.keep(code, guidance)
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
