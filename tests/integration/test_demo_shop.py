"""The demo shop in a real Chromium: every variant's flows, the admin switch and the CLI."""

from __future__ import annotations

import http.cookiejar
import queue
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from prettyplay_behave.demo.server import (
    LABELS,
    STATUS_CONFIRMED,
    STATUS_FAILED,
    VARIANTS,
    DemoShop,
)

NORMAL = LABELS["normal"]
CHANGED = LABELS["changed-ui"]


@pytest.fixture
def shop() -> Iterator[DemoShop]:
    with DemoShop() as running:
        yield running


def http_get(url: str, data: bytes | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def product_button(page: Page, product: str, label: str, changed: bool) -> None:
    container = page.get_by_role("article" if changed else "listitem").filter(has_text=product)
    container.get_by_role("button", name=label, exact=True).click()


def buy_blue_mug(page: Page, shop: DemoShop, labels: dict[str, str] | None = None) -> None:
    """Walk the whole purchase up to placing the order, using the given variant's labels."""
    labels = labels or dict(NORMAL)
    changed = labels["add_to_cart"] == CHANGED["add_to_cart"]
    page.goto(shop.url)
    expect(page.get_by_role("heading", name="Demo Shop", exact=True)).to_be_visible()
    banner = page.get_by_role("region", name=labels["cookie_region"])
    expect(banner).to_be_visible()
    banner.get_by_role("button", name=labels["accept_cookies"], exact=True).click()
    expect(banner).to_be_hidden()

    product_button(page, "Blue Mug", labels["add_to_cart"], changed)
    cart_link = page.get_by_role("link", name=f"{labels['cart_word']} (1)", exact=True)
    expect(cart_link).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(f"Blue Mug {labels['added']}.")
    cart_link.click()

    expect(page.get_by_role("heading", name=labels["cart_title"])).to_be_visible()
    items = page.get_by_role("list", name=labels["cart_items"]).get_by_role("listitem")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("Blue Mug")
    expect(page.get_by_text("Total: $12.00")).to_be_visible()
    page.get_by_role("button", name=labels["checkout"], exact=True).click()

    dialog = page.get_by_role("dialog", name=labels["terms_title"])
    expect(dialog).to_be_visible()
    continue_button = dialog.get_by_role("button", name=labels["terms_continue"], exact=True)
    continue_button.click()
    expect(dialog.get_by_role("alert")).to_have_text(labels["terms_required"])
    expect(page).to_have_url(f"{shop.url}/cart")
    dialog.get_by_label(labels["accept_terms"]).check()
    continue_button.click()

    expect(page).to_have_url(f"{shop.url}/checkout")
    page.get_by_label(labels["email"], exact=True).fill("ann@example.com")
    page.get_by_label(labels["name"], exact=True).fill("Ann")
    page.get_by_role("button", name=labels["place_order"], exact=True).click()


def test_happy_path_confirms_the_order(page: Page, shop: DemoShop) -> None:
    buy_blue_mug(page, shop)
    status = page.get_by_role("status")
    expect(status).to_have_text(STATUS_CONFIRMED)
    expect(page.get_by_text("Thank you, Ann. Your order number is 1001.")).to_be_visible()
    expect(page.get_by_role("link", name="Cart (0)", exact=True)).to_be_visible()
    # The cookie choice outlives the order and the reload.
    page.goto(shop.url)
    expect(page.get_by_role("button", name="Accept cookies")).to_have_count(0)


def test_normal_home_lists_the_products(page: Page, shop: DemoShop) -> None:
    page.goto(shop.url)
    products = page.get_by_role("region", name="Products").get_by_role("listitem")
    expect(products).to_have_count(4)
    expect(products.first).to_contain_text("Blue Mug")
    expect(products.first).to_contain_text("$12.00")
    expect(page.get_by_role("button", name="Add to cart", exact=True)).to_have_count(4)
    expect(page.get_by_role("link", name="Cart (0)", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Log in", exact=True)).to_be_visible()


def test_order_appears_only_after_the_server_answers(page: Page, shop: DemoShop) -> None:
    shop.order_delay = 1.0
    buy_blue_mug(page, shop)
    status = page.get_by_role("status")
    expect(status).to_have_text("processing…")
    expect(page.get_by_role("button", name="Place order")).to_be_disabled()
    expect(status).to_have_text(STATUS_CONFIRMED)


def test_terms_modal_closes_and_guards_checkout(page: Page, shop: DemoShop) -> None:
    page.goto(f"{shop.url}/checkout")
    expect(page).to_have_url(f"{shop.url}/cart")
    expect(page.get_by_text("Your cart is empty.")).to_be_visible()
    expect(page.get_by_role("button", name="Checkout")).to_have_count(0)

    page.goto(shop.url)
    product_button(page, "Green Tea", "Add to cart", changed=False)
    product_button(page, "Green Tea", "Add to cart", changed=False)
    expect(page.get_by_role("link", name="Cart (2)", exact=True)).to_be_visible()
    page.goto(f"{shop.url}/cart")
    expect(page.get_by_text("Qty 2")).to_be_visible()
    expect(page.get_by_text("Total: $17.00")).to_be_visible()
    page.get_by_role("button", name="Checkout", exact=True).click()
    dialog = page.get_by_role("dialog", name="Terms and conditions")
    dialog.get_by_role("button", name="Close", exact=True).click()
    expect(dialog).to_be_hidden()

    page.goto(f"{shop.url}/checkout")
    expect(page).to_have_url(f"{shop.url}/cart")
    page.get_by_role("button", name="Remove", exact=True).click()
    expect(page.get_by_text("Your cart is empty.")).to_be_visible()


def test_order_form_requires_email_and_name(page: Page, shop: DemoShop) -> None:
    buy_blue_mug(page, shop)
    expect(page.get_by_role("status")).to_have_text(STATUS_CONFIRMED)
    page.goto(shop.url)
    product_button(page, "Desk Lamp", "Add to cart", changed=False)
    page.get_by_role("link", name="Cart (1)").click()
    page.get_by_role("button", name="Checkout", exact=True).click()
    page.get_by_label("I accept the terms").check()
    page.get_by_role("button", name="Continue", exact=True).click()
    page.get_by_role("button", name="Place order").click()
    expect(page.get_by_role("alert")).to_have_text("Please enter a valid email address.")
    expect(page.get_by_role("status")).to_have_text("")


def test_changed_ui_relabels_controls_but_keeps_the_flow(page: Page, shop: DemoShop) -> None:
    shop.set_variant("changed-ui")
    page.goto(shop.url)
    for old in ("Accept cookies", "Add to cart", "Log in"):
        expect(page.get_by_role("button", name=old)).to_have_count(0)
    expect(page.get_by_role("link", name="Cart (0)")).to_have_count(0)
    expect(page.get_by_role("listitem")).to_have_count(0)
    expect(page.get_by_role("article")).to_have_count(4)
    expect(page.get_by_role("article").first).to_contain_text("Desk Lamp")
    expect(page.get_by_role("link", name="Sign in", exact=True)).to_be_visible()

    buy_blue_mug(page, shop, dict(CHANGED))
    expect(page.get_by_label("Email", exact=True)).to_have_count(0)
    expect(page.get_by_role("status")).to_have_text(STATUS_CONFIRMED)


def test_broken_product_never_confirms(page: Page, shop: DemoShop) -> None:
    shop.set_variant("broken-product")
    buy_blue_mug(page, shop)
    status = page.get_by_role("status")
    expect(status).to_have_text(STATUS_FAILED)
    expect(page.get_by_text(STATUS_CONFIRMED)).to_have_count(0)
    expect(page.get_by_role("link", name="Cart (1)", exact=True)).to_be_visible()
    # Retrying fails the same way.
    page.get_by_role("button", name="Place order").click()
    expect(status).to_have_text(STATUS_FAILED)
    expect(page.get_by_text(STATUS_CONFIRMED)).to_have_count(0)


def test_login_welcomes_the_user(page: Page, shop: DemoShop) -> None:
    page.goto(f"{shop.url}/login")
    page.get_by_label("Email").fill("ann@example.com")
    page.get_by_label("Password").fill("secret")
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.get_by_text("Welcome, ann")).to_be_visible()
    expect(page).to_have_url(f"{shop.url}/")
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_text("Welcome, ann")).to_have_count(0)
    expect(page.get_by_role("link", name="Log in")).to_be_visible()


@pytest.mark.parametrize(
    ("email", "password"),
    [("ann@example.com", "wrong"), ("ann@example.com", ""), ("", "secret")],
)
def test_login_rejects_bad_credentials(
    page: Page, shop: DemoShop, email: str, password: str
) -> None:
    page.goto(f"{shop.url}/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("Invalid email or password")
    expect(page.get_by_text("Welcome,")).to_have_count(0)
    expect(page.get_by_label("Email")).to_have_value(email)


def test_changed_ui_login_uses_new_labels(page: Page, shop: DemoShop) -> None:
    shop.set_variant("changed-ui")
    page.goto(f"{shop.url}/login")
    page.get_by_label("E-mail address").fill("bo@example.com")
    page.get_by_label("Password").fill("secret")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_text("Welcome, bo")).to_be_visible()


def test_each_context_starts_clean(browser: Browser, shop: DemoShop) -> None:
    first = browser.new_context()
    second = browser.new_context()
    try:
        one = first.new_page()
        one.goto(shop.url)
        one.get_by_role("button", name="Accept cookies").click()
        product_button(one, "Blue Mug", "Add to cart", changed=False)
        expect(one.get_by_role("link", name="Cart (1)")).to_be_visible()

        two = second.new_page()
        two.goto(shop.url)
        expect(two.get_by_role("button", name="Accept cookies")).to_be_visible()
        expect(two.get_by_role("link", name="Cart (0)")).to_be_visible()
    finally:
        first.close()
        second.close()


def test_variant_endpoint_switches_a_running_shop(page: Page, shop: DemoShop) -> None:
    assert http_get(f"{shop.url}/__variant") == (200, "normal")
    assert http_get(f"{shop.url}/__variant", b"changed-ui") == (200, "changed-ui")
    page.goto(shop.url)
    expect(page.get_by_role("button", name="Allow all")).to_be_visible()
    assert http_get(f"{shop.url}/__variant?set=broken-product") == (200, "broken-product")
    assert shop.variant == "broken-product"
    page.reload()
    expect(page.get_by_role("button", name="Accept cookies")).to_be_visible()
    status, body = http_get(f"{shop.url}/__variant", b"variant=nope")
    assert status == 400
    assert "'nope'" in body
    assert shop.variant == "broken-product"
    # The admin switch is not part of the visible shop.
    assert "__variant" not in page.content()


def test_plain_http_surface(shop: DemoShop) -> None:
    assert http_get(f"{shop.url}/health") == (200, "ok")
    status, body = http_get(f"{shop.url}/no-such-page")
    assert status == 404
    assert "Page not found" in body
    with urllib.request.urlopen(f"{shop.url}/static/style.css", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/css")
        assert response.headers["Cache-Control"] == "no-store"
    assert http_get(f"{shop.url}/static/server.py")[0] == 404


@pytest.mark.parametrize("variant", ["nope", "", "Normal"])
def test_bad_variant_is_rejected(variant: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(variant))) as raised:
        DemoShop(variant=variant)
    assert ", ".join(VARIANTS) in str(raised.value)
    shop = DemoShop()
    with pytest.raises(ValueError, match="expected one of"):
        shop.set_variant(variant)
    assert shop.variant == "normal"


def test_start_stop_lifecycle() -> None:
    shop = DemoShop()
    with pytest.raises(RuntimeError):
        _ = shop.url
    shop.start()
    try:
        with pytest.raises(RuntimeError):
            shop.start()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", shop.url)
        assert http_get(f"{shop.url}/health") == (200, "ok")
    finally:
        shop.stop()
    shop.stop()
    assert not shop.running


def test_module_cli_serves_until_terminated() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "prettyplay_behave.demo", "--port", "0", "--variant", "changed-ui"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None
    # readline() can block forever; a reader thread keeps the wait bounded.
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        first = lines.get(timeout=20)
        match = re.search(r"http://127\.0\.0\.1:\d+", first)
        if match is None:
            proc.kill()
            _, errors = proc.communicate(timeout=10)
            pytest.fail(f"no URL printed; stdout {first!r}, stderr:\n{errors}")
        assert "changed-ui" in first
        assert http_get(f"{match.group(0)}/health") == (200, "ok")
        assert http_get(f"{match.group(0)}/__variant") == (200, "changed-ui")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0
    assert proc.stderr is not None
    # No access log: the requests above must not echo to stderr.
    assert "GET /" not in proc.stderr.read()


def test_forms_work_without_javascript(shop: DemoShop) -> None:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def post(path: str, **form: str) -> str:
        data = urllib.parse.urlencode(form).encode()
        try:
            with opener.open(f"{shop.url}{path}", data=data, timeout=10) as response:
                return f"{response.url}\n{response.read().decode()}"
        except urllib.error.HTTPError as exc:
            return f"{exc.code}\n{exc.read().decode()}"

    assert "Cookie consent" in opener.open(shop.url, timeout=10).read().decode()
    page = post("/consent", choice="all", next="/cart")
    assert page.startswith(f"{shop.url}/cart\n")
    assert "Cookie consent" not in page
    assert post("/consent", choice="all", next="//elsewhere").startswith(f"{shop.url}/\n")
    assert "Cart (<span data-cart-count>1</span>)" in post("/cart/add", product="lamp")
    refused = post("/terms")
    assert refused.startswith(f"{shop.url}/cart\n")
    assert "Desk Lamp" in refused
    assert "<h1>Checkout</h1>" in post("/terms", accept="yes")
    shop.order_delay = 0
    assert post("/order", email="ann@example.com").startswith("400\n")
    assert "Please enter your name." in post("/order", email="ann@example.com")
    page = post("/order", email="ann@example.com", name="<b>Ann</b>")
    assert f'role="status" class="status" data-order-status>{STATUS_CONFIRMED}<' in page
    assert "Thank you, &lt;b&gt;Ann&lt;/b&gt;." in page
    assert "Cart (<span data-cart-count>0</span>)" in page
