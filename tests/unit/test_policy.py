"""The code policy: every known escape is refused, realistic steps pass."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import (
    FrameLocator,
    Keyboard,
    Locator,
    LocatorAssertions,
    Mouse,
    Page,
    PageAssertions,
)

from prettyplay_behave.errors import CodePolicyError
from prettyplay_behave.safety import policy
from prettyplay_behave.safety.policy import navigation_problem, url_scheme
from prettyplay_behave.safety.proxy import PageProxy
from prettyplay_behave.safety.step_code import check_code, step_code
from tests.escapes import ESCAPES
from tests.support.code import step

# What the refusal of each escape must name (a regular expression).
REFUSALS: dict[str, str] = {
    "import_os": r"import statement",
    "import_os_module_level": r"import statement .*module level",
    "from_os_import_system": r"from-import",
    "dunder_import": r"name '__import__' is not allowed \(names starting with '_' are refused\)",
    "subclasses_walk": r"attribute '__class__' is not allowed \(names starting with '_'",
    "private_proxy_target": r"attribute '_target' is not allowed \(names starting with '_'",
    "getattr_dunder": r"name 'getattr' is not allowed in step code",
    "getattr_chr_join": r"'getattr'",
    "str_format_field": r"'format'",
    "str_format_unbound": r"'format'",
    "format_map": r"'format_map'",
    "format_builtin": r"'format'",
    "operator_attrgetter": r"'operator'",
    "mro_walk": r"'mro'",
    "generator_frame": r"generator expression",
    "frame_via_call_chain": r"'gi_frame'",
    "attribute_error_obj": r"try statement",
    "try_star": r"try/except\*|syntax error",  # except* is a syntax error before 3.11
    "lambda": r"lambda",
    "list_comprehension_scope": r"list comprehension",
    "while_true": r"while loop",
    "nested_def": r"nested function definition",
    "class_def": r"class definition",
    "with_statement": r"the only with statement allowed is `with page.expect_popup\(\)",
    "global_statement": r"global statement",
    "walrus": r":=",
    "starred_call": r"starred expression",
    "double_starred_call": r"\*\* unpacking",
    "raise_statement": r"raise statement",
    "del_statement": r"del statement",
    "assign_attribute": r"assignment target \(attribute\)",
    "recursion": r"'step'",
    "huge_power": r"\*\* operator",
    "nested_loops": r"nested deeper",
    "async_step": r"async function",
    "decorated_step": r"decorators",
    "default_argument": r"with no defaults",
    "too_long": r"too long",
    "globals": r"name 'globals' is not allowed in step code",
    "eval": r"name 'eval' is not allowed in step code",
    "exec": r"name 'exec' is not allowed in step code",
    "compile": r"name 'compile' is not allowed in step code",
    "open": r"name 'open' is not allowed in step code",
    "vars": r"name 'vars' is not allowed in step code",
    "type": r"name 'type' is not allowed in step code",
    "breakpoint": r"name 'breakpoint' is not allowed in step code",
    "print": r"name 'print' is not allowed in step code",
    "goto_file": r"file: URL",
    "goto_file_fstring": r"file: URL",
    "goto_chrome": r"chrome: URL",
    "goto_data": r"data: URL",
    "goto_javascript": r"javascript: URL",
    "evaluate": r"'evaluate'",
    "evaluate_handle": r"'evaluate_handle'",
    "locator_evaluate_all": r"'evaluate_all'",
    "set_input_files": r"'/etc/passwd' is an absolute path",
    "screenshot": r"'screenshot'",
    "pdf": r"'pdf'",
    "context_cookies": r"'context'",
    "request_get": r"'request'",
    "route": r"'route'",
    "expose_function": r"'expose_function'",
    "add_init_script": r"'add_init_script'",
    "event_listener": r"the only listener allowed is page.on\(\"dialog\"",
    "expect_navigation": r"'expect_navigation'",
    "main_frame": r"'main_frame'",
    "set_content": r"'set_content'",
    "locator_page": r"'page'",
    "secret_into_local": r"secret may only",
    "secret_into_expect": r"secret may only",
    "secret_as_selector": r"secret may only",
    "secret_in_url": r"secret may only",
}

# Refusals that concern the code as a whole rather than one line.
WHOLE_CODE = {"too_long"}


GOOD_STEPS: dict[str, str] = {
    "goto_relative": step('page.goto("/cart")'),
    "goto_absolute": step('page.goto("https://shop.example.test/cart", wait_until="load")'),
    "goto_fstring": step('path = "cart"\npage.goto(f"/{path}")'),
    "click_role": step('page.get_by_role("button", name="Checkout").click()'),
    "fill": step('page.get_by_label("Email").fill("ada@example.test")'),
    "expect_regex": step(
        r'expect(page.get_by_test_id("total")).to_have_text(re.compile(r"\$\d+\.\d{2}"))'
    ),
    "expect_page": step('expect(page).to_have_url(re.compile(".*/cart$"))\n'),
    "expect_not": step('expect(page.get_by_text("Loading")).not_to_be_visible(timeout=5000)'),
    "range_loop": step(
        """
        for i in range(3):
            page.get_by_role("button", name="Add").click()
        """
    ),
    "secret_fill": step('page.get_by_label("Password").fill(secret("PASSWORD"))'),
    "secret_keyword": step('page.keyboard.type(text=secret("PIN"))'),
    "secret_page_fill": step('page.fill("#password", secret("PASSWORD"))'),
    "secret_typed_slowly": step(
        'page.get_by_label("PIN").press_sequentially(secret("PIN"), delay=50)'
    ),
    "locals_and_assert": step(
        """
        row = page.get_by_role("row").filter(has_text="Apples")
        row.get_by_role("button", name="Remove").click()
        count = row.count()
        assert count == 0, f"expected no row, found {count}"
        """
    ),
    "docstring_annotation_return": (
        'def step(page) -> None:\n    """Open the cart."""\n    page.goto("/cart")\n    return\n'
    ),
    "loop_over_all": step(
        """
        for item in page.get_by_role("listitem").all():
            if "sale" in item.inner_text().lower():
                item.click()
                break
        else:
            pass
        """
    ),
    "loop_over_local": step(
        """
        rows = page.locator("tr").all()
        for index, row in enumerate(rows):
            cells = row.locator("td").all_inner_texts()
            for cell in cells:
                assert cell.strip(), f"row {index} has an empty cell"
        """
    ),
    "loop_over_literal": step(
        """
        for label in ["Name", "Street", "City"]:
            expect(page.get_by_label(label)).to_be_visible()
        """
    ),
    "keyboard_mouse": step(
        """
        page.keyboard.press("Control+A")
        page.mouse.wheel(0, 400)
        page.mouse.click(10, 20)
        """
    ),
    "frames": step('page.frame_locator("#payment").get_by_label("Card").fill("4242")'),
    "formatting": step(
        """
        price: float = 0.0
        price += float(page.get_by_test_id("price").inner_text().strip("$"))
        label = f"{price:.2f} EUR"
        expect(page.get_by_test_id("total")).to_contain_text(label)
        """
    ),
    "regex_search": step(
        """
        text = page.get_by_role("status").inner_text()
        found = re.search(r"(\\d+) items", text, re.IGNORECASE)
        assert found and int(found.group(1)) > 0
        """
    ),
    "select_and_check": step(
        """
        page.get_by_label("Country").select_option("NL")
        page.get_by_label("Accept terms").check()
        page.get_by_role("checkbox").first.set_checked(False)
        """
    ),
    "subscripts": step(
        """
        names = page.get_by_role("cell").all_inner_texts()
        assert names
        data = {"first": names[0], "rest": names[1:]}
        data["count"] = len(names)
        assert data["count"] == len(data["rest"]) + 1
        assert sorted(names)[0] <= data["first"]
        """
    ),
}


def test_every_escape_has_an_expected_refusal() -> None:
    assert set(REFUSALS) == set(ESCAPES)


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_is_refused(name: str) -> None:
    with pytest.raises(CodePolicyError) as caught:
        check_code(ESCAPES[name])
    assert re.search(REFUSALS[name], str(caught.value)), str(caught.value)
    if name not in WHOLE_CODE:
        assert caught.value.line is not None
        assert str(caught.value).startswith(f"line {caught.value.line}: ")


@pytest.mark.parametrize("name", sorted(GOOD_STEPS))
def test_good_step_is_accepted(name: str) -> None:
    check_code(GOOD_STEPS[name])


def test_refusal_names_the_line() -> None:
    code = step('page.goto("/cart")\nname = "x"\npage.evaluate("1")')
    with pytest.raises(CodePolicyError, match=r"^line 4: attribute 'evaluate'") as caught:
        check_code(code)
    assert caught.value.line == 4


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("", r"exactly one function"),
        ("def step(page):\n    pass\n\n\ndef step(page):\n    pass\n", r"exactly one"),
        ("def run(page):\n    pass\n", r"module level"),
        ("def step(browser):\n    pass\n", r"must take `page` first"),
        ("def step(page, re):\n    pass\n", r"parameter of step\(\) may not be named 're'"),
        ("def step(page, _x):\n    pass\n", r"may not be named '_x'"),
        ("def step(page, item: str):\n    pass\n", r"'item' of step\(\) must not be annotated"),
        ("def step(page, *items):\n    pass\n", r"must take `page` first"),
        ("def step(page: Page):\n    pass\n", r"must not be annotated"),
        ("def step(page) -> int:\n    pass\n", r"-> None"),
        ("def step(page):\n    return 1\n", r"return"),
        ("def step(page)\n    pass\n", r"^line 1: syntax error"),
        ("def step(page):\n    pass\x00\n", r"cannot be parsed|syntax error"),
        (step("total = " + " + ".join(["1"] * 80)), r"nested too deeply"),
        (step("page = page.get_by_role('main')"), r"assigning to 'page'"),
        (step("len = 3"), r"assigning to 'len'"),
        (step("page.url.startswith('x')\nx.click()"), r"name 'x' is not allowed"),
        (step("for x in page.locator('a'):\n    pass"), r"for loop may only iterate"),
        (step("for page.x in range(2):\n    pass"), r"assignment target"),
        (step("page.get_by_role('a').all()[0]()"), r"calling the result of a subscript"),
        (step("data = {}\ndata.__setitem__('a', 1)"), r"'__setitem__'"),
        (step('page.fill("#pw", secret(name))'), r"secret may only"),
        (step("leak = secret\nleak('X')"), r"secret may only"),
        (step("size = 1 << 40"), r"<< operator"),
        (step("match page:\n    case _:\n        pass"), r"match statement"),
        (step("pass") + "#" * 20_000, r"too long"),
    ],
)
def test_other_refusals(code: str, expected: str) -> None:
    with pytest.raises(CodePolicyError) as caught:
        check_code(code)
    assert re.search(expected, str(caught.value)), str(caught.value)


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("/cart", None),
        ("cart?x=1", None),
        ("//cdn.example.test/x", None),
        ("https://example.test", "https"),
        ("HTTP://example.test", "http"),
        (" \tjava\nscript:alert(1)", "javascript"),
        ("FILE:///etc/passwd", "file"),
    ],
)
def test_url_scheme(url: str, scheme: str | None) -> None:
    assert url_scheme(url) == scheme
    assert (navigation_problem(url) is None) == (scheme in (None, "http", "https"))


# -- the allowlists stay real and consistent ------------------------------------------------


@pytest.mark.parametrize(
    ("names", "classes"),
    [
        (policy.PAGE_ATTRIBUTES, (Page,)),
        (policy.LOCATOR_ATTRIBUTES, (Locator,)),
        (policy.FRAME_LOCATOR_ATTRIBUTES, (FrameLocator,)),
        (policy.KEYBOARD_ATTRIBUTES, (Keyboard,)),
        (policy.MOUSE_ATTRIBUTES, (Mouse,)),
        (policy.EXPECT_MATCHERS, (LocatorAssertions, PageAssertions)),
        (policy.RE_NAMES, (re,)),
    ],
)
def test_allowlisted_names_exist(names: frozenset[str], classes: tuple[object, ...]) -> None:
    missing = {name for name in names if not any(hasattr(kind, name) for kind in classes)}
    assert missing <= policy.PROXY_ONLY
    assert all(hasattr(PageProxy, name) for name in policy.PROXY_ONLY)


def test_refused_names_are_never_allowed() -> None:
    assert not policy.REFUSED_ATTRIBUTES & policy.ALLOWED_ATTRIBUTES
    assert not policy.REFUSED_NAMES & (policy.BUILTIN_NAMES | policy.PROVIDED_NAMES)
    assert not any(name.startswith("_") for name in policy.ALLOWED_ATTRIBUTES)


def test_a_step_with_parameters_takes_them_after_page_and_may_use_them() -> None:
    check_code("def step(page, item, text):\n    page.get_by_label(text).fill(item)\n")


READING = {
    "an expect": 'expect(page.get_by_test_id("count")).to_have_text("2")',
    "a text compared": 'assert page.locator("#a").inner_text().strip() == "A"',
    "a count in a frame": 'assert page.frame_locator("#f").get_by_role("row").count() == 3',
    "a url waited for": 'page.wait_for_url(re.compile("/done$"))',
    "storage read": 'assert page.local_storage.get("token")',
}
NAVIGATING = {
    "a goto": 'page.goto("/")',
    "a goto, then a check": 'page.goto("/cart")\n    expect(page).to_have_title("Cart")',
    "back and reload": "page.go_back()\n    page.reload()",
}
ACTING = {
    "a click": 'page.get_by_role("button").click()',
    "a goto, then typing": 'page.goto("/")\n    page.get_by_label("Name").fill("Ann")',
    "the keyboard": 'page.keyboard.press("Enter")',
    "a hover": 'page.get_by_text("Menu").hover()',
    "a popup waited for": (
        'with page.expect_popup() as popup:\n        page.get_by_text("x").click()'
    ),
    "storage written": 'page.local_storage.set("token", "1")',
    "a dialog answered": 'page.once("dialog", lambda dialog: dialog.accept())',
}
REACHES = [
    *((name, code, policy.Reach.READS) for name, code in READING.items()),
    *((name, code, policy.Reach.NAVIGATES) for name, code in NAVIGATING.items()),
    *((name, code, policy.Reach.ACTS) for name, code in ACTING.items()),
]


@pytest.mark.parametrize(("code", "reach"), [r[1:] for r in REACHES], ids=[r[0] for r in REACHES])
def test_how_far_what_a_step_does_may_reach_past_its_return(code: str, reach: policy.Reach) -> None:
    step = f"def step(page) -> None:\n    {code}\n"
    check_code(step)
    assert step_code(step).reach is reach


def test_what_only_reads_or_navigates_is_allowed_and_never_acts_in_the_page() -> None:
    quiet = policy.READ_ONLY_ATTRIBUTES | policy.NAVIGATING_ATTRIBUTES
    assert quiet <= policy.ALLOWED_ATTRIBUTES
    acting = {"click", "fill", "press", "type", "check", "select_option", "set", "hover", "once"}
    assert not acting & quiet
