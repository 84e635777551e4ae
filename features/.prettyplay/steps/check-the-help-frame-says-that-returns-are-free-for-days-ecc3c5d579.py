# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the help frame says that returns are free for {} days",
    values=("30",),
    origin="generated",
)
def step(page) -> None:
    questions = page.frame_locator("iframe[title='questions']")
    expect(questions.get_by_text("Returns are free for 30 days.")).to_be_visible()
