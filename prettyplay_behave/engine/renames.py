"""One heal per rename: a locator that a heal changed is tried in every entry that has it.

When the app renames a control (a placeholder, a label, a button's name), every step whose code
names it breaks. The heal of the first of them finds the new name; waiting for each of the others
to time out, be classified, healed and gated would cost three requests and a timeout each. So
the locators the heal changed (``get_by_placeholder("What needs to be done?")`` became
``get_by_placeholder("Add a todo")``) are changed in every other entry of the cache that names
them, and the compliance gate judges that batch in one request. Nothing is written yet: when one
of those steps comes up, and its page shows the new locator where the old one is gone, the
changed code runs first, before the old code would wait for its own timeout; green, it is
written as healed. A page where the old name is still there (another page that never changed)
keeps the step's own code.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..browser.stop import ReadStop
from ..safety.policy import LOCATING_METHODS
from ..safety.step_code import step_code

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from ..browser.tabs import Tabs

Change = tuple[str, str]  # a locator call as the old code wrote it, and as the heal did


@dataclass(frozen=True)
class Proposal:
    """The change of a heal applied to another entry's code."""

    sentence: str
    old: str
    new: str


@dataclass(frozen=True)
class Rename:
    """A gated change of an entry, waiting for its step: the code to try, and whence."""

    code: str
    changes: tuple[Change, ...]
    source: str  # the sentence whose heal found it


def renamed_here(tabs: Tabs, changes: Iterable[Change], within_ms: float) -> bool:
    """Whether the current page of ``tabs`` shows the change: every old locator gone, every new
    one there (one count each; a locator that cannot be counted here is no evidence). The
    counts end within ``within_ms``: a locator of cached code (a selector a pull request could
    plant, one that backtracks in the page) is stopped there, and shows nothing."""
    page = tabs.page
    stop = ReadStop(page, f"a rename's locators were counted on the page past {within_ms:.0f} ms")
    try:
        with stop.armed(within_ms / 1000):
            shown = all(_count(page, old) == 0 and _count(page, new) > 0 for old, new in changes)
    except Exception:  # a page on its way somewhere, a locator of a frame, a stopped count
        shown = False
    if stop.fired:
        tabs.ensure_open()  # where the count could only be stopped by closing the page
        return False
    return shown


def _count(page: Page, source: str) -> int:
    """How many elements a locator call (as the cache's code writes it) finds on ``page``."""
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    assert call.func.id in LOCATING_METHODS
    args = [ast.literal_eval(arg) for arg in call.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    return int(getattr(page, call.func.id)(*args, **kwargs).count())


def locator_changes(old: str, new: str) -> list[Change]:
    """The locator calls the heal changed: where the old code's calls and the new code's
    differ, each old call paired with the first new one of the same method and the same first
    argument (``get_by_role("button", name="Add")`` with ``get_by_role("button",
    name="Create")``); a call the heal added or removed is no rename."""
    before, after = _locators(old), _locators(new)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    changes: list[Change] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        unpaired = list(after[j1:j2])
        for call in before[i1:i2]:
            twin = next((other for other in unpaired if _same_kind(call, other)), None)
            if twin is not None:
                unpaired.remove(twin)
                changes.append((call, twin))
    return list(dict.fromkeys(changes))


def _same_kind(old: str, new: str) -> bool:
    """Two calls of one locator method, for ``get_by_role`` of the same role."""
    first, second = _call(old), _call(new)
    if first is None or second is None or first[0] != second[0]:
        return False
    return first[0] != "get_by_role" or first[1][:1] == second[1][:1]


def _call(source: str) -> tuple[str, list[object]] | None:
    """The method and the positional constants of a locator call's source."""
    try:
        call = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    return call.func.id, [arg.value for arg in call.args if isinstance(arg, ast.Constant)]


def apply(code: str, changes: list[Change]) -> str | None:
    """``code`` with the changed locators changed; None when it names none of them."""
    calls = set(_locators(code))
    if not any(old in calls for old, _ in changes):
        return None
    for old, new in changes:
        if old in calls:
            code = code.replace(old, new)
    return code


def spelt_in(code: str, call: str) -> str | None:
    """The locator call of ``code`` that is ``call`` (however either quotes its strings), as
    ``code`` spells it; None when it has none."""
    try:
        wanted = ast.dump(ast.parse(call, mode="eval").body)
    except SyntaxError:
        return None
    spelt = (source for source in _locators(code) if _dump(source) == wanted)
    return next(spelt, None)


def _dump(source: str) -> str:
    try:
        return ast.dump(ast.parse(source, mode="eval").body)
    except SyntaxError:
        return ""


def _locators(code: str) -> list[str]:
    """The source of each locator call of ``code`` with constant arguments, from its method's
    name on (``get_by_role("button", name="Add")``), in order."""
    tree = step_code(code).tree
    if tree is None:
        return []
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in LOCATING_METHODS or not _constant_arguments(node):
            continue
        source = ast.get_source_segment(code, node)
        receiver = ast.get_source_segment(code, node.func.value)
        if source and receiver and source.startswith(receiver):
            found.append((node.lineno, node.col_offset, source[len(receiver) :].lstrip(".")))
    return [source for *_, source in sorted(found)]


def _constant_arguments(call: ast.Call) -> bool:
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    return bool(values) and all(isinstance(value, ast.Constant) for value in values)
