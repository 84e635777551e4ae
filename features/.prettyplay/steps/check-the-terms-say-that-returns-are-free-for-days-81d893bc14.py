# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence="the terms say that returns are free for {} days",
    values=("30",),
    origin="generated",
)
def step(page) -> None:
    expect(page.get_by_role("heading", level=1)).to_have_text("Terms of sale")
    expect(page.get_by_text("Returns are free for 30 days.")).to_be_visible()
