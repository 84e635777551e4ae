"""Step code as one value: its text, parsed once, and what the checks found in it.

Code enters a run in three places (an LLM's answer, a cache file, a steered turn) and is then
checked, compiled, scanned for secrets, and read for its parameters and reach. Each of those
reads :func:`step_code` of the text, which parses it and runs the code policy on it once: a
replay that loads, checks, runs and writes back the same text many times parses it once.

Contract: ``step_code(text)`` never raises; ``.check()`` raises the policy's
:class:`~..errors.CodePolicyError` (a fresh one each time) or returns; ``.tree`` is the parsed
module (None when the text does not parse), shared by every reader, so readers must not change
it (the sandbox's rewrite works on a copy).
"""

from __future__ import annotations

import ast
import copy
import functools
import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import CodePolicyError
from .policy import (
    BUILTIN_NAMES,
    MAX_CODE_CHARS,
    MAX_CODE_LINES,
    NAVIGATING_ATTRIBUTES,
    PROVIDED_NAMES,
    READ_ONLY_ATTRIBUTES,
    Reach,
    check_tree,
)


@dataclass(frozen=True, eq=False)
class StepCode:
    """One text of step code: its tree, the policy's verdict, its parameters and its reach."""

    text: str
    tree: ast.Module | None  # None when the text does not parse
    problem: tuple[str, int | None] | None  # the policy's refusal (message, line), if any
    unparsed: str = ""  # why the text does not parse ("line 3: invalid syntax"), if it does not

    def check(self) -> None:
        """Raise the policy's refusal of this code, if it has one."""
        if self.problem is not None:
            raise CodePolicyError(*self.problem)

    @property
    def passes(self) -> bool:
        return self.problem is None

    @cached_property
    def step(self) -> ast.FunctionDef | None:
        """The top-level ``def step``, when the code parses and has one."""
        body = self.tree.body if self.tree is not None else []
        return next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "step"), None)

    @cached_property
    def parameters(self) -> tuple[str, ...]:
        """The parameters ``step`` takes after ``page``."""
        return tuple(arg.arg for arg in self.step.args.args[1:]) if self.step else ()

    @cached_property
    def uses_all_parameters(self) -> bool:
        """Whether ``step`` uses each of its parameters (code that leaves a value unused spells
        it out, and serves only that value)."""
        if self.step is None:
            return True
        used = {
            n.id
            for n in ast.walk(self.step)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        return all(name in used for name in self.parameters)

    @cached_property
    def strings(self) -> tuple[str, ...]:
        """Every string literal of the code."""
        if self.tree is None:
            return ()
        return tuple(
            node.value
            for node in ast.walk(self.tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )

    @cached_property
    def assertions(self) -> tuple[str, ...]:
        """What the code asserts, each as it checks regardless of what it checks it on: an
        ``expect(...)`` matcher with its arguments (``to_have_text(re.compile('reset', re.I))``,
        ``not_to_be_visible()``) and an ``assert`` statement's test; in the code's order."""
        found: list[str] = []
        nodes = ast.walk(self.tree) if self.tree is not None else iter(())
        ordered = sorted(
            (n for n in nodes if isinstance(n, (ast.Assert, ast.Call))),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for node in ordered:
            if isinstance(node, ast.Assert):
                found.append(f"assert {ast.unparse(node.test)}")
            elif _is_matcher(node):
                assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                found.append(
                    ast.unparse(ast.Call(ast.Name(node.func.attr), node.args, node.keywords))
                )
        return tuple(dict.fromkeys(found))

    @cached_property
    def reach(self) -> Reach:
        """How far what the code (which passed the policy) does may reach past its return: it
        reads when it names no attribute but those of ``READ_ONLY_ATTRIBUTES`` and calls no
        name but the provided ones and the builtins; it navigates when it adds no more than
        ``NAVIGATING_ATTRIBUTES``; whatever else it touches may act in the page."""
        found = Reach.READS
        for node in ast.walk(self.tree) if self.tree is not None else ():
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Name) and called.id not in PROVIDED_NAMES | BUILTIN_NAMES:
                return Reach.ACTS
            if not isinstance(node, ast.Attribute) or node.attr in READ_ONLY_ATTRIBUTES:
                continue
            if node.attr not in NAVIGATING_ATTRIBUTES:
                return Reach.ACTS
            found = Reach.NAVIGATES
        return found


@functools.lru_cache(maxsize=4096)
def step_code(text: str) -> StepCode:
    """``text`` as step code: parsed and checked once per text (see the module docstring)."""
    try:
        tree: ast.Module | None = ast.parse(text, "<step>")
        unparsed = ""
    except SyntaxError as exc:
        tree, unparsed = None, f"line {exc.lineno}: {exc.msg}"
        problem: tuple[str, int | None] | None = (f"syntax error: {exc.msg}", exc.lineno)
    except (ValueError, RecursionError, MemoryError) as exc:
        tree, unparsed = None, str(exc)
        problem = (f"step code cannot be parsed: {exc}", None)
    lines = len(text.splitlines())
    if len(text) > MAX_CODE_CHARS:
        problem = (f"step code is too long ({len(text)} > {MAX_CODE_CHARS} characters)", None)
    elif lines > MAX_CODE_LINES:
        problem = (f"step code is too long ({lines} > {MAX_CODE_LINES} lines)", None)
    elif tree is not None:
        problem = _refusal(tree)
    return StepCode(text, tree, problem, unparsed)


def dropped_assertions(old: str, new: str) -> tuple[str, ...]:
    """The assertions of ``old`` code that ``new`` code no longer makes (see
    ``StepCode.assertions``): what a rewrite stopped checking."""
    kept = set(step_code(new).assertions)
    return tuple(a for a in step_code(old).assertions if a not in kept)


def _is_matcher(node: ast.AST) -> bool:
    """Whether ``node`` is a matcher called on ``expect(...)``: ``expect(x).to_be_visible()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    subject = node.func.value
    return (
        isinstance(subject, ast.Call)
        and isinstance(subject.func, ast.Name)
        and subject.func.id == "expect"
    )


_NAME = re.compile(r"\w*")


def without_annotations(text: str) -> str:
    """``text`` with the annotations of ``step``'s parameters taken off (``def step(page:
    Page, product: str) -> None:`` becomes ``def step(page, product) -> None:``), the rest
    as written. Models add them and the policy refuses them, yet they change nothing a step
    does, so code is read without them where it enters a run; ``-> None`` stays. Text that
    does not parse, or whose annotations cannot be cut cleanly, comes back as it is."""
    step = step_code(text).step
    annotated = [arg for arg in step.args.args if arg.annotation] if step is not None else []
    if not annotated:
        return text
    source = text.encode()
    starts = [0]  # the byte offset of each line: the tree's columns count UTF-8 bytes
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for arg in reversed(annotated):
        assert arg.annotation is not None and arg.annotation.end_lineno is not None
        name_at = starts[arg.lineno - 1] + arg.col_offset
        # the name as written, which may differ from its normalised ``arg.arg`` ("ﬁle")
        written = _NAME.match(source[name_at:].decode())
        assert written is not None  # \w* matches, if only the empty name
        name_end = name_at + len(written.group().encode())
        end = starts[arg.annotation.end_lineno - 1] + (arg.annotation.end_col_offset or 0)
        source = source[:name_end] + source[end:]
    stripped = source.decode()
    return stripped if _same_but_annotations(text, stripped) else text


def _same_but_annotations(text: str, stripped: str) -> bool:
    """Whether ``stripped`` is ``text``'s code with its parameters' annotations gone, and no
    other change (a cut that went astray leaves the text as the model wrote it)."""
    before, after = step_code(text).tree, step_code(stripped).tree
    if before is None or after is None:
        return False
    expected = copy.deepcopy(before)  # the shared tree is never changed
    for node in expected.body:
        if isinstance(node, ast.FunctionDef) and node.name == "step":
            for arg in node.args.args:
                arg.annotation = None
    return ast.dump(expected) == ast.dump(after)


def _refusal(tree: ast.Module) -> tuple[str, int | None] | None:
    """What the policy refuses in ``tree``, or None."""
    try:
        check_tree(tree)
    except CodePolicyError as refused:
        return refused.problem, refused.line
    except RecursionError:
        return "expression is nested too deeply", None
    return None


def check_code(code: str) -> None:
    """Refuse ``code`` with a CodePolicyError unless it is an allowed step function.

    A replay checks each entry when its cache file loads and again before it runs; every check
    after the first of the same text is a lookup."""
    step_code(code).check()
