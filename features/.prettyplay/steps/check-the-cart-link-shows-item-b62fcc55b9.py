# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the cart link shows {} item",
    values=("1",),
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("link", name=re.compile(r"^Cart \(\d+\)$"))).to_have_text("Cart (1)")
