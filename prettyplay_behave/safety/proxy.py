"""Capability proxies: what step code holds instead of Playwright's Page and Locator.

Each proxy forwards only the attribute names the code policy allows (the frozensets of
:mod:`.policy`), so a step that slips past the static check still cannot reach the browser
context, run JavaScript or touch files. Results come back wrapped: locators as
``LocatorProxy``, plain values as they are, any other Playwright object (such as the
Response from ``goto``) not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from playwright.sync_api import FrameLocator, Keyboard, Locator, Mouse, Page
from playwright.sync_api import expect as playwright_expect

from ..errors import CodePolicyError
from .limits import EXPECT_TIMEOUT_MS, Budget, bounded_call
from .policy import (
    EXPECT_MATCHERS,
    FRAME_LOCATOR_ATTRIBUTES,
    KEYBOARD_ATTRIBUTES,
    LOCATOR_ATTRIBUTES,
    MOUSE_ATTRIBUTES,
    PAGE_ATTRIBUTES,
    navigation_problem,
)
from .regex import StepPattern

_PLAIN = (str, int, float, bool, type(None))


class _Proxy:
    """Forwards the allowlisted attributes of one Playwright object; refuses the rest.

    Every call runs within the execution's time budget (see :mod:`.limits`).
    """

    __slots__ = ("_budget", "_target")
    _LABEL: ClassVar[str] = "object"
    _ALLOWED: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, target: Any, budget: Budget | None = None) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_budget", budget or Budget.started())

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
            return _wrap(value, self._budget)

        def forward(*args: Any, **kwargs: Any) -> Any:
            result = bounded_call(
                value, self._budget, self._default_ms, *_unwrap(args), **_unwrap(kwargs)
            )
            return _wrap(result, self._budget)

        return forward

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
        *,
        on_navigate: Callable[[str], object] | None = None,
    ) -> None:
        """``on_navigate`` sees each URL given to ``goto``, as written; it may raise to refuse."""
        super().__init__(page, budget)
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
        bounded_call(self._target.goto, self._budget, self._default_ms, url, **_unwrap(kwargs))


class LocatorProxy(_Proxy):
    """A Locator as step code sees it; ``locator.page`` and evaluation are refused."""

    __slots__ = ()
    _LABEL = "locator"
    _ALLOWED = LOCATOR_ATTRIBUTES


class FrameLocatorProxy(_Proxy):
    """A FrameLocator as step code sees it."""

    __slots__ = ()
    _LABEL = "frame_locator"
    _ALLOWED = FRAME_LOCATOR_ATTRIBUTES


class KeyboardProxy(_Proxy):
    """``page.keyboard`` as step code sees it."""

    __slots__ = ()
    _LABEL = "keyboard"
    _ALLOWED = KEYBOARD_ATTRIBUTES


class MouseProxy(_Proxy):
    """``page.mouse`` as step code sees it."""

    __slots__ = ()
    _LABEL = "mouse"
    _ALLOWED = MOUSE_ATTRIBUTES


class AssertionsProxy(_Proxy):
    """What ``expect(...)`` returns to step code: only the matchers."""

    __slots__ = ()
    _LABEL = "expect(...)"
    _ALLOWED = EXPECT_MATCHERS

    @property
    def _default_ms(self) -> float:
        return EXPECT_TIMEOUT_MS


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
    target = actual._target if isinstance(actual, (PageProxy, LocatorProxy)) else actual
    return AssertionsProxy(playwright_expect(target, *args, **kwargs), budget)


def _wrap(value: Any, budget: Budget) -> Any:
    if isinstance(value, _PLAIN):
        return value
    for kind, proxy in _PROXIES:
        if isinstance(value, kind):
            return proxy(value, budget)
    if isinstance(value, (list, tuple)):
        return type(value)(_wrap(item, budget) for item in value)
    if isinstance(value, dict):
        return {key: _wrap(item, budget) for key, item in value.items()}
    return None


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
