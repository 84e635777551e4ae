"""Step code compiled by the sandbox, run against a real Chromium through the proxies."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from prettyplay_behave.errors import CodePolicyError
from prettyplay_behave.safety import sandbox
from prettyplay_behave.safety.proxy import (
    AssertionsProxy,
    KeyboardProxy,
    LocatorProxy,
    PageProxy,
    expect_for_steps,
)
from prettyplay_behave.safety.sandbox import call_step, compile_step
from prettyplay_behave.safety.step_code import StepCode
from tests.support.pages import PageServer

FORM = """<!doctype html>
<html><head><title>Form</title></head><body>
<label>Name <input id="name"></label>
<label>Password <input id="password" type="password"></label>
<ul><li>Apples</li><li>Pears</li></ul>
<button onclick="document.getElementById('out').textContent =
  'Saved ' + document.getElementById('name').value">Save</button>
<p data-testid="out"  id="out"></p>
</body></html>"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with PageServer({"/form": FORM}, fallback="<title>Home</title><h1>Home</h1>") as pages:
        yield pages.url


@pytest.fixture
def page(page_on: Callable[[str], Page], server: str) -> Page:
    """A page of a fresh context on the form; an action waits at most 5 s."""
    page = page_on(server)
    page.set_default_timeout(5_000)
    page.goto("/form")
    return page


def test_good_step_acts_on_the_page(page: Page) -> None:
    code = """\
def step(page) -> None:
    page.goto("/form")
    page.get_by_label("Name").fill("Ada")
    page.get_by_label("Password").fill(secret("PASSWORD"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("out")).to_have_text(re.compile("Saved Ada"))
    for item in page.get_by_role("listitem").all():
        expect(item).to_be_visible()
"""
    step = compile_step(code, secret={"PASSWORD": "hunter2"}.__getitem__)
    call_step(step, page)
    assert page.get_by_label("Name").input_value() == "Ada"
    assert page.get_by_label("Password").input_value() == "hunter2"
    check = """def step(page) -> None:
    assert page.get_by_role("listitem").all_inner_texts() == ["Apples", "Pears"]
    assert page.get_by_label("Name").input_value() == "Ada"
"""
    call_step(compile_step(check), page)


def test_proxy_wraps_results(page: Page) -> None:
    proxy = PageProxy(page)
    assert proxy.reload() is None  # the Response is not handed out
    assert proxy.title() == "Form"
    assert proxy.url.endswith("/form")
    items = proxy.get_by_role("listitem").all()
    assert [type(item) for item in items] == [LocatorProxy, LocatorProxy]
    assert isinstance(proxy.get_by_role("listitem").first, LocatorProxy)
    assert isinstance(proxy.keyboard, KeyboardProxy)
    apples = proxy.get_by_role("listitem").filter(has=proxy.get_by_text("Apples"))
    assert apples.count() == 1
    assert isinstance(expect_for_steps(apples), AssertionsProxy)


def test_proxy_refuses_at_run_time(page: Page) -> None:
    proxy = PageProxy(page)
    locator = proxy.locator("input")
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: proxy.context, "page.context is not available to step code"),
        (lambda: proxy.evaluate, "page.evaluate is not available"),
        (lambda: proxy.request, "page.request is not available"),
        (lambda: proxy.route, "page.route is not available"),
        (lambda: proxy.main_frame, "page.main_frame is not available"),
        (lambda: proxy.set_content, "page.set_content is not available"),
        (lambda: proxy.screenshot, "page.screenshot is not available"),
        (lambda: locator.page, "locator.page is not available"),
        (lambda: locator.evaluate, "locator.evaluate is not available"),
        (lambda: locator.set_input_files("/etc/passwd"), "'/etc/passwd' is an absolute path"),
        (lambda: locator.element_handle, "locator.element_handle is not available"),
        (lambda: proxy.keyboard.on, "keyboard.on is not available"),
        (lambda: expect_for_steps(proxy).on, r"expect\(...\).on is not available"),
    ]
    for reach, message in refusals:
        with pytest.raises(CodePolicyError, match=message):
            reach()


def test_proxy_refuses_assignment(page: Page) -> None:
    with pytest.raises(CodePolicyError, match="cannot be assigned"):
        PageProxy(page).url = "file:///etc/passwd"


def test_expect_with_proxied_locators(page: Page) -> None:
    proxy = PageProxy(page)
    expect_for_steps(proxy.get_by_role("listitem").first).to_have_text("Apples")
    expect_for_steps(proxy).to_have_title("Form")
    expect_for_steps(proxy.get_by_text("Bananas")).not_to_be_visible()
    with pytest.raises(AssertionError):
        expect_for_steps(proxy.get_by_role("listitem").first).to_have_text("Pears", timeout=300)
    with pytest.raises(AssertionError):
        expect_for_steps(proxy).to_have_url("http://127.0.0.1/elsewhere", timeout=300)


def test_goto_refuses_other_schemes_at_run_time(page: Page) -> None:
    for url in ["file:///etc/passwd", "chrome://settings", "data:text/html,hi", " java\tscript:1"]:
        with pytest.raises(CodePolicyError, match="URL is not allowed"):
            PageProxy(page).goto(url)
    assert page.url.endswith("/form")


def test_goto_reports_navigation_and_resolves_relative_urls(page: Page, server: str) -> None:
    seen: list[str] = []
    PageProxy(page, on_navigate=seen.append).goto("/home")
    assert seen == ["/home"]
    assert page.url == f"{server}/home"

    def refuse(url: str) -> None:
        raise CodePolicyError(f"{url} is out of bounds")

    with pytest.raises(CodePolicyError, match="out of bounds"):
        PageProxy(page, on_navigate=refuse).goto("/form")
    assert page.url == f"{server}/home"


def test_step_errors_propagate_unchanged(page: Page) -> None:
    missing = compile_step(
        'def step(page):\n    page.get_by_role("button", name="Missing").click(timeout=300)\n'
    )
    with pytest.raises(PlaywrightTimeoutError):
        call_step(missing, page)
    failing = compile_step('def step(page):\n    assert page.title() == "Other", "wrong title"\n')
    with pytest.raises(AssertionError, match="wrong title"):
        call_step(failing, page)
    red = compile_step(
        'def step(page):\n    expect(page.get_by_test_id("out")).to_have_text("x", timeout=300)\n'
    )
    with pytest.raises(AssertionError):
        call_step(red, page)


def test_secret_needs_a_resolver(page: Page) -> None:
    step = compile_step('def step(page):\n    page.get_by_label("Name").fill(secret("NAME"))\n')
    with pytest.raises(CodePolicyError, match="no secret resolver"):
        call_step(step, page)


@pytest.mark.parametrize(
    "body",
    [
        "for i in range(5000):\n        pass",
        "numbers = list(range(2000))",
        'for word in ("w " * 1500).split():\n        pass',
    ],
)
def test_loops_are_bounded_at_run_time(page: Page, body: str) -> None:
    step = compile_step(f"def step(page):\n    {body}\n")
    with pytest.raises(CodePolicyError, match="at most 1000"):
        call_step(step, page)


def test_loop_walks_a_snapshot(page: Page) -> None:
    step = compile_step(
        "def step(page):\n"
        "    items = [1, 2]\n"
        "    for item in items:\n"
        "        items += [item]\n"
        "    assert items == [1, 2, 1, 2]\n"
    )
    call_step(step, page)


def test_namespace_holds_only_the_allowlist(page: Page, monkeypatch: pytest.MonkeyPatch) -> None:
    # the policy off: what the namespace itself lets through
    monkeypatch.setattr(sandbox, "step_code", lambda code: StepCode(code, ast.parse(code), None))
    for body, error in [
        ('open("/etc/passwd")', NameError),
        ('__import__("os")', NameError),
        ("re.functools", AttributeError),  # the re module imports functools
        ("page.context", CodePolicyError),
        ('page.get_by_role("button").page', CodePolicyError),
    ]:
        step = compile_step(f"def step(page):\n    {body}\n")
        with pytest.raises(error):
            call_step(step, page)


def test_one_text_compiled_twice_keeps_each_compile_its_own_secrets_and_budget() -> None:
    """The check and rewrite of a text are done once; each compile still gets its own
    namespace, so one test's secret resolver never serves another's step."""
    code = 'def step(page) -> None:\n    page.locator("#token").fill(secret("TOKEN"))\n'
    first = compile_step(code, secret={"TOKEN": "one"}.__getitem__)
    second = compile_step(code, secret={"TOKEN": "two"}.__getitem__)
    assert first.__code__ is second.__code__  # the same compiled text
    assert sandbox._namespace(first)["__budget__"] is not sandbox._namespace(second)["__budget__"]
    filled: list[object] = []

    class Field:  # stands for the page here: only what the code calls
        def locator(self, selector: str) -> Field:
            return self

        def fill(self, value: object) -> None:
            filled.append(value)

    first(Field())
    second(Field())
    assert filled == ["one", "two"]
    refused = "def step(page) -> None:\n    __import__('os')\n"
    for _ in range(2):  # a refusal is never remembered as a pass
        with pytest.raises(CodePolicyError):
            compile_step(refused)
