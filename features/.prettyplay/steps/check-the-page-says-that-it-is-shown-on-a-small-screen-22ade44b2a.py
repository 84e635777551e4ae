# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the page says that it is shown on a small screen",
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_text("You are on a small screen.")).to_be_visible()
