# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I open the cart",
    origin="generated",
)
def step(page) -> None:
    page.get_by_role("link", name=re.compile(r"^Cart")).click()
    expect(page).to_have_url(re.compile(r"/cart$"))
