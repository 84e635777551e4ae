# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I accept the cookie banner",
    origin="generated",
)
def step(page) -> None:
    page.get_by_role("button", name="Accept cookies").click()
    expect(page.get_by_role("region", name="Cookie consent")).to_be_hidden()
