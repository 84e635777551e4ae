"""What the exported step code uses beside Playwright, in plain Playwright.

The code was written for prettyplay, which gave it a few names; they mean the same here:

- ``page``: the scenario's current tab (``context.page``), plus ``page.switch_to_tab(index)``,
  ``page.local_storage``, ``page.session_storage`` and ``page.cookies`` of the page's origin;
- ``expect`` (Playwright's, which takes that page too) and ``re``;
- ``secret("NAME")``: the environment variable NAME;
- ``remember(name, value)`` and ``recall(name)``: values kept for the rest of the scenario;
- ``upload("name.pdf")``: a file of the ``files/`` folder beside the features.

``run`` picks the code of a step and runs it; a tab the code opens becomes the page of the
next step, as a browser focuses a new tab. Which code a step runs follows the step's address
(its feature file, scenario and occurrence) and one order of lookup, both in
``step_address.py``, exactly as prettyplay found the code.
"""

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import parse
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect as playwright_expect
from step_address import Occurrences, Position, Scope, feature_path, lookup, scenario_test

__all__ = [
    "Entry",
    "Number",
    "Quoted",
    "expect",
    "re",
    "recall",
    "remember",
    "run",
    "secret",
    "upload",
]

TAB_WAIT_MS = 2_000
FILES = Path(__file__).resolve().parent.parent / "files"

# What a storage call runs in the page.
STORAGE_SCRIPT = """([kind, op, key, value]) => {
  const storage = window[kind];
  if (op === "get") return storage.getItem(key);
  if (op === "set") return void storage.setItem(key, value);
  if (op === "remove") return void storage.removeItem(key);
  if (op === "clear") return void storage.clear();
  return Object.keys(storage).map((name) => [name, storage.getItem(name)]);
}"""

_running: Any = None  # the behave context of the step that runs


# -- the parameters of a sentence ----------------------------------------------------------------


@parse.with_pattern(r'(?:[^"\\\n]|\\.)*')
def Quoted(text: str) -> str:  # a parse type's name, as patterns spell it
    """The text between a sentence's double quotes, ``\\"`` read as ``"``."""
    return text.replace('\\"', '"')


@parse.with_pattern(r"-?\d+(?:\.\d+)?")
def Number(text: str) -> str:
    """A number of a sentence, as written: the code takes it as a string."""
    return text


# -- which code a step runs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One code of a step: what it runs and where it applies."""

    code: Callable[..., None]
    takes: int = 0  # how many of the sentence's values the code takes
    values: tuple[str, ...] | None = None  # only these values, when set
    data: str = ""  # the step's table or docstring, as prettyplay wrote it
    features: tuple[str, ...] = ()  # the feature files it is kept for; none: every one
    scenario: str | None = None  # only in this scenario, when set
    occurrence: int = 1  # ... at this occurrence of the step in it

    def scopes(self) -> list[Scope]:
        """The steps it serves: one scope for each feature file it is kept for."""
        return [
            Scope(feature, self.scenario, self.occurrence, self.values, self.takes)
            for feature in self.features or ("",)
        ]


def choose(
    entries: list[Entry], position: Position, values: tuple[str, ...], data: str
) -> Entry | None:
    """The entry the step at ``position`` with ``values`` and ``data`` runs."""
    candidates = [(e, scope) for e in entries if e.data == data for scope in e.scopes()]
    return lookup(position, [(candidates, values)])


def run(
    context: Any, kind: str, template: str, values: tuple[str, ...], entries: list[Entry]
) -> None:
    """Run the code of the step behave is at (``template`` is its sentence, ``{}`` for each
    of its ``values``)."""
    global _running
    data = step_data(context)
    feature = feature_path(context.feature.filename, context.config.base_dir)
    test = scenario_test(feature, context.scenario.name)
    # identical steps earlier in the scenario; counted on the context's scenario layer
    if not hasattr(context, "step_occurrences"):
        context.step_occurrences = Occurrences()
    occurrence = context.step_occurrences.count((kind, template, values, data))
    entry = choose(entries, Position.of(test, occurrence), values, data)
    if entry is None:
        raise AssertionError(f"no exported code fits {template!r} {values} in {feature}")
    before = list(context.page.context.pages)
    _running = context
    try:
        entry.code(StepPage(context), *values[: entry.takes])
    finally:
        _running = None
    follow_tabs(context, before)


def follow_tabs(context: Any, before: list[Any]) -> None:
    """A tab the step opened becomes the page of the next step, as a browser focuses a new
    tab. Chromium knows of a tab the moment it opens, Playwright a moment later: wait until
    Playwright has every tab Chromium counts in the scenario's context."""
    browser_context = context.page.context
    if context.page.is_closed():
        if not browser_context.pages:
            return
        context.page = browser_context.pages[-1]
    while len(browser_context.pages) < browser_tabs(context.page):
        try:
            browser_context.wait_for_event("page", timeout=TAB_WAIT_MS)
        except PlaywrightTimeoutError:
            break  # a tab that closed as it opened
    opened = [page for page in browser_context.pages if page not in before]
    if opened:
        context.page = opened[-1]


def browser_tabs(page: Any) -> int:
    """How many tabs the browser counts in the page's context (Chromium's DevTools protocol;
    another browser: those Playwright knows)."""
    try:
        session = page.context.new_cdp_session(page)
    except PlaywrightError:
        return len(page.context.pages)
    try:
        own = session.send("Target.getTargetInfo")["targetInfo"]["browserContextId"]
        targets = session.send("Target.getTargets")["targetInfos"]
    finally:
        session.detach()
    return sum(t["type"] == "page" and t.get("browserContextId") == own for t in targets)


def step_data(context: Any) -> str:
    """The step's table (``| a | b |`` lines) or docstring, as prettyplay keyed its code."""
    if context.table is not None:
        rows = [context.table.headings, *(row.cells for row in context.table.rows)]
        return "\n".join(f"| {' | '.join(row)} |" for row in rows)
    return context.text or ""


# -- the names step code is given ----------------------------------------------------------------


def expect(actual: Any, *args: Any, **kwargs: Any) -> Any:
    """Playwright's expect; it takes the step's ``page`` as the page it stands for."""
    if isinstance(actual, StepPage):
        actual = actual.current
    return playwright_expect(actual, *args, **kwargs)


def secret(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise AssertionError(f"the step needs the secret {name}: set the environment variable")
    return value


def remember(name: str, value: Any) -> None:
    _memory()[name] = value


def recall(name: str) -> Any:
    memory = _memory()
    if name not in memory:
        known = ", ".join(sorted(memory)) or "nothing"
        raise AssertionError(f"nothing was remembered as {name!r} (remembered: {known})")
    return memory[name]


def _memory() -> dict[str, Any]:
    if _running is None:
        raise RuntimeError("remember and recall work inside a step's code")
    if not hasattr(_running, "remembered"):
        _running.remembered = {}  # on the scenario's layer of the context: gone after it
    memory: dict[str, Any] = _running.remembered
    return memory


def upload(files: Any) -> Any:
    """A file name (or a list of them) as the file of that name in ``files/``."""
    if isinstance(files, (list, tuple)):
        return [upload(name) for name in files]
    path = FILES / files
    if not path.is_file():
        raise AssertionError(f"there is no file {files!r} in {FILES}")
    return str(path)


class StepPage:
    """The page step code receives: the scenario's current tab, and what prettyplay added."""

    def __init__(self, context: Any) -> None:
        self._context = context

    @property
    def current(self) -> Any:
        return self._context.page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context.page, name)

    def switch_to_tab(self, index: int) -> None:
        """Make the scenario's ``index``-th tab (from 0, in the order they opened) the page."""
        page = self.current.context.pages[index]
        page.bring_to_front()
        self._context.page = page

    @property
    def local_storage(self) -> "WebStorage":
        return WebStorage(self, "localStorage")

    @property
    def session_storage(self) -> "WebStorage":
        return WebStorage(self, "sessionStorage")

    @property
    def cookies(self) -> "Cookies":
        return Cookies(self)

    def origin(self) -> str | None:
        """The page's origin; before a page of the app has loaded, base_url's (or None)."""
        url = self.current.url if self.current.url.startswith("http") else self._context.base_url
        if not url:
            return None
        scheme, _, rest = url.partition("://")
        return f"{scheme}://{rest.split('/')[0]}"


class WebStorage:
    """``page.local_storage`` and ``page.session_storage``: strings by key. Before a page of
    the app has loaded, local storage is base_url's origin's, seeded into the browser context
    so the app finds it as it loads."""

    def __init__(self, page: StepPage, kind: str) -> None:
        self._page, self._kind = page, kind

    def get(self, key: str) -> str | None:
        return dict(self.items()).get(key)

    def get_json(self, key: str) -> Any:
        text = self.get(key)
        return None if text is None else json.loads(text)

    def set(self, key: str, value: str) -> None:
        self._write("set", key, value)

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, json.dumps(value))

    def remove(self, key: str) -> None:
        self._write("remove", key)

    def clear(self) -> None:
        self._write("clear")

    def keys(self) -> list[str]:
        return [key for key, _ in self.items()]

    def items(self) -> list[tuple[str, str]]:
        if self._loaded():
            return [(k, v) for k, v in self._call("items")]
        return list(self._seeded().items())

    def _loaded(self) -> bool:
        if self._page.current.url.startswith("http"):
            return True
        if self._kind == "sessionStorage":
            raise AssertionError("page.session_storage needs a loaded page: open one first")
        return False

    def _call(self, op: str, key: str | None = None, value: str | None = None) -> Any:
        return self._page.current.evaluate(STORAGE_SCRIPT, [self._kind, op, key, value])

    def _write(self, op: str, key: str | None = None, value: str | None = None) -> None:
        if self._loaded():
            self._call(op, key, value)
            return
        seeded = self._seeded()
        if op == "set":
            seeded[str(key)] = str(value)
        elif op == "remove":
            seeded.pop(str(key), None)
        else:
            seeded.clear()
        context, home = self._page.current.context, self._page.origin()
        state = context.storage_state()
        items = [{"name": name, "value": text} for name, text in seeded.items()]
        origins = [o for o in state["origins"] if o["origin"] != home]
        context.set_storage_state(
            {**state, "origins": [*origins, {"origin": home, "localStorage": items}]}
        )

    def _seeded(self) -> dict[str, str]:
        home = self._page.origin()
        if home is None:
            raise AssertionError("page.local_storage: no page has loaded and no base_url is set")
        for origin in self._page.current.context.storage_state()["origins"]:
            if origin["origin"] == home:
                return {item["name"]: item["value"] for item in origin["localStorage"]}
        return {}


class Cookies:
    """``page.cookies``: the cookies the browser would send to the page (or to ``url``)."""

    def __init__(self, page: StepPage) -> None:
        self._page = page

    def get(self, name: str, url: str | None = None) -> str | None:
        for cookie in self._cookies(url):
            if cookie["name"] == name:
                return str(cookie["value"])
        return None

    def names(self, url: str | None = None) -> list[str]:
        return [cookie["name"] for cookie in self._cookies(url)]

    def _cookies(self, url: str | None) -> list[Any]:
        current = self._page.current.url
        base = current if current.startswith("http") else self._page.origin()
        if base is None:
            raise AssertionError("page.cookies: no page has loaded and no base_url is set")
        return list(self._page.current.context.cookies([urljoin(base, url or "")]))
