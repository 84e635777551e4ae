"""Capability proxies: what step code holds instead of Playwright's Page and Locator.

Each proxy forwards only the attribute names the code policy allows (the frozensets of
:mod:`.policy`), so a step that slips past the static check still cannot reach the browser
context, run JavaScript or touch files. Results come back wrapped: locators as
``LocatorProxy``, plain values as they are, any other Playwright object (such as the
Response from ``goto``) not at all.

Two bounds hold here because only here the target of a call is known:

- **what comes in is redacted**: every string step code reads from the page (a field's value, a
  text, a title, a URL, an attribute, a storage value, JSON once decoded) has the test's secret
  values replaced by their placeholders before Python sees it, in every spelling the redactor
  knows; a cookie's value of 8 characters or more reads as its placeholder, never as itself;
- **what goes out stays with allowed origins**: no input reaches a frame or a window of an
  origin outside allowed_origins. Typing (``fill``, ``type``, ``press``, the keyboard), uploads,
  choices and focus reach only an element whose frame is of an allowed origin; a click, a hover,
  a drag or the mouse's own moves, buttons and wheel reach only a point that no frame of another
  origin covers (what lies over a frame's box reaches that frame, so no pointer position can
  carry a value out). A page whose frames are all of allowed origins pays nothing for the check
  (but for a blank window: which frame opened it is asked of the browser).
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from playwright.sync_api import Download, FrameLocator, Keyboard, Locator, Mouse, Page
from playwright.sync_api import expect as playwright_expect

from ..errors import CodePolicyError
from ..page_events import PAGE_EVENTS, listener_shape
from .frames import (
    Box,
    ForeignFrame,
    element_frame,
    focused_frame,
    foreign_frames,
    frame_at,
    one_handle,
    origin_url,
    outside_frames,
)
from .limits import (
    EXPECT_TIMEOUT_MS,
    MAX_STEPS,
    MAX_TYPED_KEYS,
    Budget,
    bounded_call,
    clamp,
    sendable,
    typed_text,
)
from .links import leaves, points_to
from .origins import is_web, origin_of, web_url
from .policy import (
    CLOCK_ATTRIBUTES,
    EXPECT_MATCHERS,
    FRAME_LOCATOR_ATTRIBUTES,
    KEYBOARD_ATTRIBUTES,
    LOCATING_METHODS,
    LOCATOR_ATTRIBUTES,
    MOUSE_ATTRIBUTES,
    PAGE_ATTRIBUTES,
    navigation_problem,
    upload_problem,
)
from .regex import StepPattern

_PLAIN = (int, float, bool, type(None))
# What makes another locator of a locator: no action, nothing for the observer.
CHAINING = LOCATING_METHODS | frozenset({"filter", "nth", "first", "last", "and_", "or_", "all"})
# What passes whatever a locator finds, nothing included: the observer is told it needed nothing.
FINDS_ANY = frozenset(
    {"count", "all", "is_visible", "is_hidden", "all_inner_texts", "all_text_contents"}
)
# What carries text into the element or frame that receives it.
TYPING = frozenset({"fill", "type", "press", "press_sequentially", "insert_text", "down", "up"})
KEY_BY_KEY = frozenset({"type", "press_sequentially"})  # one keystroke per character
# What reaches the element it acts on, hence its frame: its frame must be of an allowed origin.
INPUT = TYPING | frozenset(
    {"clear", "check", "uncheck", "set_checked", "select_option", "focus", "blur"}
    | {"click", "dblclick", "tap", "hover", "drag_to", "drag_and_drop"}
    | {"scroll_into_view_if_needed"}  # a frame's own scroll position is read by its script
)
# What lands where the pointer is moved to: no frame of another origin may lie under it.
POINTER = frozenset(
    {"click", "dblclick", "tap", "hover", "check", "uncheck", "set_checked", "drag_to"}
    | {"drag_and_drop"}
)
# Where each page's pointer is, as far as step code moved it: mouse.down(), up() and wheel() act
# there. None: moved by a locator action where no foreign frame was (the place is not known).
_POINTER: weakref.WeakKeyDictionary[Page, tuple[float, float] | None] = weakref.WeakKeyDictionary()


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class PageServices:
    """What the page proxy does beyond Playwright's Page, given by the engine per test: dialog
    handlers, the test's tabs, the folder uploads come from, where downloads go."""

    listen: Callable[[Page, str, Callable[[Any], object], bool], None] | None = None
    switch_tab: Callable[[int], Page] | None = None
    files_dir: Path | None = None
    downloaded: Callable[[Download], object] | None = None
    # every string read from the page passes it: the test's secrets replaced
    redact: Callable[[str], str] = _same
    # whether a URL is of an allowed origin; None: the test has no bounds
    origin_allowed: Callable[[str], bool] | None = None
    # the origin of base_url: where storage and cookies are read before a page of the app loads
    home: str | None = None
    # a cookie value step code read, to be kept out of everything that leaves (None: shown);
    # gives the value's placeholder (the value itself when it is too short to hide)
    hide: Callable[[str, str], str] | None = None
    # the expect(...) timeout of the test (Playwright's own default)
    expect_timeout_ms: float = EXPECT_TIMEOUT_MS
    # sees each locator step code acts on or checks, as the code spelt it (before the action,
    # and after it unless it said True), and whether what it did needed the locator to find
    # something: the evidence of a run whose code will be kept. None: nothing is watched, and
    # nothing is spelt
    observe: Callable[[Locator, str, bool], bool] | None = None
    # sees the status the document of each goto was answered with, and its URL: the engine
    # judges an error page by it without asking the page
    answered: Callable[[str, int], object] | None = None


class _Proxy:
    """Forwards the allowlisted attributes of one Playwright object; refuses the rest.

    Every call runs within the execution's time budget (see :mod:`.limits`).
    """

    __slots__ = ("_budget", "_chain", "_services", "_target")
    _LABEL: ClassVar[str] = "object"
    _ALLOWED: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self, target: Any, budget: Budget | None = None, services: PageServices | None = None
    ) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_budget", budget or Budget.started())
        object.__setattr__(self, "_services", services or PageServices())
        # how step code reached this object from ``page`` (get_by_role("button").first), ""
        # for the page itself, None when it cannot be spelt (or nothing is observed)
        object.__setattr__(self, "_chain", "" if isinstance(self, PageProxy) else None)

    @property
    def _default_ms(self) -> float:
        """What a call of this object waits when it names no timeout."""
        return self._budget.action_timeout_ms

    def __getattr__(self, name: str) -> Any:
        if name not in self._ALLOWED:
            raise CodePolicyError(f"{self._LABEL}.{name} is not available to step code")
        self._budget.check()
        value = getattr(self._target, name)
        if not callable(value):
            return self._linked(self._wrap(value), name)

        def forward(*args: Any, **kwargs: Any) -> Any:
            if name in INPUT:
                self._typing(name, value, args, kwargs)
            read_list = name == "all"  # a list the code goes through: none is an empty loop
            acted = (
                self._watched(name not in FINDS_ANY) if read_list or name not in CHAINING else None
            )
            seen = acted is not None and acted()  # before: what a click takes away is there
            result = self._call(value, *args, **kwargs)
            if acted is not None and not seen:
                acted()  # after: what the action waited for is there
            return self._linked(result, name, args, kwargs)

        return forward

    def _watched(self, needs: bool = True) -> Callable[[], bool] | None:
        """How to show the observer this object, when it is a locator the code spelt;
        ``needs``: whether what the code did with it fails when it finds nothing."""
        observe, chain = self._services.observe, self._chain
        if observe is None or not chain or not isinstance(self, LocatorProxy):
            return None
        return lambda: observe(self._target, chain, needs)

    def _linked(
        self,
        result: Any,
        name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """``result``, when it is a locator this object made, knowing how the code reached it
        (spelt only while an observer watches)."""
        if self._services.observe is None or not isinstance(result, _Proxy):
            return result
        chain = self._chain
        link = name if kwargs is None else _spelt(name, args, kwargs)
        spelt = None if chain is None or link is None else f"{chain}.{link}" if chain else link
        object.__setattr__(result, "_chain", spelt)
        return result

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = bounded_call(
            method, self._budget, self._default_ms, *_unwrap(args), **_unwrap(kwargs)
        )
        return self._wrap(result)

    def _typing(
        self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Refuse typing that would take past the bound, or input that would reach a frame of
        another origin."""
        if name in KEY_BY_KEY:
            text = typed_text(method, args, kwargs)
            if isinstance(text, str) and len(text) > MAX_TYPED_KEYS:
                raise CodePolicyError(
                    f"{self._LABEL}.{name} types key by key, at most {MAX_TYPED_KEYS:,} keys "
                    f"(not {len(text):,}); fill() puts a long text in at once"
                )
        self._receiver_allowed(name, args, kwargs)

    def _receiver_allowed(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
    ) -> None:
        """The frame that would receive typed text, a file, a choice or the focus is of an
        allowed origin; the point a pointer action lands on lies over no frame of another."""
        allowed = self._services.origin_allowed
        page = self._page_of()
        if allowed is None or page is None:
            return
        if not outside_frames(page, allowed):
            if name in POINTER:
                _POINTER[page] = None  # moved somewhere in the page: where, nobody measured
            return
        timeout = min(self._default_ms, self._budget.remaining_ms())
        if name in POINTER:  # each element's frame and place, from one handle of it
            frames = foreign_frames(page, allowed)
            for target, position in self._pointer_targets(page, name, args, kwargs or {}):
                frame, point = _landing(target, position, timeout)
                self._frame_allowed(name, frame, allowed)
                self._pointer_allowed(name, frames, point)
                _POINTER[page] = point
            return
        self._frame_allowed(name, self._receiving_frame(page, args, timeout), allowed)

    def _frame_allowed(self, name: str, frame: Any, allowed: Callable[[str], bool]) -> None:
        """Refuse input into an element whose frame is of an origin outside the bounds."""
        if frame is not None and not allowed(origin_url(frame)):
            origin = self._services.redact(origin_of(origin_url(frame)))
            raise CodePolicyError(
                f"{self._LABEL}.{name}: the element is in a frame of {origin}, outside "
                "allowed_origins; typed text and files go only to frames of allowed origins, "
                "and so do clicks and every other input (add the frame's origin to "
                "prettyplay.allowed_origins if the test may act there)"
            )

    def _pointer_allowed(
        self, name: str, frames: list[ForeignFrame], point: tuple[float, float] | None
    ) -> None:
        """Refuse a pointer action at ``point`` (None: where the pointer is is not known) on a
        page with frames of other origins, when one of them lies under it."""
        if not frames:
            return
        if point is None:
            raise CodePolicyError(
                f"{self._LABEL}.{name}: where the pointer is is not known, and the page shows a "
                f"frame of {self._services.redact(origin_of(frames[0].url))}, outside "
                "allowed_origins; move the mouse first (page.mouse.move(x, y)) or act on a "
                "locator"
            )
        found = frame_at(frames, *point)
        if found is not None:
            raise CodePolicyError(
                f"{self._LABEL}.{name}: the point ({point[0]:.0f}, {point[1]:.0f}) lies over a "
                f"frame of {self._services.redact(origin_of(found.url))}, outside "
                "allowed_origins; clicks, pointer moves and wheel turns go only to frames of "
                "allowed origins (add the frame's origin to prettyplay.allowed_origins if the "
                "test may act there)"
            )

    def _pointer_targets(
        self, page: Page, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> list[tuple[Locator, Any]]:
        """The elements a pointer action moves to, each with the position it names."""
        return []

    def _page_of(self) -> Page | None:
        """The page the target belongs to (for the frame check)."""
        return None

    def _receiving_frame(self, page: Page, args: tuple[Any, ...], timeout: float) -> Any:
        return None

    def _wrap(self, value: Any) -> Any:
        return _wrap(value, self._budget, self._services)

    def _uploads(self, files: Any, selector: str | None = None) -> Any:
        """Upload names as the files they name inside files_dir; anything else is refused."""
        names = files if isinstance(files, (list, tuple)) else [files]
        for name in names:
            problem = upload_problem(name) if isinstance(name, str) else None
            if problem:
                raise CodePolicyError(f"set_input_files: {problem}")
        folder = self._services.files_dir
        if folder is None:
            raise CodePolicyError("set_input_files: no files_dir is set for uploads")
        paths = [str(_inside(folder, name)) for name in names]
        self._receiver_allowed("set_input_files", () if selector is None else (selector,))
        return paths if isinstance(files, (list, tuple)) else paths[0]

    def __setattr__(self, name: str, value: object) -> None:
        raise CodePolicyError(f"{self._LABEL}.{name} cannot be assigned by step code")

    def __dir__(self) -> list[str]:
        return sorted(self._ALLOWED)

    def __repr__(self) -> str:
        return f"<{self._LABEL} proxy>"


class PageProxy(_Proxy):
    """The ``page`` that step code receives."""

    __slots__ = ("_on_navigate",)
    _LABEL = "page"
    _ALLOWED = PAGE_ATTRIBUTES

    def __init__(
        self,
        page: Page,
        budget: Budget | None = None,
        services: PageServices | None = None,
        *,
        on_navigate: Callable[[str], object] | None = None,
    ) -> None:
        """``on_navigate`` sees each URL given to ``goto``, as written; it may raise to refuse."""
        super().__init__(page, budget, services)
        object.__setattr__(self, "_on_navigate", on_navigate)

    def goto(self, url: str, **kwargs: Any) -> None:
        """Navigate; Playwright resolves a relative URL against the context's base_url."""
        if not isinstance(url, str):
            raise CodePolicyError(f"page.goto needs a URL string, not {type(url).__name__}")
        problem = navigation_problem(url)
        if problem:
            raise CodePolicyError(f"page.goto: {problem}")
        if self._on_navigate is not None:
            self._on_navigate(url)
        response = bounded_call(
            self._target.goto, self._budget, self._default_ms, url, **_unwrap(kwargs)
        )
        answered = self._services.answered
        if response is not None and answered is not None:
            answered(response.url, response.status)

    def on(self, event: str, handler: Callable[[Any], object]) -> None:
        """``page.on("dialog", lambda dialog: dialog.accept())``: answer every such event."""
        self._listen(event, handler, once=False)

    def once(self, event: str, handler: Callable[[Any], object]) -> None:
        """``page.once("dialog", lambda dialog: dialog.accept())``: answer the next one."""
        self._listen(event, handler, once=True)

    def _listen(self, event: str, handler: Callable[[Any], object], once: bool) -> None:
        if event not in PAGE_EVENTS or not callable(handler):
            raise CodePolicyError(listener_shape())
        if self._services.listen is None:
            raise CodePolicyError(f"{event} events cannot be handled here")
        self._services.listen(self._target, event, handler, once)

    @property
    def keyboard(self) -> KeyboardProxy:
        return KeyboardProxy(self._target.keyboard, self._budget, self._services, self._target)

    @property
    def clock(self) -> ClockProxy:
        return ClockProxy(self._target.clock, self._budget, self._services)

    @property
    def local_storage(self) -> StorageProxy:
        return StorageProxy(self, "localStorage")

    @property
    def session_storage(self) -> StorageProxy:
        return StorageProxy(self, "sessionStorage")

    @property
    def cookies(self) -> CookiesProxy:
        return CookiesProxy(self)

    @property
    def mouse(self) -> MouseProxy:
        return MouseProxy(self._target.mouse, self._budget, self._services, self._target)

    def own_origin(self, what: str) -> str | None:
        """The allowed origin whose ``what`` (storage, cookies) step code reaches: the page's,
        or before a page of the app loaded, base_url's (None then: nothing has loaded)."""
        self._budget.check()
        url, services = self._target.url, self._services
        if not is_web(url):
            return None
        if services.origin_allowed is not None and not services.origin_allowed(url):
            raise CodePolicyError(
                f"page.{what}: the page is at {services.redact(origin_of(url))}, outside "
                "allowed_origins; step code reaches the storage and cookies of the test's "
                "origins only"
            )
        return origin_of(url)

    def _page_of(self) -> Page | None:
        return self._target

    def _receiving_frame(self, page: Page, args: tuple[Any, ...], timeout: float) -> Any:
        """``page.fill(selector, ...)`` and the like: the frame of the selector's element."""
        if not args or not isinstance(args[0], str):
            return None
        return element_frame(page.locator(args[0]), timeout)

    def _pointer_targets(
        self, page: Page, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> list[tuple[Locator, Any]]:
        """``page.click(selector)``; ``page.drag_and_drop(source, target)``."""
        if name == "drag_and_drop":
            source, target = (*args, kwargs.get("source"), kwargs.get("target"))[:2]
            if len(args) < 2:
                target = kwargs.get("target", target)
            return [
                (page.locator(str(source)), kwargs.get("source_position")),
                (page.locator(str(target)), kwargs.get("target_position")),
            ]
        selector = args[0] if args else kwargs.get("selector")
        if not isinstance(selector, str):
            return []
        return [(page.locator(selector), kwargs.get("position"))]

    def switch_to_tab(self, index: int) -> None:
        """Make the test's ``index``-th tab (from 0, in the order they opened) the page of this
        step from here on, and of the steps after it."""
        if self._services.switch_tab is None or not isinstance(index, int):
            raise CodePolicyError("page.switch_to_tab needs a tab number, from 0")
        object.__setattr__(self, "_target", self._services.switch_tab(index))

    def set_input_files(self, selector: str, files: Any, **kwargs: Any) -> None:
        paths = self._uploads(files, selector)
        self._call(self._target.set_input_files, selector, paths, **kwargs)

    def expect_popup(self, **kwargs: Any) -> EventWaitProxy:
        return EventWaitProxy(self, self._target.expect_popup, kwargs)

    def expect_download(self, **kwargs: Any) -> EventWaitProxy:
        return EventWaitProxy(self, self._target.expect_download, kwargs)


class LocatorProxy(_Proxy):
    """A Locator as step code sees it; ``locator.page`` and evaluation are refused."""

    __slots__ = ()
    _LABEL = "locator"
    _ALLOWED = LOCATOR_ATTRIBUTES

    def set_input_files(self, files: Any, **kwargs: Any) -> None:
        self._call(self._target.set_input_files, self._uploads(files), **kwargs)

    def _page_of(self) -> Page | None:
        return self._target.page

    def _receiving_frame(self, page: Page, args: tuple[Any, ...], timeout: float) -> Any:
        return element_frame(self._target, timeout)

    def _pointer_targets(
        self, page: Page, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> list[tuple[Locator, Any]]:
        """The element itself; for ``drag_to(target)`` the target too."""
        if name != "drag_to":
            return [(self._target, kwargs.get("position"))]
        target = _unwrap(args[0] if args else kwargs.get("target"))
        found = [(self._target, kwargs.get("source_position"))]
        if isinstance(target, Locator):
            if target.page != page:
                raise CodePolicyError("locator.drag_to: the target is not on the same page")
            found.append((target, kwargs.get("target_position")))
        return found


class EventWaitProxy:
    """``with page.expect_popup() as popup_info:``, within the step's time budget; what the
    block's action opened is ``popup_info.value``, a page proxy (or a download)."""

    __slots__ = ("_info", "_manager", "_page")

    def __init__(self, page: PageProxy, wait: Callable[..., Any], options: dict[str, Any]):
        budget = page._budget
        clamp(wait, (), options, budget, budget.action_timeout_ms)
        self._page, self._manager = page, wait(**options)
        self._info: EventInfoProxy | None = None

    def __enter__(self) -> EventInfoProxy:
        self._info = EventInfoProxy(self._page, self._manager.__enter__())
        return self._info

    def __exit__(self, *exc: Any) -> None:
        self._manager.__exit__(*exc)


class EventInfoProxy:
    __slots__ = ("_info", "_page")

    def __init__(self, page: PageProxy, info: Any) -> None:
        self._page, self._info = page, info

    @property
    def value(self) -> Any:
        value = self._info.value
        page = self._page
        if isinstance(value, Download):
            if page._services.downloaded is not None:
                page._services.downloaded(value)
            return DownloadProxy(value, page._services.redact)
        return PageProxy(value, page._budget, page._services)


class DownloadProxy:
    """A download as step code sees it: its suggested file name, never a path."""

    __slots__ = ("suggested_filename",)

    def __init__(self, download: Download, redact: Callable[[str], str] = _same) -> None:
        self.suggested_filename = redact(download.suggested_filename)


class FrameLocatorProxy(_Proxy):
    """A FrameLocator as step code sees it."""

    __slots__ = ()
    _LABEL = "frame_locator"
    _ALLOWED = FRAME_LOCATOR_ATTRIBUTES


class KeyboardProxy(_Proxy):
    """``page.keyboard`` as step code sees it: keys go to the focused element, so its frame
    must be of an allowed origin."""

    __slots__ = ("_page",)
    _LABEL = "keyboard"
    _ALLOWED = KEYBOARD_ATTRIBUTES

    def __init__(
        self,
        keyboard: Keyboard,
        budget: Budget | None = None,
        services: PageServices | None = None,
        page: Page | None = None,
    ) -> None:
        super().__init__(keyboard, budget, services)
        object.__setattr__(self, "_page", page)

    def _page_of(self) -> Page | None:
        return self._page

    def _receiving_frame(self, page: Page, args: tuple[Any, ...], timeout: float) -> Any:
        return focused_frame(page, self._services.origin_allowed or (lambda url: True))


class ClockProxy(_Proxy):
    """``page.clock`` as step code sees it: Playwright's fake clock of the test's context."""

    __slots__ = ()
    _LABEL = "clock"
    _ALLOWED = CLOCK_ATTRIBUTES


# What the storage proxy runs in the page: the product's own script, never step code's.
_STORAGE_CALL = """([kind, op, key, value]) => {
  const storage = window[kind];
  if (op === "get") return storage.getItem(key);
  if (op === "set") return void storage.setItem(key, value);
  if (op === "remove") return void storage.removeItem(key);
  if (op === "clear") return void storage.clear();
  return Object.keys(storage).map((name) => [name, storage.getItem(name)]);
}"""


class StorageProxy:
    """``page.local_storage`` and ``page.session_storage``: the web storage of the page's own
    origin, strings by key. Before a page of the app has loaded, local storage is base_url's
    origin's (written into the browser context, so the app finds it as it loads); session
    storage belongs to a loaded page. What is read is redacted like any text of the page."""

    __slots__ = ("_kind", "_page")

    def __init__(self, page: PageProxy, kind: str) -> None:
        self._page, self._kind = page, kind

    @property
    def _label(self) -> str:
        return "page.local_storage" if self._kind == "localStorage" else "page.session_storage"

    def get(self, key: str) -> str | None:
        """The value kept under ``key``, or None."""
        text = self._read(key)
        return None if text is None else self._page._services.redact(text)

    def get_json(self, key: str) -> Any:
        """The value under ``key`` read as JSON (None when there is none). Its strings are
        redacted once decoded: a secret the app stored escaped (``p@ss\\u0026w``) is only
        itself after decoding."""
        text = self._read(key)
        if text is None:
            return None
        redact = self._page._services.redact
        try:
            return _redacted(json.loads(text), redact)
        except ValueError as exc:
            raise AssertionError(
                f"{self._label} {key!r} holds no JSON ({exc}): {redact(text)!r}"
            ) from None
        except RecursionError:
            raise AssertionError(f"{self._label} {key!r} holds JSON nested too deep") from None

    def set(self, key: str, value: str) -> None:
        """Keep ``value`` (a string; set_json writes any JSON value) under ``key``."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"{self._label}.set takes a string key and a string value (not "
                f"{type(value).__name__}); set_json(key, value) writes a list or an object"
            )
        self._write("set", key, value)

    def set_json(self, key: str, value: Any) -> None:
        """Keep ``value`` written as JSON under ``key``; a value too big to send is refused
        before it is written out."""
        sendable(f"{self._label}.set_json", value)
        self.set(key, json.dumps(value))

    def remove(self, key: str) -> None:
        self._write("remove", key)

    def clear(self) -> None:
        self._write("clear")

    def keys(self) -> list[str]:
        return [key for key, _ in self.items()]

    def items(self) -> list[tuple[str, str]]:
        """Every key and value, in the storage's order."""
        redact = self._page._services.redact
        entries = self._entries() if self._loaded() is None else self._read_all()
        return [(redact(key), redact(value)) for key, value in entries]

    # -- where the storage is -----------------------------------------------------------------

    def _loaded(self) -> str | None:
        """The origin of the loaded page the storage is read in; None before one has loaded
        (the context's local storage of base_url's origin then)."""
        origin = self._page.own_origin(self._label.removeprefix("page."))
        if origin is None and (self._kind == "sessionStorage" or self._home() is None):
            raise CodePolicyError(
                f"{self._label}: no page of the app has loaded yet"
                + ("" if self._kind == "sessionStorage" else " and no base_url is set")
                + "; open one first (page.goto(...))"
            )
        return origin

    def _home(self) -> str | None:
        return self._page._services.home

    def _call(self, op: str, key: str | None = None, value: str | None = None) -> Any:
        page = self._page._target
        return page.evaluate(_STORAGE_CALL, [self._kind, op, key, value])

    # What is read here is as the page keeps it: the reading methods above redact it.

    def _read(self, key: str) -> str | None:
        if not isinstance(key, str):
            raise TypeError(f"{self._label}.get takes a string key")
        if self._loaded() is None:
            return dict(self._entries()).get(key)
        value = self._call("get", key)
        return None if value is None else str(value)

    def _read_all(self) -> list[tuple[str, str]]:
        return [(str(key), str(value)) for key, value in self._call("items")]

    def _write(self, op: str, key: str | None = None, value: str | None = None) -> None:
        sendable(f"{self._label}.{op}", (key, value))
        if self._loaded() is not None:
            self._call(op, key, value)
            return
        context, home = self._page._target.context, self._home()
        state = context.storage_state()
        origins = [entry for entry in state["origins"] if entry["origin"] != home]
        entries = dict(self._entries())
        if op == "set":
            entries[str(key)] = str(value)
        elif op == "remove":
            entries.pop(str(key), None)
        else:
            entries.clear()
        items = [{"name": name, "value": text} for name, text in entries.items()]
        sendable(f"{self._label}.{op}", items)  # the origin's whole storage goes at each write
        context.set_storage_state(
            {**state, "origins": [*origins, {"origin": home, "localStorage": items}]}
        )

    def _entries(self, key: str | None = None) -> list[tuple[str, str]]:
        """base_url's origin's local storage, as the browser context keeps it (unredacted:
        ``_write`` puts it back)."""
        state = self._page._target.context.storage_state()
        for entry in state["origins"]:
            if entry["origin"] == self._home():
                return [(item["name"], item["value"]) for item in entry["localStorage"]]
        return []

    def __repr__(self) -> str:
        return f"<{self._label}>"


class CookiesProxy:
    """``page.cookies``: the cookies the browser would send to the page's URL (before a page of
    the app loaded, to base_url), or to a URL of another allowed origin, by name.

    With ``redact_cookies`` (the default), a cookie value of 8 characters or more (a session,
    HttpOnly or not, with an expiry or without: a remember-me token lasts a month) reads as its
    placeholder ``${cookie NAME}``, never as the value, so step code has nothing to spell; the
    value is redacted from everything that leaves the machine, and from whatever step code reads
    later. A second value of the same cookie reads as ``${cookie NAME (2)}``, so a session that
    changed at login is told apart. A shorter value (a theme, a consent flag) reads as it is."""

    __slots__ = ("_page",)

    def __init__(self, page: PageProxy) -> None:
        self._page = page

    def get(self, name: str, url: str | None = None) -> str | None:
        """The value of the cookie ``name``, or None."""
        if not isinstance(name, str):
            raise TypeError("page.cookies.get takes a cookie's name")
        for cookie in self._cookies(url):
            if cookie["name"] == name:
                return self._value(cookie)
        return None

    def names(self, url: str | None = None) -> list[str]:
        redact = self._page._services.redact
        return [redact(cookie["name"]) for cookie in self._cookies(url)]

    def _value(self, cookie: Any) -> str:
        """What step code gets of ``cookie``: see the class."""
        services = self._page._services
        value = str(cookie["value"])
        if services.hide is not None:
            value = services.hide(f"cookie {cookie['name']}", value)
        return services.redact(value)

    def _cookies(self, url: str | None) -> list[Any]:
        page, services = self._page, self._page._services
        origin = page.own_origin("cookies") or services.home
        if origin is None:
            raise CodePolicyError(
                "page.cookies: no page of the app has loaded and no base_url is set"
            )
        current = page._target.url if is_web(page._target.url) else origin
        # read as the browser reads it, and handed to the browser in that reading's own words
        target = web_url(current if url is None else str(url), current)
        if target is None or (
            services.origin_allowed is not None and not services.origin_allowed(target)
        ):
            shown = "that URL" if target is None else origin_of(target)
            raise CodePolicyError(
                f"page.cookies: {services.redact(shown)} is outside allowed_origins; "
                "step code reads the cookies of the test's origins only"
            )
        return list(page._target.context.cookies([target]))

    def __repr__(self) -> str:
        return "<page.cookies>"


class MouseProxy(_Proxy):
    """``page.mouse`` as step code sees it: every point it moves to or acts at, the moves of
    ``steps`` on the way too, lies over no frame of another origin."""

    __slots__ = ("_page",)
    _LABEL = "mouse"
    _ALLOWED = MOUSE_ATTRIBUTES

    def __init__(
        self,
        mouse: Mouse,
        budget: Budget | None = None,
        services: PageServices | None = None,
        page: Page | None = None,
    ) -> None:
        super().__init__(mouse, budget, services)
        object.__setattr__(self, "_page", page)

    def __getattr__(self, name: str) -> Any:
        method = super().__getattr__(name)

        def forward(*args: Any, **kwargs: Any) -> Any:
            self._moves(name, args, kwargs)
            return method(*args, **kwargs)

        return forward

    def _moves(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Refuse the call when a point it reaches lies over a frame of another origin."""
        page, allowed = self._page, self._services.origin_allowed
        if page is None:
            raise CodePolicyError("mouse: take it from the page (page.mouse)")
        before = _POINTER.get(page)
        if name in ("down", "up", "wheel"):
            points: list[tuple[float, float] | None] = [before]
        else:
            x, y = (*args, kwargs.get("x"), kwargs.get("y"))[:2]
            if len(args) < 2:
                y = kwargs.get("y", y)
            if not all(isinstance(value, (int, float)) for value in (x, y)):
                raise CodePolicyError(f"mouse.{name} takes a point: x and y in pixels")
            steps = kwargs.get("steps", 1) if name == "move" else 1
            points = _path(before, (float(x), float(y)), steps)
        if allowed is not None and outside_frames(page, allowed):
            frames = foreign_frames(page, allowed)
            for point in points:
                self._pointer_allowed(name, frames, point)
        if points[-1] is not None:
            _POINTER[page] = points[-1]


class AssertionsProxy(_Proxy):
    """What ``expect(...)`` returns to step code: only the matchers."""

    __slots__ = ("_subject",)
    _LABEL = "expect(...)"
    _ALLOWED = EXPECT_MATCHERS

    def __init__(
        self,
        target: Any,
        budget: Budget | None = None,
        services: PageServices | None = None,
        subject: Any = None,
    ) -> None:
        """``subject``: what ``expect`` was given (a locator is shown to the observer once a
        matcher passed on it)."""
        super().__init__(target, budget, services)
        object.__setattr__(self, "_subject", subject)

    @property
    def _default_ms(self) -> float:
        return self._services.expect_timeout_ms

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A matcher waits the test's expect_timeout_ms unless it names its own timeout; a
        locator it passed on is shown to the observer."""
        if "timeout" not in kwargs:
            kwargs["timeout"] = self._default_ms
        result = super()._call(method, *args, **kwargs)
        subject = self._subject
        if isinstance(subject, LocatorProxy):
            checked = subject._watched(needs_elements(method.__name__, args, kwargs))
            if checked is not None:
                checked()
        return result


def needs_elements(matcher: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a matcher that passed found what it checks: a negated one, ``to_be_hidden``,
    ``to_have_count(0)`` and a state asked to be false pass on nothing at all."""
    if matcher.startswith("not_to_") or matcher == "to_be_hidden":
        return False
    if matcher == "to_have_count":
        return (args[0] if args else kwargs.get("count")) != 0
    state = {"to_be_visible": "visible", "to_be_attached": "attached"}.get(matcher)
    return not (state and kwargs.get(state) is False)


_PROXIES: tuple[tuple[type, type[_Proxy]], ...] = (
    (Locator, LocatorProxy),
    (FrameLocator, FrameLocatorProxy),
    (Keyboard, KeyboardProxy),
    (Mouse, MouseProxy),
)


def expect_for_steps(actual: Any, *args: Any, **kwargs: Any) -> AssertionsProxy:
    """Playwright's ``expect`` for step code: unwraps proxies, returns only the matchers, which
    run within the budget of ``actual`` (a proxy's) or a fresh one."""
    budget = actual._budget if isinstance(actual, _Proxy) else None
    services = actual._services if isinstance(actual, _Proxy) else None
    target = actual._target if isinstance(actual, (PageProxy, LocatorProxy)) else actual
    return AssertionsProxy(playwright_expect(target, *args, **kwargs), budget, services, actual)


def _path(
    start: tuple[float, float] | None, end: tuple[float, float], steps: Any
) -> list[tuple[float, float] | None]:
    """The points a ``mouse.move(..., steps=n)`` sends a move at, as Playwright spaces them
    once the steps are clamped (:mod:`.limits`)."""
    if not isinstance(steps, int):
        raise CodePolicyError("mouse.move takes steps as a whole number")
    steps = max(1, min(steps, MAX_STEPS))
    if start is None or steps == 1:
        return [end]
    return [
        (start[0] + (end[0] - start[0]) * i / steps, start[1] + (end[1] - start[1]) * i / steps)
        for i in range(1, steps + 1)
    ]


def _landing(target: Locator, position: Any, timeout: float) -> tuple[Any, tuple[float, float]]:
    """The frame of ``target``'s element, and where a pointer action on it lands: the centre
    of its box, or ``position`` from its corner (as Playwright moves there), measured once it
    shows. One handle answers both: finding the element is what takes time."""
    handle = one_handle(target, timeout)
    try:
        box = Box.of(handle.bounding_box())
        if box is None:  # not shown yet: the action would wait for it, and so does the check
            target.wait_for(state="visible", timeout=max(1.0, timeout))
            box = Box.of(handle.bounding_box())
        frame = handle.owner_frame()
    finally:
        handle.dispose()
    if box is None:
        raise CodePolicyError("the element to act on shows no box: it cannot be placed")
    if isinstance(position, dict):
        try:
            return frame, (box.x + float(position["x"]), box.y + float(position["y"]))
        except (KeyError, TypeError, ValueError):
            raise CodePolicyError("position takes {'x': ..., 'y': ...} in pixels") from None
    return frame, (box.x + box.width / 2, box.y + box.height / 2)


def _inside(folder: Path, name: Any) -> Path:
    """The file ``name`` names in ``folder``, links followed; refused when it lies outside."""
    if not isinstance(name, str):
        raise CodePolicyError("set_input_files takes names of files in files_dir")
    problem = upload_problem(name)
    if problem:
        raise CodePolicyError(f"set_input_files: {problem}")
    if folder.is_symlink():  # a link planted for the folder would let every name leave it
        raise CodePolicyError(
            f"set_input_files: files_dir {folder} is a symbolic link (to {points_to(folder)}); "
            "prettyplay never uploads through one: name the folder it points to as files_dir"
        )
    if leaves(folder, folder / name):
        raise CodePolicyError(f"set_input_files: {name!r} leads outside files_dir")
    path = (folder / name).resolve()
    if not path.is_file():
        raise CodePolicyError(f"set_input_files: there is no file {name!r} in files_dir")
    return path


def _spelt(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """A call as step code spells it, ``get_by_role("button", name="Add")``, its arguments
    plain values or patterns; None for any other argument (a locator, a function)."""
    values = [_literal(arg) for arg in args]
    named = [(key, _literal(value)) for key, value in kwargs.items()]
    if None in values or any(literal is None for _, literal in named):
        return None
    parts = [*map(str, values), *(f"{key}={literal}" for key, literal in named)]
    return f"{name}({', '.join(parts)})"


def _literal(value: Any) -> str | None:
    """One argument as step code spells it: a literal, a pattern, a locator from ``page``."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, StepPattern):
        flags = value.standard.flags & ~re.UNICODE  # a text pattern's own, always set
        given = f", {flags}" if flags else ""
        return f"re.compile({json.dumps(value.standard.pattern, ensure_ascii=False)}{given})"
    if isinstance(value, LocatorProxy) and value._chain:  # filter(has=page.get_by_role(...))
        return f"page.{value._chain}"
    return None


def _wrap(value: Any, budget: Budget, services: PageServices) -> Any:
    if isinstance(value, str):
        return services.redact(value)
    if isinstance(value, _PLAIN):
        return value
    for kind, proxy in _PROXIES:
        if isinstance(value, kind):
            return proxy(value, budget, services)
    if isinstance(value, (list, tuple)):
        return type(value)(_wrap(item, budget, services) for item in value)
    if isinstance(value, dict):
        return {key: _wrap(item, budget, services) for key, item in value.items()}
    return None


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """A decoded JSON value with every string in it (keys too) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    if isinstance(value, dict):
        return {redact(key): _redacted(item, redact) for key, item in value.items()}
    return value


def _unwrap(value: Any) -> Any:
    if isinstance(value, _Proxy):
        return value._target
    if isinstance(value, StepPattern):  # Playwright takes the standard pattern
        return value.standard
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(item) for item in value)
    if isinstance(value, dict):
        return {key: _unwrap(item) for key, item in value.items()}
    return value
