# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence='I log in as "{}" with the password "{}"',
    values=("ann@example.com", "secret"),
    origin="generated",
)
def step(page) -> None:
    page.get_by_label("Email").fill("ann@example.com")
    page.get_by_label("Password").fill("secret")
    page.get_by_role("button", name="Log in").click()


@step(
    kind="action",
    sentence='I log in as "{}" with the password "{}"',
    values=("ann@example.com", "wrong"),
    origin="generated",
)
def step(page) -> None:
    page.get_by_label("Email").fill("ann@example.com")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()


@step(
    kind="action",
    sentence='I log in as "{}" with the password "{}"',
    values=("bob@example.com", "secret"),
    origin="generated",
)
def step(page) -> None:
    page.get_by_label("Email").fill("bob@example.com")
    page.get_by_label("Password").fill("secret")
    page.get_by_role("button", name="Log in").click()
