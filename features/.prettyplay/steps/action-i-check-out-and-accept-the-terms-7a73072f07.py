# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence="I check out and accept the terms",
    origin="generated",
)
def step(page) -> None:
    page.get_by_role("link", name=re.compile(r"^Cart")).click()
    page.get_by_role("button", name="Checkout").click()
    terms = page.get_by_role("dialog", name="Terms and conditions")
    terms.get_by_label("I accept the terms").check()
    terms.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/checkout$"))
