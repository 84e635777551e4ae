"""Fixtures of the fault tests: no LLM at all, and a page of the module's browser for tests
that drive the Python API in this process (``llm_env`` comes from tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLM configured: a red replay fails at once, without a request."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def page(page_on, shop):
    """A fresh context and page of the module's browser, on the demo shop."""
    return page_on(shop.url)
