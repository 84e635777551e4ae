"""The code policy: a static allowlist that every piece of step code must pass.

Step code is exactly one ``def step(page) -> None:`` written against Playwright's sync API.
It sees ``page``, ``expect``, ``re``, ``secret``, its own locals and a few harmless
builtins, and may only touch the attribute names listed here. The allowlists are the single
source of truth: the runtime proxies in :mod:`.proxy` and the namespace built in
:mod:`.sandbox` use the same frozensets.
"""

from __future__ import annotations

import ast
import enum
import re

from ..errors import CodePolicyError
from ..page_events import PAGE_EVENTS, listener_shape
from ..vocabulary import words
from .scenario_memory import NAME

MAX_CODE_CHARS = 20_000
MAX_CODE_LINES = 200
MAX_LOOP_DEPTH = 2
MAX_EXPR_DEPTH = 60
# A for loop may run at most this many times; the sandbox enforces it at run time.
MAX_LOOP_ITEMS = 1_000

PROVIDED_NAMES = frozenset({"page", "expect", "re", "secret", "remember", "recall"})

BUILTIN_NAMES = words(
    "abs all any bool dict enumerate float int len list max min range round sorted str"
    " sum tuple zip"
)

# Refused outright, named so that the error message is explicit about them.
REFUSED_NAMES = words(
    "__import__ breakpoint compile delattr dir eval exec format getattr globals hasattr"
    " input iter locals next object open print setattr super type vars"
)

_GET_BY = words(
    "get_by_alt_text get_by_label get_by_placeholder get_by_role get_by_test_id"
    " get_by_text get_by_title"
)

LOCATING_METHODS = _GET_BY | {"locator", "frame_locator"}

# Actions and reads that Page offers both on itself (with a selector) and on Locator.
_ACTIONS = words(
    "check click dblclick fill focus get_attribute hover inner_text input_value"
    " is_checked is_disabled is_editable is_enabled is_hidden is_visible press"
    " select_option set_checked tap text_content type uncheck"
)

# What the page proxy offers that Playwright's Page does not: moving between the test's tabs,
# the web storage and the cookies of the page's own origin.
PROXY_ONLY = words("cookies local_storage session_storage switch_to_tab")

# page.local_storage and page.session_storage: strings by key, with JSON helpers.
STORAGE_ATTRIBUTES = words("clear get get_json items keys remove set set_json")
# page.cookies: the cookies of the page's origin, by name.
COOKIE_ATTRIBUTES = words("get names")
# page.clock: Playwright's fake clock.
CLOCK_ATTRIBUTES = words(
    "fast_forward install pause_at resume run_for set_fixed_time set_system_time"
)

PAGE_ATTRIBUTES = (
    LOCATING_METHODS
    | _ACTIONS
    | PROXY_ONLY
    | words(
        "clock content drag_and_drop expect_download expect_popup go_back go_forward goto"
        " keyboard mouse reload set_input_files title url wait_for_load_state wait_for_url"
    )
)

LOCATOR_ATTRIBUTES = (
    LOCATING_METHODS
    | _ACTIONS
    | words(
        "all all_inner_texts all_text_contents and_ blur clear content_frame count drag_to"
        " filter first last nth or_ press_sequentially scroll_into_view_if_needed"
        " set_input_files wait_for"
    )
)

FRAME_LOCATOR_ATTRIBUTES = LOCATING_METHODS | {"first", "last", "nth", "owner"}

KEYBOARD_ATTRIBUTES = frozenset({"down", "insert_text", "press", "type", "up"})

MOUSE_ATTRIBUTES = frozenset({"click", "dblclick", "down", "move", "up", "wheel"})

_MATCHERS = words(
    "to_be_attached to_be_checked to_be_disabled to_be_editable to_be_empty to_be_enabled"
    " to_be_focused to_be_hidden to_be_in_viewport to_be_visible to_contain_text"
    " to_have_accessible_name to_have_attribute to_have_class to_have_count to_have_id"
    " to_have_role to_have_text to_have_title to_have_url to_have_value to_have_values"
)

EXPECT_MATCHERS = _MATCHERS | {f"not_{name}" for name in _MATCHERS}

RE_NAMES = words(
    "DOTALL I IGNORECASE M MULTILINE S compile escape findall fullmatch match search split sub"
)

# Methods of plain values: str, list, dict, and re's Pattern and Match.
VALUE_METHODS = words(
    "append casefold endswith get group groups isdigit items join keys lower lstrip"
    " replace rsplit rstrip split splitlines startswith strip upper values"
)

# What a `with page.expect_popup() as popup_info` gives: `popup_info.value`, the new page; a
# download's `download_info.value.suggested_filename`.
EVENT_INFO_ATTRIBUTES = frozenset({"value"})
DOWNLOAD_ATTRIBUTES = frozenset({"suggested_filename"})

ALLOWED_ATTRIBUTES = (
    PAGE_ATTRIBUTES
    | EVENT_INFO_ATTRIBUTES
    | DOWNLOAD_ATTRIBUTES
    | LOCATOR_ATTRIBUTES
    | FRAME_LOCATOR_ATTRIBUTES
    | KEYBOARD_ATTRIBUTES
    | MOUSE_ATTRIBUTES
    | STORAGE_ATTRIBUTES
    | COOKIE_ATTRIBUTES
    | CLOCK_ATTRIBUTES
    | EXPECT_MATCHERS
    | RE_NAMES
    | VALUE_METHODS
)

# What only reads the page (or values): a step made of these alone sets nothing off that could
# still be on its way when it ends, such as a navigation or a window. A step that also
# navigates, and whose navigation Playwright waits for, leaves only the browser's own events.
READ_ONLY_ATTRIBUTES = (
    LOCATING_METHODS
    | FRAME_LOCATOR_ATTRIBUTES
    | EXPECT_MATCHERS
    | RE_NAMES
    | VALUE_METHODS
    | EVENT_INFO_ATTRIBUTES
    | DOWNLOAD_ATTRIBUTES
    | words(
        "all all_inner_texts all_text_contents and_ content content_frame cookies count filter"
        " first get_attribute get_json inner_text input_value is_checked is_disabled"
        " is_editable is_enabled is_hidden is_visible last local_storage names nth or_"
        " session_storage text_content title url wait_for wait_for_load_state wait_for_url"
    )
)
NAVIGATING_ATTRIBUTES = words("go_back go_forward goto reload")

# Never allowed; listed so that the refusal names them and a test can pin them down.
REFUSED_ATTRIBUTES = words(
    "add_cookies add_init_script add_script_tag add_style_tag attrgetter context"
    " dispatch_event element_handle element_handles evaluate evaluate_all evaluate_handle"
    " expect_console_message expect_event expect_file_chooser expect_navigation"
    " expect_request expect_response expose_binding expose_function f_back f_globals"
    " f_locals format format_map frame frames gi_frame main_frame mro obj on once opener"
    " page pdf request route route_from_har save_as screenshot set_content storage_state"
    " subclasses unroute video wait_for_event wait_for_function"
)

# What to use instead of a refused name, for the refusal and the code contract.
ALTERNATIVES: dict[str, str] = {
    "evaluate": (
        "read with locators (inner_text, get_attribute, input_value), assert with expect; web "
        "storage through page.local_storage or page.session_storage, the time through page.clock"
    ),
    "evaluate_all": "use locator.all_inner_texts() or all_text_contents()",
    "evaluate_handle": "use a locator",
    "element_handle": "use a locator",
    "element_handles": "use locator.all()",
    "wait_for_function": "use expect(...), which retries until its condition holds",
    "wait_for_timeout": "use expect(...), which retries until its condition holds",
    "wait_for_selector": "use expect(locator).to_be_visible()",
    "expect_navigation": "use page.wait_for_url(...) or expect(page).to_have_url(...)",
    "expect_event": "use with page.expect_popup() or page.expect_download()",
    "wait_for_event": "use with page.expect_popup() or page.expect_download()",
    "frame": "use page.frame_locator(...)",
    "frames": "use page.frame_locator(...)",
    "main_frame": "use page itself",
    "dispatch_event": "use click, press or check",
    "set_content": "use page.goto(a path of the app)",
    "add_cookies": "use the app's own pages (log in through its form); read with page.cookies",
    "storage_state": "use page.local_storage, page.session_storage or page.cookies",
    "screenshot": "leave it out: prettyplay keeps screenshots itself (report_dir)",
    "to_have_js_property": "use to_have_attribute, to_have_value or to_have_class",
    "to_have_css": "use to_have_class or to_be_visible",
    "print": "put the text in an assert's message",
    "open": "use page.set_input_files(selector, name) for a file of the files folder",
}

# Calls that build a fresh, finite list: safe to loop over.
LIST_METHODS = words(
    "all all_inner_texts all_text_contents findall items keys rsplit split splitlines values"
)

_LOOP_WRAPPERS = frozenset({"enumerate", "list", "sorted", "tuple", "zip"})

# What reads text back from the page: refused in a step that types a secret.
READ_BACK = words(
    "all_inner_texts all_text_contents content cookies get_attribute inner_text input_value"
    " local_storage session_storage text_content title url"
)

# The only calls a secret may be handed to.
TYPING_METHODS = frozenset({"fill", "insert_text", "press_sequentially", "type"})

NAVIGATION_SCHEMES = frozenset({"http", "https"})

_STATEMENTS = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.If,
    ast.For,
    ast.Return,
    ast.Pass,
    ast.Assert,
    ast.Break,
    ast.Continue,
    ast.With,
)

# The one `with` the policy admits: waiting for what an action inside it starts.
WAITERS = frozenset({"expect_popup", "expect_download"})
# The one `lambda` and the one `on`/`once`: a handler of a page event (page_events.py), such as
# `lambda dialog: dialog.accept()`.
LISTENERS = frozenset({"on", "once"})

_EXPRESSIONS = (
    ast.Constant,
    ast.Name,
    ast.Attribute,
    ast.Call,
    ast.Subscript,
    ast.Slice,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.JoinedStr,
    ast.FormattedValue,
)

# Huge results from tiny code (10 ** 10 ** 10, 1 << 10 ** 12) would hang the run.
_REFUSED_OPERATORS: dict[type[ast.AST], str] = {
    ast.Pow: "the ** operator",
    ast.LShift: "the << operator",
}

_CONSTRUCTS = {
    "Expr": "expression statement",
    "Assign": "assignment",
    "AugAssign": "augmented assignment (+=)",
    "AnnAssign": "annotated assignment",
    "If": "if statement",
    "For": "for loop",
    "Return": "return",
    "Pass": "pass",
    "Assert": "assert",
    "Break": "break",
    "Continue": "continue",
    "Attribute": "attribute",
    "Subscript": "subscript",
    "Call": "call",
    "Import": "import statement",
    "ImportFrom": "from-import statement",
    "While": "while loop",
    "Try": "try statement",
    "TryStar": "try/except* statement",
    "With": "with statement",
    "AsyncWith": "async with statement",
    "AsyncFor": "async for loop",
    "FunctionDef": "nested function definition",
    "AsyncFunctionDef": "async function definition",
    "ClassDef": "class definition",
    "Global": "global statement",
    "Nonlocal": "nonlocal statement",
    "Delete": "del statement",
    "Raise": "raise statement (use assert)",
    "Match": "match statement",
    "Lambda": "lambda",
    "ListComp": "list comprehension",
    "SetComp": "set comprehension",
    "DictComp": "dict comprehension",
    "GeneratorExp": "generator expression",
    "Await": "await expression",
    "Yield": "yield expression",
    "YieldFrom": "yield from expression",
    "NamedExpr": "assignment expression (:=)",
    "Starred": "starred expression (*)",
}

_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")
# Browsers drop these when they parse a URL, so " java\tscript:" is still javascript:.
_URL_IGNORED = re.compile(r"[\t\n\r]")
_URL_LEADING = "".join(map(chr, range(33)))  # C0 controls and space


def url_scheme(url: str) -> str | None:
    """The scheme a browser would read from ``url``, lower case; None for a relative URL."""
    cleaned = _URL_IGNORED.sub("", url).lstrip(_URL_LEADING)
    found = _SCHEME.match(cleaned)
    return found.group(1).lower() if found else None


def navigation_problem(url: str) -> str | None:
    """Why navigating to ``url`` is refused, or None when it is http(s) or relative."""
    scheme = url_scheme(url)
    if scheme is None or scheme in NAVIGATION_SCHEMES:
        return None
    return f"navigating to a {scheme}: URL is not allowed (only http, https or a relative path)"


def check_tree(tree: ast.Module) -> None:
    """Refuse parsed step code with a CodePolicyError unless it is an allowed step function
    (:func:`.step_code.check_code` checks a text: its size, its syntax, then this)."""
    _Checker().module(tree)


class Reach(enum.IntEnum):
    """How far what a step's code did may still be on its way once the code returns."""

    READS = 0  # it only read the page: nothing it did is in flight
    NAVIGATES = 1  # it navigated, and Playwright waited for the document: the browser's events
    ACTS = 2  # it acted in the page (input, listeners): whatever the page's scripts set off


def _instead(name: str) -> str:
    """What to use instead of the refused ``name``, as the end of its refusal."""
    return f"; instead, {ALTERNATIVES[name]}" if name in ALTERNATIVES else ""


def contract() -> dict[str, object]:
    """What the code contract (``_code_contract.j2``) lists: exactly what this policy admits."""
    statements = [_CONSTRUCTS.get(t.__name__, t.__name__.lower()) for t in _STATEMENTS]
    return {
        "provided": sorted(PROVIDED_NAMES),
        "builtins": sorted(BUILTIN_NAMES),
        "statements": statements,
        "page": sorted(PAGE_ATTRIBUTES),
        "locator": sorted(LOCATOR_ATTRIBUTES),
        "frame_locator": sorted(FRAME_LOCATOR_ATTRIBUTES),
        "keyboard": sorted(KEYBOARD_ATTRIBUTES),
        "mouse": sorted(MOUSE_ATTRIBUTES),
        "storage": sorted(STORAGE_ATTRIBUTES),
        "cookies": sorted(COOKIE_ATTRIBUTES),
        "clock": sorted(CLOCK_ATTRIBUTES),
        "matchers": sorted(_MATCHERS),
        "re": sorted(RE_NAMES),
        "value_methods": sorted(VALUE_METHODS),
        "waiters": sorted(WAITERS),
        "max_loop_depth": MAX_LOOP_DEPTH,
        "max_loop_items": MAX_LOOP_ITEMS,
        "max_lines": MAX_CODE_LINES,
        "refused": {
            **{_CONSTRUCTS[name]: "" for name in ("While", "Try", "Lambda", "ListComp", "Global")},
            "raise statement": "use assert",
            **ALTERNATIVES,
        },
    }


def _describe(node: ast.AST) -> str:
    name = type(node).__name__
    return _CONSTRUCTS.get(name, name)


def _refuse(problem: str, node: ast.AST) -> CodePolicyError:
    return CodePolicyError(problem, getattr(node, "lineno", None))


class _Checker:
    """One walk over the tree; raises on the first construct outside the allowlist."""

    def __init__(self) -> None:
        self.locals: set[str] = set()
        self.secret_calls: set[int] = set()
        self.types_secrets = False

    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if not (isinstance(stmt, ast.FunctionDef) and stmt.name == "step"):
                raise _refuse(
                    f"{_describe(stmt)} is not allowed at module level; "
                    "step code is exactly one `def step(page)`",
                    stmt,
                )
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
            raise CodePolicyError("step code must define exactly one function `def step(page)`")
        self.function(tree.body[0])

    def function(self, fn: ast.FunctionDef) -> None:
        args = fn.args
        if fn.decorator_list:
            raise _refuse("decorators are not allowed on step()", fn.decorator_list[0])
        names = [a.arg for a in args.args]
        if (
            names[:1] != ["page"]
            or args.posonlyargs
            or args.kwonlyargs
            or args.vararg
            or args.kwarg
            or args.defaults
        ):
            raise _refuse(
                "step() must take `page` first, then the step's parameters if it has any "
                "(def step(page, item)), with no defaults",
                fn,
            )
        for arg in args.args:
            if arg.annotation is not None:
                raise _refuse(f"the parameter {arg.arg!r} of step() must not be annotated", fn)
        for name in names[1:]:
            if name in PROVIDED_NAMES | BUILTIN_NAMES or name.startswith("_"):
                raise _refuse(f"a parameter of step() may not be named {name!r}", fn)
        if len(set(names)) != len(names):
            raise _refuse("the parameters of step() must have names of their own", fn)
        if fn.returns is not None and not _is_none(fn.returns):
            raise _refuse("step() may only be annotated `-> None`", fn)
        self.locals = self._assigned_names(fn) | set(names[1:])
        self.secret_calls = self._typing_secret_calls(fn)
        self.types_secrets = any(_is_call_to(node, "secret") for node in ast.walk(fn))
        self.block(fn.body, loop_depth=0)

    @staticmethod
    def _assigned_names(fn: ast.FunctionDef) -> set[str]:
        return {
            node.id
            for node in ast.walk(fn)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        }

    @staticmethod
    def _typing_secret_calls(fn: ast.FunctionDef) -> set[int]:
        # The typed text is the last positional argument, or the value=/text= keyword.
        allowed: set[int] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and _attr_name(node.func) in TYPING_METHODS:
                typed = [k.value for k in node.keywords if k.arg in ("value", "text")]
                typed += node.args[-1:]
                allowed.update(id(arg) for arg in typed if _is_call_to(arg, "secret"))
        return allowed

    # -- statements ------------------------------------------------------------------------

    def block(self, body: list[ast.stmt], loop_depth: int) -> None:
        for stmt in body:
            self.statement(stmt, loop_depth)

    def statement(self, stmt: ast.stmt, loop_depth: int) -> None:
        if not isinstance(stmt, _STATEMENTS):
            raise _refuse(f"{_describe(stmt)} is not allowed in step code", stmt)
        if isinstance(stmt, ast.Expr):
            self.expr(stmt.value)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.target(target)
            self.expr(stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise _refuse("augmented assignment (+= and the like) only to a plain name", stmt)
            self.target(stmt.target)
            self.operator(stmt.op, stmt)
            self.expr(stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if not isinstance(stmt.target, ast.Name):
                raise _refuse("only a plain local name may be annotated", stmt)
            self.target(stmt.target)
            self.expr(stmt.annotation)
            if stmt.value is not None:
                self.expr(stmt.value)
        elif isinstance(stmt, ast.If):
            self.expr(stmt.test)
            self.block(stmt.body, loop_depth)
            self.block(stmt.orelse, loop_depth)
        elif isinstance(stmt, ast.For):
            self.for_loop(stmt, loop_depth)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None and not _is_none(stmt.value):
                raise _refuse("step() may only `return` (it returns None)", stmt)
        elif isinstance(stmt, ast.Assert):
            self.expr(stmt.test)
            if stmt.msg is not None:
                self.expr(stmt.msg)
        elif isinstance(stmt, ast.With):
            self.waiter(stmt, loop_depth)

    def waiter(self, stmt: ast.With, loop_depth: int) -> None:
        """``with page.expect_popup() as popup_info:`` (or ``expect_download``), nothing else."""
        shape = (
            "the only with statement allowed is `with page.expect_popup() as popup_info:` "
            "(or `page.expect_download() as download_info`), around the action that opens it"
        )
        if len(stmt.items) != 1:
            raise _refuse(shape, stmt)
        item = stmt.items[0]
        call, name = item.context_expr, item.optional_vars
        if not (isinstance(call, ast.Call) and _attr_name(call.func) in WAITERS):
            raise _refuse(shape, stmt)
        if call.args or any(k.arg != "timeout" for k in call.keywords):
            raise _refuse(f"{_attr_name(call.func)}() takes only a timeout", stmt)
        if not isinstance(name, ast.Name):
            raise _refuse(shape, stmt)
        self.expr(call)
        self.target(name)
        self.block(stmt.body, loop_depth)

    def for_loop(self, stmt: ast.For, loop_depth: int) -> None:
        if loop_depth >= MAX_LOOP_DEPTH:
            raise _refuse(f"for loops nested deeper than {MAX_LOOP_DEPTH} are not allowed", stmt)
        self.target(stmt.target, loop=True)
        self.expr(stmt.iter)
        if not self._bounded(stmt.iter):
            raise _refuse(
                "a for loop may only iterate over range(...), a list or tuple literal, a local, "
                "a list-returning call such as locator.all(), or enumerate/zip/sorted of those",
                stmt,
            )
        self.block(stmt.body, loop_depth + 1)
        self.block(stmt.orelse, loop_depth)

    def _bounded(self, node: ast.expr) -> bool:
        if isinstance(node, (ast.List, ast.Tuple)):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.locals
        if not isinstance(node, ast.Call):
            return False
        if _attr_name(node.func) in LIST_METHODS:
            return True
        if isinstance(node.func, ast.Name):
            if node.func.id == "range":
                return True
            if node.func.id in _LOOP_WRAPPERS:
                return bool(node.args) and all(self._bounded(a) for a in node.args)
        return False

    def target(self, node: ast.expr, loop: bool = False) -> None:
        if isinstance(node, ast.Name):
            if node.id in PROVIDED_NAMES | BUILTIN_NAMES:
                raise _refuse(f"assigning to {node.id!r} is not allowed", node)
            self.name(node.id, node)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                self.target(element, loop)
        elif isinstance(node, ast.Subscript) and not loop:
            self.expr(node.value)
            self.expr(node.slice)
        else:
            raise _refuse(f"assignment target ({_describe(node)}) is not allowed", node)

    # -- expressions -----------------------------------------------------------------------

    def expr(self, node: ast.AST, depth: int = 0) -> None:
        if depth > MAX_EXPR_DEPTH:
            raise _refuse("expression is nested too deeply", node)
        if not isinstance(node, _EXPRESSIONS):
            raise _refuse(f"{_describe(node)} is not allowed in step code", node)
        if isinstance(node, ast.Call):
            self.call(node, depth)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr_context):
                continue
            if isinstance(child, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
                self.operator(child, node)
                continue
            self.expr(child, depth + 1)
        if isinstance(node, ast.Name):
            self.name(node.id, node)
        elif isinstance(node, ast.Attribute):
            self.attribute(node.attr, node)

    def operator(self, op: ast.AST, node: ast.AST) -> None:
        refused = _REFUSED_OPERATORS.get(type(op))
        if refused:
            raise _refuse(f"{refused} is not allowed in step code", node)

    def name(self, name: str, node: ast.AST) -> None:
        if name.startswith("_"):
            raise _refuse(
                f"name {name!r} is not allowed (names starting with '_' are refused)", node
            )
        if name in REFUSED_NAMES:
            raise _refuse(f"name {name!r} is not allowed in step code{_instead(name)}", node)
        if name == "secret":
            raise _refuse(self._secret_usage, node)
        if name not in PROVIDED_NAMES | BUILTIN_NAMES and name not in self.locals:
            raise _refuse(
                f"name {name!r} is not allowed (only locals, page, expect, re, secret, "
                "remember, recall and a few builtins)",
                node,
            )

    def attribute(self, attr: str, node: ast.AST) -> None:
        if attr.startswith("_"):
            raise _refuse(
                f"attribute {attr!r} is not allowed (names starting with '_' are refused)", node
            )
        if attr not in ALLOWED_ATTRIBUTES:
            raise _refuse(f"attribute {attr!r} is not allowed in step code{_instead(attr)}", node)
        if self.types_secrets and attr in READ_BACK:
            raise _refuse(
                f"a step that types a secret cannot read the page back ({attr!r}): what it "
                "reads could carry the secret; check the page in a step of its own",
                node,
            )

    def memory_call(self, node: ast.Call) -> None:
        """``remember("name", value)`` and ``recall("name")``: the name written out, as a few
        words (see :mod:`.scenario_memory`), so a reviewer reads what a step keeps."""
        assert isinstance(node.func, ast.Name)
        wanted = 2 if node.func.id == "remember" else 1
        first = node.args[0] if node.args else None
        named = (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and NAME.fullmatch(first.value) is not None
        )
        if len(node.args) != wanted or node.keywords or not named:
            usage = 'remember("name", value)' if wanted == 2 else 'recall("name")'
            raise _refuse(
                f"{node.func.id} may only be called as {usage}, the name a string of a few words "
                "(letters, digits, spaces, '_', '-', '.')",
                node,
            )

    _secret_usage = (
        'secret may only be called as secret("NAME"), as the text given to '
        + "/".join(sorted(TYPING_METHODS))
        + "(...)"
    )

    def call(self, node: ast.Call, depth: int) -> None:
        func = node.func
        if _attr_name(func) in LISTENERS:
            self.listener(node)
            return
        if _is_call_to(node, "remember") or _is_call_to(node, "recall"):
            self.memory_call(node)
        if _is_call_to(node, "secret"):
            valid = (
                len(node.args) == 1
                and not node.keywords
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            )
            if id(node) not in self.secret_calls or not valid:
                raise _refuse(self._secret_usage, node)
            return
        self.expr(func, depth + 1)
        if not isinstance(func, (ast.Name, ast.Attribute)):
            raise _refuse(f"calling the result of a {_describe(func)} is not allowed", node)
        for arg in node.args:
            self.expr(arg, depth + 1)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise _refuse("** unpacking in a call is not allowed", node)
            self.expr(keyword.value, depth + 1)
        if _attr_name(func) == "goto":
            self.goto_url(node)
        if _attr_name(func) == "set_input_files":
            self.upload_names(node)

    def listener(self, node: ast.Call) -> None:
        """``page.once("dialog", lambda dialog: dialog.accept())``: an event of the table of
        page events and a one-parameter lambda that calls one of its answers, with literal
        arguments only."""
        shape = listener_shape()
        assert isinstance(node.func, ast.Attribute)
        handler = node.args[1] if len(node.args) == 2 else None
        first = node.args[0] if node.args else None
        event = None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            event = PAGE_EVENTS.get(first.value)
        if node.keywords or event is None or not isinstance(handler, ast.Lambda):
            raise _refuse(shape, node)
        params = handler.args
        if (
            len(params.args) != 1
            or params.posonlyargs
            or params.kwonlyargs
            or params.vararg
            or params.kwarg
            or params.defaults
        ):
            raise _refuse(shape, node)
        param, body = params.args[0].arg, handler.body
        if param in PROVIDED_NAMES | BUILTIN_NAMES or param.startswith("_"):
            raise _refuse(f"the {event.name} handler's parameter may not be named {param!r}", node)
        answers = (
            isinstance(body, ast.Call)
            and isinstance(body.func, ast.Attribute)
            and isinstance(body.func.value, ast.Name)
            and body.func.value.id == param
            and body.func.attr in event.answers
            and not body.keywords
            and len(body.args) <= event.answers[body.func.attr]
            and all(_is_constant(arg) for arg in body.args)
        )
        if not answers:
            raise _refuse(shape, node)
        self.expr(node.func.value)

    @staticmethod
    def upload_names(node: ast.Call) -> None:
        """Literal upload names: relative to files_dir, never absolute, never out of it."""
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for item in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                if isinstance(item, ast.Dict):
                    raise _refuse(
                        "set_input_files takes file names (in files_dir), no contents", node
                    )
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    problem = upload_problem(item.value)
                    if problem:
                        raise _refuse(f"set_input_files: {problem}", node)

    @staticmethod
    def goto_url(node: ast.Call) -> None:
        url = node.args[0] if node.args else None
        for keyword in node.keywords:
            if keyword.arg == "url":
                url = keyword.value
        if isinstance(url, ast.JoinedStr) and url.values:
            url = url.values[0]  # a leading literal part still fixes the scheme
        if isinstance(url, ast.Constant) and isinstance(url.value, str):
            problem = navigation_problem(url.value)
            if problem:
                raise _refuse(f"page.goto: {problem}", node)


def upload_problem(name: str) -> str | None:
    """Why an upload name is refused, or None: it must name a file inside files_dir."""
    if name.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", name):
        return f"{name!r} is an absolute path; name a file relative to files_dir"
    if ".." in re.split(r"[\\/]", name):
        return f"{name!r} leaves files_dir"
    return None


def _is_constant(node: ast.AST, value: object = None) -> bool:
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    return value is None or node.value == value


def _attr_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
