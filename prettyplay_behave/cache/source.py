"""The step library's files (format 3): one Python file per step, read without importing it.

A file holds every entry of one step (kind, template, data): each entry a step function under a
``@step(...)`` decorator whose keyword arguments are literals (the entry's metadata). The file
is parsed with :mod:`ast`; only the keyword values are evaluated (``ast.literal_eval``) and the
function's text, the decorator left out, is the entry's code, exactly: the code policy checks it
as it checks any step code. Nothing else may stand at the top of the file. Whatever the bytes
hold, a read raises a CacheError naming the file (and the line), never another exception.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import CacheError
from .legacy import parse_json
from .library import CONFLICT_MARKERS, FORMAT, Library, StepEntry, Validate, unknown_format
from .paths import decode, read
from .schema import entry_from, keywords

SUFFIX = ".py"
HEADER = f"# prettyplay step library (format {FORMAT}): read by prettyplay without importing it."
_HEADER = re.compile(r"# prettyplay step library \(format (\d{1,9})\)")
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Python's parser counts as the end of a line
_SLUG_LENGTH = 60

MAX_LINE = 100  # what a keyword's line of a library file holds at most (its code is as written)
INDENT = "    "


def file_name(step: tuple[str, str, str]) -> str:
    """The file of a step (kind, template, data): a readable slug of the template and a hash
    of the step, so two steps never share a name and the same step always has the same one."""
    kind, sentence, data = step
    digest = hashlib.sha256(json.dumps([kind, sentence, data]).encode()).hexdigest()[:10]
    slug = re.sub(r"[^a-z0-9]+", "-", sentence.lower()).strip("-")[:_SLUG_LENGTH].rstrip("-")
    return f"{kind}-{slug}-{digest}{SUFFIX}" if slug else f"{kind}-{digest}{SUFFIX}"


# --- reading ---


def load_file(path: Path, validate: Validate) -> Library:
    """Parse and check a cache file: a library file (``.py``) or an old per-feature one. Raises
    CacheError naming the file (and the line or entry) when anything is wrong; the file is
    never modified."""
    return parse(path, read(path), validate)


def parse(path: Path, raw: bytes, validate: Validate) -> Library:
    """Parse and check the bytes of a cache file, as :func:`load_file` does with the file's own:
    e.g. the file as a git commit holds it. ``path`` names it in errors (and a library file's
    name is checked)."""
    if path.suffix == SUFFIX:
        return parse_steps(path, raw, validate)
    return parse_json(path, raw, validate)


def parse_steps(path: Path, raw: bytes, validate: Validate, named: bool = True) -> Library:
    """Parse and check the bytes of one library file; ``path`` names it in errors and (unless
    not ``named``: a text shown on its own) its name must be the one its step has."""
    text = decode(path, raw)
    lines = LINE_BREAK.split(text)
    header = _HEADER.match(lines[0])
    if header is None:
        _refuse_conflicts(path, lines)
        raise CacheError(
            f"{path}: not a prettyplay step library file (its first line is not {HEADER!r})"
        )
    if int(header.group(1)) != FORMAT:
        raise unknown_format(path, int(header.group(1)), library=True)
    tree = _tree(path, text, lines)
    library = Library()
    starts = [_first_line(node) for node in tree.body] + [len(lines) + 1]
    for index, node in enumerate(tree.body):
        decorator = _decorator(path, node)
        where = f"{path}: line {node.lineno}"
        code_lines = lines[decorator.end_lineno or node.lineno : starts[index + 1] - 1]
        while code_lines and code_lines[-1] == "":
            code_lines.pop()
        entry = _entry(where, decorator, "\n".join(code_lines), validate)
        if library.get(entry.identity) is not None:
            raise CacheError(f"{where}: duplicate of an earlier entry ({entry.describe()})")
        if library.entries and library.entries[0].step != entry.step:
            raise CacheError(
                f"{where}: an entry of another step ({entry.describe()}) than the file's first; "
                "each step has a file of its own"
            )
        library.upsert(entry)
    if named and library.entries and path.name != file_name(library.entries[0].step):
        raise CacheError(
            f"{path}: its step ({library.entries[0].describe()}) is kept in a file named "
            f"{file_name(library.entries[0].step)!r}: rename the file"
        )
    return library


def _tree(path: Path, text: str, lines: list[str]) -> ast.Module:
    try:
        return ast.parse(text, str(path))
    except SyntaxError as exc:
        _refuse_conflicts(path, lines)
        raise CacheError(f"{path}: invalid Python at line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise CacheError(f"{path}: the Python nests too deeply to be a library file") from None
    except ValueError as exc:  # a NUL byte, on the Pythons that do not call it a syntax error
        raise CacheError(f"{path}: cannot be parsed: {exc}") from None


def _refuse_conflicts(path: Path, lines: list[str]) -> None:
    """A file git left mid-merge is said to be one (looked for only in a file that does not
    read: a line of a string in the code may start like a marker)."""
    for number, line_text in enumerate(lines, start=1):
        if line_text.startswith(CONFLICT_MARKERS):
            raise CacheError(
                f"{path}: merge conflict markers at line {number}; resolve the conflict "
                "(or delete the file to generate its entries again)"
            )


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _decorator(path: Path, node: ast.stmt) -> ast.Call:
    """The ``@step(...)`` call over a top-level ``def step``; anything else is refused."""
    where = f"{path}: line {node.lineno}"
    if not (isinstance(node, ast.FunctionDef) and node.name == "step"):
        raise CacheError(
            f"{where}: {type(node).__name__.lower()} at the top of a library file; it holds "
            "only step functions, each under its @step(...) decorator"
        )
    decorator = node.decorator_list[0] if len(node.decorator_list) == 1 else None
    if not (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Name)
        and decorator.func.id == "step"
        and not decorator.args
        and all(keyword.arg is not None for keyword in decorator.keywords)
    ):
        raise CacheError(
            f"{where}: a step function stands under exactly one @step(...) decorator with "
            "keyword arguments only"
        )
    return decorator


def _entry(where: str, decorator: ast.Call, code: str, validate: Validate) -> StepEntry:
    """The entry of one decorated function: its keywords' literals read by the entry schema."""
    given: dict[str, Any] = {}
    for keyword in decorator.keywords:
        name = str(keyword.arg)
        if name in given:
            raise CacheError(f"{where}: the keyword {name!r} of @step is given twice")
        try:
            given[name] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise CacheError(
                f"{where}: {name}= must be a literal (a string, number or tuple)"
            ) from None
    return entry_from(where, given, code, validate)


# --- writing ---


def render_steps(entries: Iterable[StepEntry]) -> bytes:
    """A file's bytes: its entries in one stable order, a keyword a line (a long literal
    wrapped so that no keyword's line passes ``MAX_LINE``), the code as it is."""
    parts = [HEADER + "\n"]
    for entry in sorted(entries, key=order):
        written = "".join(
            f"{INDENT}{name}={literal(value, len(INDENT) + len(name) + 1, INDENT)},\n"
            for name, value in keywords(entry)
        )
        parts.append(f"\n\n@step(\n{written})\n{entry.code}")
    return "".join(parts).encode()


def literal(value: object, column: int, indent: str) -> str:
    """``value`` as Python source that starts at ``column`` of a line indented by ``indent``:
    on that line when it fits (with its comma) within ``MAX_LINE``, else a collection an item a
    line and a string in pieces (Python joins adjacent strings), each a level deeper."""
    flat = _flat(value)
    if column + len(flat) + 1 <= MAX_LINE or not isinstance(value, (str, tuple, list, dict)):
        return flat
    inner = indent + INDENT
    if isinstance(value, str):
        lines = [f"{inner}{_flat(piece)}" for piece in _pieces(value, MAX_LINE - len(inner))]
        return "(\n" + "\n".join(lines) + f"\n{indent})"
    if isinstance(value, dict):
        items = [
            f"{inner}{_flat(key)}: {literal(item, len(inner) + len(_flat(key)) + 2, inner)},"
            for key, item in value.items()
        ]
        return "{\n" + "\n".join(items) + f"\n{indent}}}"
    opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
    items = [f"{inner}{literal(item, len(inner), inner)}," for item in value]
    return opening + "\n" + "\n".join(items) + f"\n{indent}{closing}"


def _pieces(text: str, width: int) -> list[str]:
    """``text`` cut into pieces whose literals fit ``width`` with a comma: after a space where
    one is near, else anywhere (each piece is a literal of its own, escapes whole)."""
    pieces: list[str] = []
    while text:
        end = min(len(text), width)
        while end > 1 and len(_flat(text[:end])) + 1 > width:
            end -= 1
        space = text.rfind(" ", 0, end)
        if end < len(text) and space > end // 2:
            end = space + 1
        pieces.append(text[:end])
        text = text[end:]
    return pieces


def _flat(value: object) -> str:
    """``repr``, with a string in double quotes where it holds no quote (as Python is written)."""
    if isinstance(value, str):
        return f'"{repr(value)[1:-1]}"' if "'" not in value and '"' not in value else repr(value)
    if isinstance(value, tuple):
        items = ", ".join(map(_flat, value))
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, list):
        return f"[{', '.join(map(_flat, value))}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    return repr(value)


def order(entry: StepEntry) -> tuple[object, ...]:
    pin = (entry.scenario is not None, entry.scenario or "", entry.occurrence)
    return (
        entry.sentence,
        entry.kind,
        entry.data,
        entry.feature,
        entry.values is not None,
        entry.values or (),
        *pin,
    )
