"""Compile checked step code into a function, and run it against a proxied page."""

from __future__ import annotations

import ast
import builtins
import itertools
import re
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..errors import CodePolicyError
from .policy import BUILTIN_NAMES, MAX_LOOP_ITEMS, RE_NAMES, check_code
from .proxy import PageProxy, expect_for_steps

if TYPE_CHECKING:
    from playwright.sync_api import Page

StepFunction = Callable[[PageProxy], None]

# The name for-loops are rewritten to call; it starts with "_", so step code cannot name it.
_LOOP_GUARD = "__loop_items__"


def _loop_items(iterable: Iterable[object]) -> tuple[object, ...]:
    # A snapshot, so a loop cannot grow the list it walks over.
    items = tuple(itertools.islice(iterable, MAX_LOOP_ITEMS + 1))
    if len(items) > MAX_LOOP_ITEMS:
        raise CodePolicyError(f"a for loop may run at most {MAX_LOOP_ITEMS} times")
    return items


def _bounded_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_LOOP_ITEMS:
        raise CodePolicyError(f"range() may hold at most {MAX_LOOP_ITEMS} numbers")
    return numbers


def _no_secrets(name: str) -> object:
    raise CodePolicyError(f"secret({name!r}) is not available: no secret resolver is configured")


_BUILTINS: dict[str, object] = {name: getattr(builtins, name) for name in BUILTIN_NAMES}
_BUILTINS["range"] = _bounded_range


class _GuardLoops(ast.NodeTransformer):
    """Rewrites ``for x in it`` to ``for x in __loop_items__(it)``."""

    def visit_For(self, node: ast.For) -> ast.For:
        self.generic_visit(node)
        guard = ast.Name(_LOOP_GUARD, ast.Load())
        node.iter = ast.copy_location(ast.Call(guard, [node.iter], []), node.iter)
        return node


def compile_step(code: str, *, secret: Callable[[str], object] | None = None) -> StepFunction:
    """Check ``code`` against the policy and return its ``step`` function.

    ``secret`` resolves ``secret("NAME")`` calls; without it they raise CodePolicyError.
    """
    check_code(code)
    tree = ast.fix_missing_locations(_GuardLoops().visit(ast.parse(code, "<step>")))
    namespace: dict[str, object] = {
        "__builtins__": dict(_BUILTINS),
        "expect": expect_for_steps,
        "re": types.SimpleNamespace(**{name: getattr(re, name) for name in RE_NAMES}),
        "secret": secret or _no_secrets,
        _LOOP_GUARD: _loop_items,
    }
    exec(compile(tree, "<step>", "exec", dont_inherit=True), namespace)
    step = namespace["step"]
    assert callable(step)
    return step


def call_step(
    step_fn: StepFunction, page: Page, *, on_navigate: Callable[[str], object] | None = None
) -> None:
    """Run a compiled step on ``page``; whatever the step raises propagates unchanged."""
    step_fn(PageProxy(page, on_navigate=on_navigate))
