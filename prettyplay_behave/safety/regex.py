"""``re`` as step code sees it: the same names, matching within the time budget.

CPython's ``re`` holds the interpreter lock for a whole match, so a pattern that backtracks
catastrophically would stall the run past any watchdog. Step code's matches run in the
``regex`` package instead, with a timeout of what is left of the budget. ``re.compile`` gives a
:class:`StepPattern`: its own matches are bounded the same way, and the proxies hand
Playwright the standard ``re.Pattern`` it needs (Playwright matches it in the browser, bounded
by the call's timeout). The ``regex`` package is loaded and the pattern compiled there only when
step code matches in Python: most patterns only ever go to Playwright.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import CodePolicyError
from .limits import MAX_LENGTH, Budget, capped

if TYPE_CHECKING:
    import regex


class StepPattern:
    """A compiled pattern of step code."""

    __slots__ = ("_bounded", "_budget", "_flags", "standard")

    def __init__(self, pattern: str, flags: int, budget: Budget) -> None:
        if not isinstance(pattern, str):
            raise CodePolicyError("re.compile needs a pattern string")
        self.standard = re.compile(pattern, flags)  # what Playwright receives
        self._flags = flags  # as given: the compiled flags of re number differently in regex
        self._bounded: regex.Pattern[str] | None = None
        self._budget = budget

    def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self._budget.check()
        if self._bounded is None:
            import regex

            self._bounded = regex.compile(self.standard.pattern, self._flags)
        try:
            result = getattr(self._bounded, name)(
                *args, timeout=self._budget.remaining_ms() / 1000, **kwargs
            )
        except TimeoutError as exc:
            raise self._budget.error() from exc
        return capped(result)

    def match(self, string: str, *args: Any) -> Any:
        return self._run("match", string, *args)

    def search(self, string: str, *args: Any) -> Any:
        return self._run("search", string, *args)

    def fullmatch(self, string: str, *args: Any) -> Any:
        return self._run("fullmatch", string, *args)

    def findall(self, string: str, *args: Any) -> Any:
        return self._run("findall", string, *args)

    def split(self, string: str, maxsplit: int = 0) -> Any:
        return self._run("split", string, maxsplit=maxsplit)

    def sub(self, repl: str, string: str, count: int = 0) -> Any:
        if not isinstance(repl, str):
            raise CodePolicyError("re.sub takes a replacement string")
        matches = len(self._run("findall", string)) if len(repl) > 1 else 0
        if len(string) + matches * len(repl) > MAX_LENGTH:
            raise CodePolicyError(
                f"step code may not build a value of more than {MAX_LENGTH:,} items"
            )
        return self._run("sub", repl, string, count=count)


class StepRegex:
    """The ``re`` namespace of step code."""

    DOTALL = S = re.DOTALL
    IGNORECASE = I = re.IGNORECASE  # noqa: E741 (re's own name)
    MULTILINE = M = re.MULTILINE

    def __init__(self, budget: Budget) -> None:
        self._budget = budget

    def compile(self, pattern: str | StepPattern, flags: int = 0) -> StepPattern:
        if isinstance(pattern, StepPattern):
            return pattern
        return StepPattern(pattern, flags, self._budget)

    @staticmethod
    def escape(text: str) -> str:
        return re.escape(text)

    def match(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self.compile(pattern, flags).match(string)

    def search(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self.compile(pattern, flags).search(string)

    def fullmatch(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self.compile(pattern, flags).fullmatch(string)

    def findall(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self.compile(pattern, flags).findall(string)

    def split(self, pattern: str, string: str, maxsplit: int = 0, flags: int = 0) -> Any:
        return self.compile(pattern, flags).split(string, maxsplit)

    def sub(self, pattern: str, repl: str, string: str, count: int = 0, flags: int = 0) -> Any:
        return self.compile(pattern, flags).sub(repl, string, count)
