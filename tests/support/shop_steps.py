"""Step code for the demo shop, planted in caches by several tests, and the feature whose
steps it answers."""

OPEN_SHOP = 'def step(page) -> None:\n    page.goto("/")\n'
ACCEPT = 'def step(page) -> None:\n    page.get_by_role("button", name="Accept cookies").click()\n'
# the cookie button under a name the shop never had
BROKEN_ACCEPT = (
    'def step(page) -> None:\n    page.get_by_role("button", name="Consent").click(timeout=300)\n'
)
# the first product's button and the cart link, by the names a changed UI renames
ADD_A_MUG = (
    "def step(page) -> None:\n"
    '    page.get_by_role("button", name="Add to cart").first.click()\n'
    '    expect(page.locator("[data-cart-message]")).not_to_be_empty()\n'
)
ONE_ITEM = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("link", name="Cart (1)")).to_be_visible()\n'
)
HEADING = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Shop")\n'
)

TO_CHECKOUT = (
    "def step(page) -> None:\n"
    '    page.goto("/")\n'
    '    page.get_by_role("button", name="Accept cookies").click()\n'
    '    page.get_by_role("button", name="Add to cart").first.click()\n'
    # the shop adds by a fetch, which a navigation started at once could cancel
    '    expect(page.locator("[data-cart-message]")).not_to_be_empty()\n'
    '    page.goto("/cart")\n'
    '    page.get_by_role("button", name="Checkout").click()\n'
    '    page.get_by_label("I accept the terms").check()\n'
    '    page.get_by_role("button", name="Continue").click()\n'
)
# the whole order: a tea, the terms, the form, and the order placed
ORDER_A_TEA = (
    TO_CHECKOUT
    + '    page.get_by_label("Email").fill("ann@example.com")\n'
    + '    page.get_by_label("Name").fill("Ann")\n'
    + '    page.get_by_role("button", name="Place order").click()\n'
)

# opening the shop, accepting the cookie banner, checking the heading: OPEN_SHOP, ACCEPT, HEADING
SHOP_FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    When I accept the cookie banner
    Then the heading says Demo Shop
"""
