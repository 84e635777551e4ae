"""Every provider recipe of docs/llm-providers.md, run as written against the scripted server.

No real provider is reachable here: each recipe's environment and settings are taken from the
page, only the host and port of its base URL swapped for the scripted server's, and the client
is run with them. What is checked is what the recipe decides: the API path, the key, the model
name, the settings, and that verdict requests ask for structured output."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from prettyplay_behave.config import resolve_config
from prettyplay_behave.llm.client import LLMClient
from prettyplay_behave.llm.openai_provider import DEFAULT_BASE_URL, OpenAIProvider
from prettyplay_behave.llm.purposes import Purpose
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "llm-providers.md"
PROVIDERS = ("OpenAI", "Azure OpenAI", "Ollama", "vLLM", "LM Studio", "LiteLLM proxy")


def recipes() -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Provider -> (environment, -D settings) of its block under "Provider recipes"."""
    text = PAGE.read_text()
    section = text[text.index("## Provider recipes") :]
    section = section[: section.index("\n## ", 1)]
    found = {}
    for name, block in re.findall(r"^### (.+?)\n.*?```bash\n(.*?)```", section, re.S | re.M):
        environ, defines = {}, {}
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["export"]:
                key, _, value = words[1].partition("=")
                environ[key] = value
            elif words[:1] == ["behave"]:
                for flag, value in zip(words[1::2], words[2::2], strict=True):
                    assert flag == "-D", line
                    defines[value.partition("=")[0]] = value.partition("=")[2]
        found[name] = (environ, defines)
    return found


RECIPES = recipes()


def test_the_page_has_a_recipe_for_every_provider() -> None:
    assert tuple(RECIPES) == PROVIDERS


def pointed_at(environ: dict[str, str], server: ScriptedLLMServer) -> dict[str, str]:
    """The recipe's environment with its endpoint's host and port swapped for the server's."""
    url = urlsplit(environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL))
    local = urlsplit(server.base_url)
    return {**environ, "OPENAI_BASE_URL": url._replace(scheme="http", netloc=local.netloc).geturl()}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_recipe_as_written_reaches_its_server(provider: str, llm: ScriptedLLMServer) -> None:
    environ, defines = RECIPES[provider]
    assert environ["OPENAI_API_KEY"]  # a key, even a dummy one, is always needed
    base = environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL)
    assert base.startswith(("http://", "https://")), base
    if provider != "OpenAI":
        assert not base.startswith("https://api.openai.com")
    llm.on("generate", code_answer("def step(page) -> None:\n    page.goto('/')"))
    llm.on("gate", CLEAN_GATE)
    config = resolve_config(defines=defines)
    client = LLMClient(config, environ=pointed_at(environ, llm))
    client.ask("generate", step="open the shop", messages=[{"role": "user", "content": "x"}])
    client.ask("gate", step="open the shop", messages=[{"role": "user", "content": "x"}])
    path = urlsplit(base).path.rstrip("/")
    for request in llm.requests:
        assert request.path == f"{path}/chat/completions"
        assert request.headers["authorization"] == f"Bearer {environ['OPENAI_API_KEY']}"
        assert request.model == defines["prettyplay.model"]
    assert [r.response_format is not None for r in llm.requests] == [False, True]
    assert client.total_usage.requests == 2
    # the recipe's settings take: a priced recipe shows a cost, and a local one tokens only
    priced = "prettyplay.price_per_mtok_input" in defines or provider == "OpenAI"
    assert (client.costs[Purpose.GATE] is not None) == priced, provider


def test_the_openai_recipe_leaves_the_default_endpoint() -> None:
    environ, _ = RECIPES["OpenAI"]
    assert "OPENAI_BASE_URL" not in environ
    assert OpenAIProvider(resolve_config(), environ=environ).base_url == "https://api.openai.com/v1"


def test_the_local_recipes_give_small_models_time() -> None:
    for provider in ("Ollama", "vLLM", "LM Studio"):
        _, defines = RECIPES[provider]
        assert float(defines["prettyplay.llm_timeout"]) >= 300, provider
