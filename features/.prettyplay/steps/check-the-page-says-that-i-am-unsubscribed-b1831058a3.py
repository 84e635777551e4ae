# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the page says that I am unsubscribed",
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("status")).to_have_text("You are unsubscribed.")
