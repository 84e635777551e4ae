"""The bounds of one execution of step code in time and in size.

A watchdog thread cannot stop CPU-bound Python (a regular-expression match holds the
interpreter lock for its whole run) nor a Playwright call with ``timeout=0``. So the bounds are
built into what step code can do:

- **time**: a :class:`Budget` of ``step_timeout_ms`` starts with the execution. Every Playwright
  call through the proxies gets a timeout that never outlasts it (``0``, "no limit" to
  Playwright, becomes what is left), its ``delay`` and ``steps`` arguments are clamped, every
  loop iteration and every call checks it, and regular expressions run with a timeout.
- **size**: arithmetic and the methods that grow values refuse a result past fixed caps before
  they compute it (an int of more than ``MAX_INT_BITS`` bits, a string, list or tuple of more
  than ``MAX_LENGTH`` items), and on Linux the process may not take more than
  ``MEMORY_HEADROOM`` more memory while step code runs, so an allocation past it fails with
  ``MemoryError`` (a red execution) instead of taking the machine.
- **what leaves**: one call may send at most ``MAX_SENT`` characters to the browser (counted
  before anything is serialised: a list of long strings is refused, not sent for minutes), and
  the text an execution ends with is cut to ``MAX_TEXT`` characters, its head and its tail, with
  a note of how many were cut (:func:`cut_text`), before any output or request carries it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import CodePolicyError, StepTimeoutError
from ..log_events import LogEvent, record

MAX_INT_BITS = 4_096
MAX_LENGTH = 1_000_000
MAX_DELAY_MS = 1_000  # per key or click: longer pauses are a sleep in disguise
MAX_STEPS = 100  # mouse move steps: each is one event sent to the page
# keys typed one by one in one call (some milliseconds each): past that, fill() is the way
MAX_TYPED_KEYS = 2_000
EXPECT_TIMEOUT_MS = 5_000  # Playwright's assertions, unless expect.set_options says otherwise
MEMORY_HEADROOM = 1 << 30  # bytes step code may add to the process (Linux)
MAX_SENT = 2 * MAX_LENGTH  # characters one call sends to the browser: the largest string, twice
MAX_TEXT = 20_000  # characters of an outcome's text: the head and the tail of a longer one
# the browser's timers count whole milliseconds from their own last tick: a timeout the budget
# set may end a little before this process's clock says the budget ran out
TIMER_SKEW_MS = 50

_SIZED = (str, bytes, list, tuple)
_CONTAINERS = (list, tuple, set, frozenset, dict)


class Budget:
    """The time one execution of step code may take; starts when the execution does.

    ``action_timeout_ms`` is what a Playwright action waits when it names no timeout (the
    context's default); Playwright's assertions wait ``EXPECT_TIMEOUT_MS`` by default.
    """

    def __init__(self, limit_ms: int, action_timeout_ms: float = 30_000) -> None:
        self.limit_ms = limit_ms
        self.action_timeout_ms = action_timeout_ms
        self._deadline = float("inf")

    @classmethod
    def started(cls, limit_ms: int = 60_000) -> Budget:
        budget = cls(limit_ms)
        budget.start()
        return budget

    def start(self) -> None:
        self._deadline = time.monotonic() + self.limit_ms / 1000

    def remaining_ms(self) -> float:
        return max(0.0, (self._deadline - time.monotonic()) * 1000)

    def expired(self, within_ms: float = 0.0) -> bool:
        """Whether the budget ran out, or has at most ``within_ms`` left."""
        return time.monotonic() >= self._deadline - within_ms / 1000

    def check(self) -> None:
        if self.expired():
            raise self.error()

    def error(self) -> StepTimeoutError:
        return StepTimeoutError(
            f"the step code ran past step_timeout_ms={self.limit_ms} and was stopped there; "
            "raise prettyplay.step_timeout_ms if the step really needs longer"
        )


# -- Playwright calls ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _parameters(method: Callable[..., Any]) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        return frozenset()


def clamp(
    method: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    budget: Budget,
    default_ms: float,
) -> bool:
    """Fit the ``timeout``, ``delay`` and ``steps`` arguments of a Playwright call into what is
    left of ``budget`` (in place); True when the budget, not the caller, set the timeout.

    ``default_ms`` is the wait of the call when it names no timeout.
    """
    names = _parameters(getattr(method, "__func__", method))
    remaining = budget.remaining_ms()
    bounded_by_budget = False
    if "timeout" in names:
        given = kwargs.get("timeout")
        wanted = default_ms if given is None else (given or float("inf"))  # 0: no limit
        if wanted > remaining:
            kwargs["timeout"] = max(1.0, remaining)
            bounded_by_budget = True
    if kwargs.get("delay"):
        text = kwargs.get("text", args[-1] if args else None)
        events = max(1, len(text)) if isinstance(text, str) else 1
        kwargs["delay"] = min(float(kwargs["delay"]), MAX_DELAY_MS, remaining / events)
    if "steps" in kwargs:
        kwargs["steps"] = max(1, min(int(kwargs["steps"]), MAX_STEPS))
    return bounded_by_budget


def typed_text(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``text`` argument of a typing call, however it was passed."""
    if "text" in kwargs:
        return kwargs["text"]
    try:
        bound = inspect.signature(getattr(method, "__func__", method)).bind_partial(
            None, *args, **kwargs
        )
    except (TypeError, ValueError):
        return None
    return bound.arguments.get("text")


def bounded_call(
    method: Callable[..., Any], budget: Budget, default_ms: float, *args: Any, **kwargs: Any
) -> Any:
    """Call a Playwright method within ``budget``; a timeout the budget set names the bound.
    Arguments of more than ``MAX_SENT`` characters in all are refused before they are sent."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    budget.check()
    sendable(getattr(method, "__name__", "the call"), (args, kwargs))
    by_budget = clamp(method, args, kwargs, budget, default_ms)
    try:
        return method(*args, **kwargs)
    except (PlaywrightTimeoutError, AssertionError) as exc:
        if by_budget and budget.expired(within_ms=TIMER_SKEW_MS):
            raise budget.error() from exc
        raise


def sendable(what: str, value: Any) -> None:
    """Refuse ``value`` when it would send more than ``MAX_SENT`` characters to the browser:
    counted on the value, before it is serialised (that alone took minutes for 100 MB)."""
    if _printed_length(value, MAX_SENT) > MAX_SENT:
        raise CodePolicyError(
            f"{what}: step code may not send more than {MAX_SENT:,} characters to the browser "
            "in one call"
        )


def cut_text(
    text: str, limit: int = MAX_TEXT, clean: Callable[[str], str] | None = None, margin: int = 0
) -> str:
    """``text``, or when it is longer than ``limit`` its head and its tail with a note of how
    many characters were cut between them (an error's message comes first, a log's end last).

    ``clean`` (a redactor) reads each kept part with ``margin`` more characters beyond the cut,
    so that what it replaces is whole even where the cut splits it."""
    clean = clean or (lambda part: part)
    if len(text) <= limit:
        return clean(text)
    head = limit * 3 // 4
    tail = limit - head
    note = f"\n… {len(text) - limit:,} characters cut …\n"
    kept_head = clean(text[: head + margin])[:head]
    kept_tail = clean(text[max(0, len(text) - tail - margin) :])
    return kept_head + note + kept_tail[len(kept_tail) - tail :]


# -- loops and arithmetic -------------------------------------------------------------------------


def _too_big(what: str) -> CodePolicyError:
    return CodePolicyError(f"step code may not build {what}")


def _printed_length(value: Any, limit: int, within: frozenset[int] = frozenset()) -> int:
    """At least how long ``str(value)`` is, counted until past ``limit``: the strings inside
    containers and their punctuation, and one character for anything else. A container inside
    itself prints as ``[...]``."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if not isinstance(value, _CONTAINERS):
        return 1
    if id(value) in within:
        return 5
    within = within | {id(value)}
    total = 2 * len(value)  # the brackets, and ", " between items
    pairs = value.items() if isinstance(value, dict) else ((item,) for item in value)
    for pair in pairs:
        for item in pair:
            total += _printed_length(item, limit - total, within)
        if total > limit:
            break
    return total


def printable(value: Any) -> Any:
    """``value``, unless printing it (``str()``, an f-string or ``%``) would build a
    string past the caps: refused before it is built, not after a gigabyte was."""
    if isinstance(value, _CONTAINERS) and _printed_length(value, MAX_LENGTH) > MAX_LENGTH:
        raise _too_big(f"a string of more than {MAX_LENGTH:,} characters")
    return value


def _size_after(op: str, left: Any, right: Any) -> None:
    """Refuse, before it is computed, a result of ``left op right`` past the caps."""
    if op == "%" and isinstance(left, str):
        printable(right)
    if op == "*":
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise _too_big(f"an integer of more than {MAX_INT_BITS} bits")
            return
        sized, count = (left, right) if isinstance(left, _SIZED) else (right, left)
        if isinstance(sized, _SIZED) and isinstance(count, int) and len(sized) * count > MAX_LENGTH:
            raise _too_big(f"a value of more than {MAX_LENGTH:,} items")
    elif (
        op == "+"
        and isinstance(left, _SIZED)
        and isinstance(right, _SIZED)
        and len(left) + len(right) > MAX_LENGTH
    ):
        raise _too_big(f"a value of more than {MAX_LENGTH:,} items")


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "*": operator.mul,
    "%": operator.mod,
}


def grow(op: str, left: Any, right: Any) -> Any:
    """``left op right``, refused when its result would pass the caps."""
    _size_after(op, left, right)
    return capped(_OPERATORS[op](left, right))


def capped(value: Any) -> Any:
    """A value checked against the caps after it was built (f-strings, ``%`` formatting)."""
    if isinstance(value, _SIZED) and len(value) > MAX_LENGTH:
        raise _too_big(f"a value of more than {MAX_LENGTH:,} items")
    return value


def call_method(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``target.name(...)`` for the methods that grow a string, checked before they run."""
    if isinstance(target, str) and name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
            times = target.count(old) if old else len(target) + 1
            if len(target) + times * (len(new) - len(old)) > MAX_LENGTH:
                raise _too_big(f"a value of more than {MAX_LENGTH:,} items")
    elif isinstance(target, str) and name == "join" and args:
        parts = list(args[0])
        total = sum(len(part) for part in parts if isinstance(part, str))
        if total + len(target) * max(0, len(parts) - 1) > MAX_LENGTH:
            raise _too_big(f"a value of more than {MAX_LENGTH:,} items")
        args = (parts, *args[1:])
    return getattr(target, name)(*args, **kwargs)


def numbers_sum(values: Any, start: Any = 0) -> Any:
    """``sum`` of numbers only: joining strings or lists this way would dodge the caps."""
    if not isinstance(start, (int, float)):
        raise CodePolicyError("sum() adds numbers only; use join() for strings")
    total = start
    for value in values:
        if not isinstance(value, (int, float)):
            raise CodePolicyError("sum() adds numbers only; use join() for strings")
        total += value
    return total


def bounded_items(budget: Budget, limit: int) -> Callable[[Any], Iterator[Any]]:
    """The loop guard: a loop walks a snapshot of at most ``limit`` items, within budget."""

    def items(iterable: Any) -> Iterator[Any]:
        snapshot = tuple(_first(iterable, limit + 1))
        if len(snapshot) > limit:
            raise CodePolicyError(f"a for loop may run at most {limit} times")
        for item in snapshot:
            budget.check()
            yield item

    return items


def _first(iterable: Any, count: int) -> Iterator[Any]:
    for number, item in enumerate(iterable):
        if number >= count:
            return
        yield item


# -- memory ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def memory_headroom(extra: int = MEMORY_HEADROOM) -> Iterator[None]:
    """While step code runs, the process may take at most ``extra`` more bytes (Linux, where
    the data segment limit is enforced; elsewhere only the size caps hold). A limit that cannot
    be read or set is said once, in a warning, and only the size caps hold then."""
    if not sys.platform.startswith("linux"):
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    used = _data_bytes()
    if not used:
        _headroom_unavailable("the process's data size cannot be read from /proc/self/status")
        yield
        return
    limit = used + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError) as exc:  # a limit already lower than that: keep it
        _headroom_unavailable(f"the data segment limit cannot be set ({exc})")
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


_said: set[str] = set()


def _headroom_unavailable(why: str) -> None:
    """Say once per run why the memory headroom does not hold."""
    if why in _said:
        return
    _said.add(why)
    record(
        LogEvent.MEMORY_HEADROOM_UNAVAILABLE,
        "the memory headroom of step code does not hold: %s; only the size caps bound what a "
        "step may build",
        why,
    )


def _data_bytes() -> int:
    """The process's data segment now (``VmData`` of /proc/self/status), in bytes."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0
