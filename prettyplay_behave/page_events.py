"""The events of a page that step code may handle, each defined once, here.

Step code handles an event the Playwright way, before the action that sets it off:
``page.once("dialog", lambda dialog: dialog.accept())``. That shape (the event's name, a
one-parameter lambda calling one of the event's answers on its parameter, with literal
arguments only) is the one ``lambda`` and the one ``on``/``once`` the code policy admits. An
event no handler answered gets its default answer and is noted, so that the step's outcome and
the next request say what happened. The policy, the page proxy, the tabs that dispatch events
and the code contract of the prompts all read this table.

Adding an event kind is one row below; see docs/contributing.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PageEvent:
    """One kind of page event step code may answer."""

    name: str  # as page.on / page.once take it
    answers: dict[str, int]  # what a handler may call on the event, and its most literal args
    default: str  # the answer an event nobody answered gets
    done: str  # that answer as the note says it ("dismissed")
    describe: Callable[[Any], str]  # how the note names one event
    usage: str  # its other answers, as the policy's refusal names them
    contract: str  # the line of the code contract that teaches it

    @property
    def example(self) -> str:
        first = next(iter(self.answers))
        return f'page.once("{self.name}", lambda {self.name}: {self.name}.{first}())'


def _dialog(dialog: Any) -> str:
    return f"a {dialog.type} dialog opened ({dialog.message!r})"


# fmt: off
PAGE_EVENTS: dict[str, PageEvent] = {event.name: event for event in (
    PageEvent(
        "dialog", {"accept": 1, "dismiss": 0}, "dismiss", "dismissed", _dialog,
        'accept("text") for a prompt, dismiss()',
        'Dialogs: before the action that opens one, page.once("dialog", lambda dialog: '
        'dialog.accept()) (accept("text") for a prompt, dismiss() to cancel). A dialog nobody '
        "handles is dismissed.",
    ),
)}
# fmt: on


def listener_shape() -> str:
    """How the code policy words the one listener form it admits."""
    forms = " or ".join(
        f"{event.example.replace('page.once', 'page.on')} (or once, {event.usage})"
        for event in PAGE_EVENTS.values()
    )
    return f"the only listener allowed is {forms}"
