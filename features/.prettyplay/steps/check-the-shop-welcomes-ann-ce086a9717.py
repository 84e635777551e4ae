# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the shop welcomes ann",
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_text("Welcome, ann")).to_be_visible()
