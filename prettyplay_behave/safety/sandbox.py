"""Compile checked step code into a function, and run it against a proxied page, bounded.

The checked code is rewritten before it is compiled, so that what the policy lets Python
compute stays bounded (:mod:`.limits`): every ``for`` loop walks a snapshot through a guard that
checks the time budget at each item; ``+``, ``*`` and ``%`` (and their augmented forms),
f-strings, ``str.replace`` and ``str.join`` refuse results past the size caps, and so does
printing a container (``str()``, an f-string, ``%``, an ``assert``'s message) before the string
is built. The names the rewrite adds start with ``__``, which step code cannot write.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import functools
import hashlib
import linecache
from collections.abc import Callable
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import CodePolicyError
from .limits import (
    Budget,
    bounded_items,
    call_method,
    capped,
    grow,
    memory_headroom,
    numbers_sum,
    printable,
)
from .policy import BUILTIN_NAMES, MAX_LOOP_ITEMS
from .proxy import PageProxy, PageServices, expect_for_steps
from .regex import StepRegex
from .scenario_memory import Execution, ScenarioMemory
from .step_code import step_code

if TYPE_CHECKING:
    from playwright.sync_api import Page

StepFunction = Callable[..., None]

_GROWING_OPERATORS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Mult: "*", ast.Mod: "%"}
_GROWING_METHODS = frozenset({"replace", "join"})


def _bounded_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_LOOP_ITEMS:
        raise CodePolicyError(f"range() may hold at most {MAX_LOOP_ITEMS} numbers")
    return numbers


def _no_secrets(name: str) -> object:
    raise CodePolicyError(f"secret({name!r}) is not available: no secret resolver is configured")


_BUILTINS: dict[str, object] = {name: getattr(builtins, name) for name in BUILTIN_NAMES}
_BUILTINS["range"] = _bounded_range
_BUILTINS["sum"] = numbers_sum


def _helper(name: str) -> ast.Name:
    return ast.Name(f"__{name}__", ast.Load())


class _Bound(ast.NodeTransformer):
    """Routes loops, growing operators, f-strings and growing methods through the limits."""

    def visit_For(self, node: ast.For) -> ast.For:
        self.generic_visit(node)
        node.iter = ast.copy_location(ast.Call(_helper("loop_items"), [node.iter], []), node.iter)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op = _GROWING_OPERATORS.get(type(node.op))
        if op is None:
            return node
        call = ast.Call(_helper("grow"), [ast.Constant(op), node.left, node.right], [])
        return ast.copy_location(call, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        op = _GROWING_OPERATORS.get(type(node.op))
        if op is None or not isinstance(node.target, ast.Name):
            return node  # the policy allows augmented assignment to a plain name only
        current = ast.Name(node.target.id, ast.Load())
        value = ast.Call(_helper("grow"), [ast.Constant(op), current, node.value], [])
        return ast.copy_location(ast.Assign([node.target], value), node)

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        self.generic_visit(node)
        if node.msg is not None:  # printed as the error's text: a container is printed then
            node.msg = ast.copy_location(ast.Call(_helper("printable"), [node.msg], []), node.msg)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        return ast.copy_location(ast.Call(_helper("capped"), [node], []), node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        value = self.visit(node.value)  # a format spec stays an f-string part
        node.value = ast.copy_location(ast.Call(_helper("printable"), [value], []), value)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            # ``str`` cannot be rebound in step code: this is the builtin
            node.args = [ast.Call(_helper("printable"), node.args, [])]
            return node
        if not isinstance(func, ast.Attribute) or func.attr not in _GROWING_METHODS:
            return node
        args = [func.value, ast.Constant(func.attr), *node.args]
        return ast.copy_location(ast.Call(_helper("call_method"), args, node.keywords), node)


STEP_FILE = "<step code"


@functools.lru_cache(maxsize=1024)
def _checked_and_bounded(code: str) -> CodeType:
    """The policy's check and the bounded rewrite of one text, compiled: once per text, since a
    replay runs the same code in scenario after scenario (a refusal is not kept: it raises)."""
    checked = step_code(code)
    checked.check()
    assert checked.tree is not None  # code that passes the policy parses
    filename = step_filename(code)
    # the rewrite changes the tree it walks: a copy, for the parsed tree is shared
    tree = ast.fix_missing_locations(_Bound().visit(copy.deepcopy(checked.tree)))
    # a traceback through the step shows its own lines (the rewrite keeps their numbers)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    return compile(tree, filename, "exec", dont_inherit=True)


def step_filename(code: str) -> str:
    """The name step code runs under, one per text: what a traceback names its frames by."""
    return f"{STEP_FILE} {hashlib.sha1(code.encode()).hexdigest()[:8]}>"


def step_frames(tb: TracebackType | None) -> TracebackType | None:
    """The frames of ``tb`` that run step code, with their locals cleared (a local may hold
    what ``secret()`` gave): a traceback that shows the step's own lines and nothing else."""
    frames: list[TracebackType] = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(STEP_FILE):
            frames.append(tb)
        tb = tb.tb_next
    kept: TracebackType | None = None
    for frame in reversed(frames):
        with contextlib.suppress(RuntimeError):  # a frame still running keeps its locals
            frame.tb_frame.clear()
        kept = TracebackType(kept, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return kept


def compile_step(
    code: str,
    *,
    secret: Callable[[str], object] | None = None,
    budget: Budget | None = None,
    memory: Execution | None = None,
) -> StepFunction:
    """Check ``code`` against the policy and return its ``step`` function, bounded by
    ``budget`` (started by :func:`call_step`).

    ``secret`` resolves ``secret("NAME")`` calls; without it they raise CodePolicyError.
    ``memory`` is the scenario's memory as this execution sees it (``remember``, ``recall``);
    without it, a step has nothing to recall and keeps nothing it remembers.
    """
    memory = memory or ScenarioMemory().execution("", lambda text: False)
    compiled = _checked_and_bounded(code)
    budget = budget or Budget(60_000)
    namespace: dict[str, object] = {
        "__builtins__": dict(_BUILTINS),
        "expect": expect_for_steps,
        "re": StepRegex(budget),
        "secret": secret or _no_secrets,
        "remember": memory.remember,
        "recall": memory.recall,
        "__loop_items__": bounded_items(budget, MAX_LOOP_ITEMS),
        "__grow__": grow,
        "__capped__": capped,
        "__printable__": printable,
        "__call_method__": call_method,
        "__budget__": budget,
    }
    exec(compiled, namespace)
    step = namespace["step"]
    assert callable(step)
    return step


def call_step(
    step_fn: StepFunction,
    page: Page,
    services: PageServices | None = None,
    *,
    values: tuple[str, ...] = (),
    on_navigate: Callable[[str], object] | None = None,
) -> None:
    """Run a compiled step on ``page`` within its budget; whatever the step raises propagates
    unchanged (a ``MemoryError`` when it passed the memory headroom). A step that takes
    parameters gets the step's ``values``, in order (the caller checked that they fit); one
    that takes none spells them out."""
    budget: Budget = _namespace(step_fn)["__budget__"]
    wanted = step_parameters(step_fn)
    budget.start()
    with memory_headroom():
        step_fn(PageProxy(page, budget, services, on_navigate=on_navigate), *values[:wanted])


def step_parameters(step_fn: StepFunction) -> int:
    """How many parameters a compiled step takes after ``page``."""
    code = getattr(step_fn, "__code__", None)
    return max(0, code.co_argcount - 1) if code is not None else 0


def _namespace(step_fn: StepFunction) -> dict[str, Any]:
    return getattr(step_fn, "__globals__", {})
