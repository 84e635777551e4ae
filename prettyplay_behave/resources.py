"""Files shipped with the package."""

from __future__ import annotations

import importlib.resources


def templates_folder() -> str:
    """The folder of the shipped jinja2 templates (``templates/`` in the repository)."""
    return str(importlib.resources.files("prettyplay_behave.templates"))
