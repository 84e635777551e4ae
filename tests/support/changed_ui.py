"""The example features' steps rewritten for the demo shop's changed UI: what a healing LLM
would answer. Shared by the tests and the benchmarks."""

CART = {
    "I accept the cookie banner": (
        'def step(page) -> None:\n    page.get_by_role("button", name="Allow all").click()\n'
    ),
    'I add the "Blue Mug" to the cart': (
        "def step(page) -> None:\n"
        '    product = page.get_by_role("article", name="Blue Mug")\n'
        '    product.get_by_role("button", name="Add to basket").click()\n'
    ),
    "the cart link shows 1 item": (
        "def step(page) -> None:\n"
        '    basket = page.get_by_role("link", name=re.compile("^Basket"))\n'
        '    expect(basket).to_have_text("Basket (1)")\n'
    ),
    "I open the cart": (
        "def step(page) -> None:\n"
        '    page.get_by_role("link", name=re.compile("^Basket")).click()\n'
    ),
    "the cart says that it is empty": (
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("main")).to_contain_text("Your basket is empty.")\n'
    ),
}

CHECKOUT = {
    "I accept the cookie banner": CART["I accept the cookie banner"],
    'I add the "Green Tea" to the cart': (
        "def step(page) -> None:\n"
        '    tea = page.get_by_role("article", name="Green Tea")\n'
        '    tea.get_by_role("button", name="Add to basket").click()\n'
        '    basket = page.get_by_role("link", name=re.compile("^Basket"))\n'
        '    expect(basket).to_have_text("Basket (1)")\n'
    ),
    "I check out and accept the terms": (
        "def step(page) -> None:\n"
        '    page.get_by_role("link", name=re.compile("^Basket")).click()\n'
        '    page.get_by_role("button", name="Proceed to checkout").click()\n'
        '    terms = page.get_by_role("dialog", name="Terms of sale")\n'
        '    terms.get_by_label("I agree to the terms").check()\n'
        '    terms.get_by_role("button", name="Next").click()\n'
        '    expect(page).to_have_url(re.compile("/checkout$"))\n'
    ),
    "I fill the order form:": (
        "def step(page) -> None:\n"
        '    page.get_by_label("E-mail address").fill("ann@example.com")\n'
        '    page.get_by_label("Full name").fill("Ann Example")\n'
    ),
    "I place the order": (
        "def step(page) -> None:\n"
        '    page.get_by_role("button", name="Confirm purchase").click()\n'
    ),
}  # fmt: skip
