"""The shape of the package: imports run one way, the engine never imports behave, each
extension point is defined in one place, the formatter lays the code out."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = "prettyplay_behave"
ROOT = Path(__file__).resolve().parent.parent.parent / PACKAGE
MAX_FORMAT_EXEMPTIONS = 5  # tables only


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


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports; parsed once a process, when a
    test first asks (not as every worker collects)."""
    return {name: imported(name, path) for name, path in MODULES.items()}


def cycle_from(start: str) -> list[str] | None:
    """A path of imports that leads from ``start`` back to it, if any."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        current, path = stack.pop()
        for target in graph()[current]:
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_graph_sees_every_kind_of_import() -> None:
    assert f"{PACKAGE}.engine.engine" in graph()[f"{PACKAGE}.runtime"]  # at the top
    assert f"{PACKAGE}.runtime" in graph()[f"{PACKAGE}.behave.environment"]  # inside a function
    assert f"{PACKAGE}.engine.state" in graph()[f"{PACKAGE}.report.artifacts"]  # TYPE_CHECKING


def test_no_module_imports_itself_back() -> None:
    cycles = [cycle for name in graph() if (cycle := cycle_from(name))]
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
        reached = {*modules, *graph()[name]}
        assert not [m for m in reached if m.startswith(upstream)], name


def _comparisons_and_keys(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Dict):
        return [key for key in node.keys if key is not None]
    return []


def test_a_purpose_is_told_apart_only_where_it_is_defined() -> None:
    """No module but llm/purposes.py compares with a purpose by name or keys a table by one:
    what a purpose does is read from its definition, so a new purpose touches nothing else."""
    found = []
    for name, path in MODULES.items():
        if name == f"{PACKAGE}.llm.purposes":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for part in _comparisons_and_keys(node):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "Purpose"
                ):
                    found.append(f"{name}:{part.lineno}")
    assert found == []


def test_a_verdict_is_shaped_only_beside_its_reader() -> None:
    """A verdict's JSON schema is written in llm/verdicts.py, beside the reader of its fields,
    and nowhere else; the field names answers are matched against come from the schema."""
    found = [
        f"{name}:{node.lineno}"
        for name, path in MODULES.items()
        if name != f"{PACKAGE}.llm.verdicts"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in ("additionalProperties", "enum")
    ]
    assert found == []


def test_a_page_event_kind_is_named_only_in_its_table() -> None:
    """The name of a page event (``"dialog"``) is written in page_events.py alone: the policy,
    the proxy, the tabs and the code contract read it from there."""
    from prettyplay_behave.page_events import PAGE_EVENTS

    found = []
    for name, path in MODULES.items():
        if name == f"{PACKAGE}.page_events":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in PAGE_EVENTS:
                found.append(f"{name}:{node.lineno}")
    assert found == []
    contract = (ROOT.parent / "templates" / "_code_contract.j2").read_text(encoding="utf-8")
    assert not any(f'"{event}"' in contract for event in PAGE_EVENTS)


def test_the_test_state_is_written_through_its_own_methods() -> None:
    from prettyplay_behave.engine.state import TestState

    names = {field for field in TestState.__dataclass_fields__}
    found = []
    for name, path in MODULES.items():
        if name == f"{PACKAGE}.engine.state":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in ("test", "state", "run")
                    and target.attr in names
                ):
                    found.append(f"{name}:{target.lineno} {target.value.id}.{target.attr}")
    assert found == []


TEST_STATE_WRITERS = {f"{PACKAGE}.engine.cycle", f"{PACKAGE}.engine.engine", f"{PACKAGE}.runtime"}


def state_writers() -> set[str]:
    """The methods of TestState that change it: those that assign to it or add to its lists."""
    tree = ast.parse((ROOT / "engine" / "state.py").read_text(encoding="utf-8"))
    state = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TestState")
    writers = set()
    for method in state.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
            continue
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, ast.AugAssign) else []
            for target in targets:
                for part in target.elts if isinstance(target, ast.Tuple) else [target]:
                    while isinstance(part, (ast.Attribute, ast.Subscript)):
                        part = part.value
                    if isinstance(part, ast.Name) and part.id == "self":
                        writers.add(method.name)
            call = node.func if isinstance(node, ast.Call) else None
            if isinstance(call, ast.Attribute) and call.attr == "append":
                writers.add(method.name)
    return writers


def test_the_test_state_is_changed_by_two_modules_only() -> None:
    writers = state_writers()
    assert {"add_step", "met", "mark_failed", "replace_context", "conclude"} <= writers
    # a writer's name is its own in the package, so a call by that name is a call to it
    elsewhere = [
        f"{name}:{node.lineno} {node.name}"
        for name, path in MODULES.items()
        if name != f"{PACKAGE}.engine.state"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in writers
    ]
    assert elsewhere == []
    callers = {
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in writers
    }
    assert callers - {f"{PACKAGE}.engine.state"} == TEST_STATE_WRITERS


def test_the_formatter_lays_out_the_code_but_for_a_few_tables() -> None:
    exemptions = [
        f"{name}:{number}"
        for name, path in MODULES.items()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert len(exemptions) <= MAX_FORMAT_EXEMPTIONS, exemptions


def test_every_hook_event_is_called_as_its_typed_method_by_name() -> None:
    from prettyplay_behave.engine.hooks import HOOK_EVENTS

    called: set[str] = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            assert node.func.attr != "emit", f"{path.name}: an event called by its name as text"
            if node.func.attr in HOOK_EVENTS:
                assert not node.args, f"{path.name}: {node.func.attr} is called by position"
                called.add(node.func.attr)
    assert called == set(HOOK_EVENTS)


def test_step_code_is_parsed_in_one_place() -> None:
    """Only ``safety/step_code.py`` parses step code; ``engine/renames.py`` parses locator
    expressions (``mode="eval"``) and reads code through it too; ``cache/source.py`` parses a
    library file to find its entries, whose code it hands to ``step_code`` as text."""
    parsers: dict[str, int] = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = node.func
            parses = (
                isinstance(called, ast.Attribute)
                and called.attr == "parse"
                and isinstance(called.value, ast.Name)
                and called.value.id == "ast"
            )
            if parses and not any(k.arg == "mode" for k in node.keywords):
                parsers.setdefault(name, node.lineno)
    assert sorted(parsers) == [f"{PACKAGE}.cache.source", f"{PACKAGE}.safety.step_code"], parsers


FOUNDATION = {f"{PACKAGE}.{name}" for name in ("config", "errors", "vocabulary", "log_events",
              "parameters", "page_events", "context_args", "meaning", "resources")}  # fmt: skip


def test_nothing_runs_back_up_from_the_foundation() -> None:
    """The settings, the errors and the words every room uses import only each other and leaf
    modules (ones that import nothing of the package, as ``safety/origins.py``)."""
    leaves = {name for name, imports in graph().items() if not imports}
    rooms = tuple(f"{PACKAGE}.{room}." for room in ("browser", "engine", "llm", "cache",
                                                   "report", "behave", "interactive"))  # fmt: skip
    for name in FOUNDATION:
        assert graph()[name] <= FOUNDATION | leaves, (name, graph()[name] - FOUNDATION - leaves)
        assert not [m for m in graph()[name] if m.startswith(rooms)], name


def _calls_by_function(path: Path, attribute: str) -> set[str]:
    """The functions (``Class.method``) of ``path`` that call a method named ``attribute``."""
    callers: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef)):
                visit(child, f"{where}.{child.name}".lstrip("."))
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == attribute
            ):
                callers.add(where)
            visit(child, where)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return callers


def test_every_source_of_code_takes_the_one_path_to_the_library() -> None:
    """New code for a step (a rename, a heal served again, locator repair, reuse, the generate,
    heal and steer requests) is kept, and a rewrite told to the hooks, in one place:
    ``StepCycle.keep``, which ``StepCycle.tried`` and the steering gate's keeper call."""
    cycle = f"{PACKAGE}.engine.cycle"
    writers = {
        (name, caller)
        for name, path in MODULES.items()
        if name.startswith(f"{PACKAGE}.engine") and name != f"{PACKAGE}.engine.keeper"
        for caller in _calls_by_function(path, "write")
    }
    assert writers == {(cycle, "StepCycle.keep")}
    healed = {
        (name, caller)
        for name, path in MODULES.items()
        for caller in _calls_by_function(path, "on_healed")
    }
    assert healed == {(cycle, "StepCycle.keep")}
    keeps = {  # the keeper's own calls of keep are the cache's: the library written
        (name, caller)
        for name, path in MODULES.items()
        if name.startswith(f"{PACKAGE}.engine") and name != f"{PACKAGE}.engine.keeper"
        for caller in _calls_by_function(path, "keep")
    }
    assert keeps == {(cycle, "StepCycle.tried"), (f"{PACKAGE}.engine.engine", "Engine.steer.keep")}


# -- the step address ---------------------------------------------------------------------------

ADDRESS = f"{PACKAGE}.address"
EXPORT_SUPPORT = ROOT.parent / "templates" / "export" / "step_support.py"
# Where the package or the export may read text of code; the export's own modules are
# written into a project without prettyplay, and must follow the same rules.
CODE = {
    **MODULES,
    "templates.export.environment": EXPORT_SUPPORT.parent / "environment.py",
    "templates.export.step_support": EXPORT_SUPPORT,
}


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The string constants of ``tree`` (line, text) but its docstrings (where ``::`` opens a
    literal block)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_address_module_needs_the_standard_library_alone() -> None:
    """The export copies it as it is into a project where prettyplay is not installed."""
    import sys

    assert graph()[ADDRESS] == set()
    tree = ast.parse(MODULES[ADDRESS].read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    tops = {name.partition(".")[0] for name in names}
    assert tops <= set(sys.stdlib_module_names) | {"__future__"}, tops
    support = ast.parse(EXPORT_SUPPORT.read_text(encoding="utf-8"))
    assert any(
        isinstance(node, ast.ImportFrom) and node.module == "step_address" for node in support.body
    )


def test_a_test_name_is_spelt_only_by_the_address_module() -> None:
    """No code but the address module writes the ``::`` of a test's name, nor splits a name at
    it (the demo shop is an app under test, whose ``::`` is IPv6's any address)."""
    found = [
        f"{name}:{line}"
        for name, path in CODE.items()
        if name not in (ADDRESS, f"{PACKAGE}.demo.server")
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8")))
        if "::" in text
    ]
    assert found == []
    spelt = _strings(ast.parse(MODULES[ADDRESS].read_text(encoding="utf-8")))
    assert [text for _, text in spelt if "::" in text] == ["::"]


def _counts_up(node: ast.AST) -> bool:
    """``seen.get(key, 0) + 1``: one more of ``key``."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return False
    call, one = node.left, node.right
    return (
        isinstance(one, ast.Constant)
        and one.value == 1
        and isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "get"
        and len(call.args) == 2
        and isinstance(call.args[1], ast.Constant)
        and call.args[1].value == 0
    )


def test_the_occurrences_of_a_step_are_counted_only_by_the_address_module() -> None:
    """Every step's occurrence comes from ``address.Occurrences``; the elements of a page
    (``browser/change.py``) and the demo shop's cart count other things."""
    others = (f"{PACKAGE}.browser.change", f"{PACKAGE}.demo.server")
    found = {
        name
        for name, path in CODE.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _counts_up(node)
    }
    assert found == {ADDRESS, *others}


def _classes(tree: ast.Module) -> dict[str, dict[str, ast.FunctionDef]]:
    """Each class of a module with the functions it defines, by name."""
    return {
        node.name: {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _returned_class(function: ast.FunctionDef) -> str:
    """The class a property says it returns (``-> "WebStorage"``)."""
    returns = function.returns
    if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
        return returns.value
    return returns.id if isinstance(returns, ast.Name) else ""


def test_the_exports_support_module_gives_step_code_every_capability_the_policy_admits() -> None:
    """What the code policy admits on ``page``, and on what the page proxy's properties return
    (web storage, cookies, the clock, the keyboard, the mouse), exists in the export: on its
    ``StepPage`` (and the class its property returns), or on Playwright's own page, to which
    ``StepPage`` hands every other name; the names step code is provided are the support
    module's. A capability added to the policy and its proxy fails here until the export has
    it."""
    import inspect
    import typing

    from playwright.sync_api import Page

    from prettyplay_behave.safety import policy
    from prettyplay_behave.safety.proxy import PageProxy

    support = ast.parse(EXPORT_SUPPORT.read_text(encoding="utf-8"))
    classes = _classes(support)
    step_page = classes["StepPage"]
    assert "__getattr__" in step_page  # the names it does not define are Playwright's page's
    assert set(step_page) >= policy.PROXY_ONLY  # its own, whatever Playwright's page calls so
    on_page = policy.PAGE_ATTRIBUTES | policy.LISTENERS
    forwarded = [name for name in sorted(on_page) if name not in step_page]
    assert [name for name in forwarded if not hasattr(Page, name)] == []
    lists = [sorted(names) for names in policy.contract().values() if isinstance(names, list)]
    capabilities = 0
    for name in sorted(on_page):
        proxied = inspect.getattr_static(PageProxy, name, None)
        if not isinstance(proxied, property):
            continue
        proxy = typing.get_type_hints(proxied.fget)["return"]
        admitted = getattr(proxy, "_ALLOWED", None) or {
            method for method in vars(proxy) if not method.startswith("_")
        }
        assert sorted(admitted) in lists, (name, "the contract lists what its proxy admits")
        if name in step_page:
            exported = set(classes[_returned_class(step_page[name])])
        else:
            playwright_class = typing.get_type_hints(inspect.getattr_static(Page, name).fget)
            exported = set(dir(playwright_class["return"]))
        assert sorted(admitted - exported) == [], f"page.{name} in the export"
        capabilities += 1
    assert capabilities >= 6  # the storages, the cookies, the clock, the keyboard, the mouse
    exported_names = next(
        node.value
        for node in support.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    assert isinstance(exported_names, ast.List)
    provided = {e.value for e in exported_names.elts if isinstance(e, ast.Constant)}
    assert policy.PROVIDED_NAMES - {"page"} <= provided  # page: the step's argument
