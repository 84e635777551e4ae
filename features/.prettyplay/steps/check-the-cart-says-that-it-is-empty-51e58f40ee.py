# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the cart says that it is empty",
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("main")).to_contain_text("Your cart is empty.")
