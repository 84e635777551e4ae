# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I go back to the deals tab",
    origin="generated",
)
def step(page) -> None:
    page.switch_to_tab(0)
    expect(page.get_by_role("heading", level=1)).to_have_text("Deals")
