"""The exported support module on a real page of the demo shop: what step code was given (web
storage, cookies, the scenario's memory, secrets, uploads, tabs) means the same in plain
Playwright. Each step runs as an exported step definition runs it (``run``), with a stand-in for
behave's context that holds what behave's would."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from prettyplay_behave.demo.server import DemoShop
from prettyplay_behave.export import plain_code
from tests.support.exported import support_module


@pytest.fixture
def support(tmp_path: Path) -> ModuleType:
    """The support module as an export writes it, beside a files folder with a receipt."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "receipt.pdf").write_bytes(b"%PDF-1.4\n")
    return support_module(tmp_path / "steps")


@pytest.fixture
def scenario(browser: Browser, shop: DemoShop) -> Any:
    """What behave's context holds for one scenario of the exported environment."""
    browser_context = browser.new_context(base_url=shop.url)
    browser_context.set_default_timeout(10_000)
    try:
        yield SimpleNamespace(
            page=browser_context.new_page(),
            base_url=shop.url,
            feature=SimpleNamespace(filename="/project/exported/a.feature"),
            config=SimpleNamespace(base_dir="/project/exported"),
            scenario=SimpleNamespace(name="A scenario"),
            table=None,
            text=None,
        )
    finally:
        browser_context.close()


def step(support: ModuleType, context: Any, body: str, *values: str) -> None:
    """Run ``body`` as the exported code of one step, with the names the steps module gives it."""
    names = {name: getattr(support, name) for name in support.__all__}
    parameters = "".join(f", value_{n}" for n in range(len(values)))
    code = f"def step(page{parameters}) -> None:\n" + "".join(
        f"    {line}\n" for line in body.strip().splitlines()
    )
    exec(plain_code(code, "exported"), names)
    entry = support.Entry(code=names["exported"], takes=len(values), features=("a.feature",))
    support.run(context, "action", "a step", values, [entry])


def test_web_storage_is_seeded_before_the_page_loads_and_read_in_it(
    support: ModuleType, scenario: Any
) -> None:
    step(support, scenario, 'page.local_storage.set_json("cart", [3, 5])\npage.goto("/")')
    assert scenario.page.evaluate("localStorage.getItem('cart')") == "[3, 5]"
    step(
        support,
        scenario,
        """
assert page.local_storage.get_json("cart") == [3, 5]
page.session_storage.set("seen", "yes")
assert page.session_storage.items() == [("seen", "yes")]
page.local_storage.remove("cart")
assert page.local_storage.keys() == []
""",
    )
    assert scenario.page.evaluate("sessionStorage.getItem('seen')") == "yes"


def test_cookies_memory_and_secrets(
    support: ModuleType, scenario: Any, shop: DemoShop, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario.page.context.add_cookies([{"name": "theme", "value": "dark", "url": shop.url}])
    monkeypatch.setenv("SHOP_EMAIL", "ann@example.com")
    step(
        support,
        scenario,
        """
page.goto("/login")
assert page.cookies.get("theme") == "dark"
assert "theme" in page.cookies.names()
page.get_by_label("Email").fill(secret("SHOP_EMAIL"))
remember("heading", page.get_by_role("heading", level=1).inner_text())
""",
    )
    expect(scenario.page.get_by_label("Email")).to_have_value("ann@example.com")
    heading = scenario.page.get_by_role("heading", level=1).inner_text()
    step(support, scenario, 'assert recall("heading") == value_0', heading)
    with pytest.raises(
        AssertionError, match=r"nothing was remembered as 'total' \(remembered: heading\)"
    ):
        step(support, scenario, 'recall("total")')
    with pytest.raises(AssertionError, match="needs the secret NO_SUCH_SECRET"):
        step(support, scenario, 'page.get_by_label("Email").fill(secret("NO_SUCH_SECRET"))')


def test_an_upload_names_a_file_of_the_files_folder(support: ModuleType, scenario: Any) -> None:
    step(
        support,
        scenario,
        'page.goto("/returns")\npage.get_by_label("Receipt").set_input_files("receipt.pdf")',
    )
    expect(scenario.page.get_by_text("Attached: receipt.pdf")).to_be_visible()


def test_a_tab_the_step_opens_is_the_next_steps_page_and_a_step_switches_back(
    support: ModuleType, scenario: Any
) -> None:
    first = scenario.page
    step(support, scenario, 'page.goto("/deals")')  # the deals page opens the deal in a tab
    assert scenario.page is not first
    expect(scenario.page).to_have_url(re.compile(r"/deals/today$"))
    step(support, scenario, "page.switch_to_tab(0)")
    assert scenario.page is first
    step(support, scenario, 'page.get_by_role("link", name="Terms of sale (new tab)").click()')
    expect(scenario.page.get_by_role("heading", level=1)).to_have_text("Terms of sale")
