"""The TLS the openai client is given: none to load for a plain-HTTP server reached directly,
the system's certificates (the HTTP library's default) for anything else."""

from __future__ import annotations

import ssl

import pytest

from prettyplay_behave.llm.openai_provider import _tls_options

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_plain_http_server_gets_a_context_that_trusts_no_certificate() -> None:
    context = _tls_options("http://127.0.0.1:11434/v1")["verify"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        ("https://api.openai.com/v1", None),
        ("http://models.internal/v1", "HTTP_PROXY"),
        ("http://models.internal/v1", "ALL_PROXY"),
    ],
)
def test_https_or_a_proxy_keeps_the_http_librarys_own_verification(
    url: str, proxy: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if proxy:
        monkeypatch.setenv(proxy, "https://proxy.internal:3128")
    assert _tls_options(url) == {}
