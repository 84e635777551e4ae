# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence='the page says "{}"',
    values=("Invalid email or password",),
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("alert")).to_have_text("Invalid email or password")
