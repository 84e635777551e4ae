# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the deal of the day is green tea at half price",
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("heading", level=1)).to_have_text("Deal of the day")
    expect(page.get_by_text("Green Tea at half price")).to_be_visible()
