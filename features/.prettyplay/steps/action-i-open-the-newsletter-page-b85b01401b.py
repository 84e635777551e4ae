# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I open the newsletter page",
    origin="generated",
)
def step(page) -> None:
    page.goto("/newsletter")
