# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence='the page greets "{}"',
    values=("ann",),
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("banner")).to_contain_text("Welcome, ann")


@step(
    kind="check",
    sentence='the page greets "{}"',
    values=("bob",),
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("banner")).to_contain_text("Welcome, bob")
