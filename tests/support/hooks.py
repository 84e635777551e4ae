"""A hook that records every event it is given, with the event's plain values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Recorder:
    """Every hook event, as ``(event, sentence or prompt, outcome / category / explanation)``:
    the values that are text, in the order the event gives them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)

        def hook(**values: Any) -> None:
            self.events.append((name, *(v for v in values.values() if isinstance(v, str))))

        return hook
