# prettyplay step library (format 3): read by prettyplay without importing it.


@step(
    kind="check",
    sentence='invoice {} downloads as "{}"',
    values=("1001", "invoice-1001.txt"),
    origin="generated",
)
def step(page) -> None:
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download invoice 1001").click()
    assert download_info.value.suggested_filename == "invoice-1001.txt"
