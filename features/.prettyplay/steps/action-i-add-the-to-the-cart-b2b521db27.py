# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence='I add the "{}" to the cart',
    values=("Blue Mug",),
    origin="generated",
)
def step(page) -> None:
    product = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Blue Mug"))
    product.get_by_role("button", name="Add to cart").click()


@step(
    kind="action",
    sentence='I add the "{}" to the cart',
    values=("Green Tea",),
    origin="generated",
)
def step(page) -> None:
    product = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Green Tea"))
    product.get_by_role("button", name="Add to cart").click()
    expect(page.get_by_role("link", name=re.compile(r"^Cart"))).to_have_text("Cart (1)")
