"""Step code as the tests write it: ``step(body)`` is the complete step function whose body is
``body``, the form an LLM's answer and a cache entry hold."""

from __future__ import annotations

import textwrap

HEADER = "def step(page) -> None:"


def step(body: str) -> str:
    """``def step(page) -> None:`` with ``body`` indented under it. ``body`` may be written
    indented (a triple-quoted block): its common indent and its leading and trailing blank lines
    go; every other line, blank ones too, is kept."""
    lines = textwrap.dedent(body).strip("\n").split("\n")
    return HEADER + "\n" + "".join(f"    {line}\n" for line in lines)
