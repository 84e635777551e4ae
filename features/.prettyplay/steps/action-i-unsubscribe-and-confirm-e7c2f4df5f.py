# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I unsubscribe and confirm",
    origin="generated",
)
def step(page) -> None:
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Unsubscribe").click()
