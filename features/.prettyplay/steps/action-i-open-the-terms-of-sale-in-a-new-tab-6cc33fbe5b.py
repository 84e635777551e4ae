# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I open the terms of sale in a new tab",
    origin="generated",
)
def step(page) -> None:
    page.get_by_role("link", name="Terms of sale (new tab)").click()
