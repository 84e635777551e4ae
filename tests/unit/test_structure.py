"""The shape of the package: imports run one way, the engine never imports behave, functions
stay short."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "prettyplay_behave"
ROOT = Path(__file__).resolve().parent.parent.parent / PACKAGE
MAX_FUNCTION_LINES = 50


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported(name: str, path: Path) -> set[str]:
    """Every package module ``name`` imports, anywhere in it: at the top, under TYPE_CHECKING
    or inside a function. ``from x import y`` counts as ``x.y`` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def cycle_from(start: str) -> list[str] | None:
    """A path of imports that leads from ``start`` back to it, if any."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        current, path = stack.pop()
        for target in GRAPH[current]:
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_graph_sees_every_kind_of_import() -> None:
    assert f"{PACKAGE}.engine.cycle" in GRAPH[f"{PACKAGE}.runtime"]  # at the top
    assert f"{PACKAGE}.runtime" in GRAPH[f"{PACKAGE}.behave.hooks"]  # inside a function
    assert f"{PACKAGE}.engine.state" in GRAPH[f"{PACKAGE}.report.artifacts"]  # TYPE_CHECKING


def test_no_module_imports_itself_back() -> None:
    cycles = [cycle for name in GRAPH if (cycle := cycle_from(name))]
    assert cycles == [], "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_engine_never_imports_behave_nor_what_lies_upstream() -> None:
    upstream = ("behave", f"{PACKAGE}.behave", f"{PACKAGE}.authoring", f"{PACKAGE}.runtime",
                f"{PACKAGE}.interactive", f"{PACKAGE}.report", f"{PACKAGE}.cli")  # fmt: skip
    for name, path in MODULES.items():
        if not name.startswith(f"{PACKAGE}.engine"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = [alias.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                   for alias in n.names]  # fmt: skip
        modules += [n.module for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) and n.module and not n.level]  # fmt: skip
        reached = {*modules, *GRAPH[name]}
        assert not [m for m in reached if m.startswith(upstream)], name


def test_functions_are_short() -> None:
    long = []
    for name, path in MODULES.items():
        if name.startswith(f"{PACKAGE}.demo"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []
