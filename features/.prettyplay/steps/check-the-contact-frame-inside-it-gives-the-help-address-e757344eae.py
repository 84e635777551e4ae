# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the contact frame inside it gives the help address",
    origin="generated",
)
def step(page) -> None:
    questions = page.frame_locator("iframe[title='questions']")
    contact = questions.frame_locator("iframe[title='contact']")
    expect(contact.get_by_text("help@shop.test")).to_be_visible()
