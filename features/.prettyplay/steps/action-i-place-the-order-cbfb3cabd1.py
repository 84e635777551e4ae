# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I place the order",
    origin="generated",
)
def step(page) -> None:
    page.get_by_role("button", name="Place order").click()
