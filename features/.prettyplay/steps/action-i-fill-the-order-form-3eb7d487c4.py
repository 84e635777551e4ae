# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I fill the order form:",
    data="| field | value |\n| Email | ann@example.com |\n| Name | Ann Example |",
    origin="generated",
)
def step(page) -> None:
    page.get_by_label("Email").fill("ann@example.com")
    page.get_by_label("Name").fill("Ann Example")
