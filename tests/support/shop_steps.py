"""Step code for the demo shop's order flow, planted in caches by several tests."""

TO_CHECKOUT = (
    "def step(page) -> None:\n"
    '    page.goto("/")\n'
    '    page.get_by_role("button", name="Accept cookies").click()\n'
    '    page.get_by_role("button", name="Add to cart").first.click()\n'
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
