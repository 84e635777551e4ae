"""behave integration: ``use_prettyplay(globals())`` in environment.py, and the generic step."""

from .environment import add_hooks, use_prettyplay

__all__ = ["add_hooks", "use_prettyplay"]
