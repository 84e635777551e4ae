# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="action",
    sentence='I attach the receipt "{}"',
    values=("receipt.pdf",),
    origin="generated",
)
def step(page) -> None:
    page.get_by_label("Receipt").set_input_files("receipt.pdf")
