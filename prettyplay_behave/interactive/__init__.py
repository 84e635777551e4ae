"""Interactive steering: the terminal dialog where an engineer guides a stuck step."""

from .dialog import TerminalSteering

__all__ = ["TerminalSteering"]
