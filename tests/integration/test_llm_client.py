"""The LLM client against the scripted server, through the real openai client."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import openai
import pytest

from prettyplay_behave.config import PrettyConfig
from prettyplay_behave.errors import ConfigError, ProviderUnavailableError
from prettyplay_behave.llm.client import Answer, LLMClient, Usage
from prettyplay_behave.llm.purposes import Purpose
from tests.support.llm_server import (
    Reply,
    ScriptedLLMServer,
    answer,
    code_answer,
    delay,
    drop,
    forbidden,
    insufficient_quota,
    json_answer,
    model_not_found,
    rate_limited,
    server_error,
    unauthorized,
)

MESSAGES = [
    {"role": "system", "content": "You write step code."},
    {"role": "user", "content": "SENTENCE: click Checkout"},
]
CODE = code_answer("def step(page) -> None:\n    page.get_by_role('button').click()")
VERDICT = json_answer({"label": "rot", "explanation": "moved", "recommendation": "heal"})


@pytest.fixture
def server(module_server: ScriptedLLMServer) -> ScriptedLLMServer:
    module_server.reset()
    return module_server


def client_for(server: ScriptedLLMServer, **settings) -> LLMClient:
    settings.setdefault("llm_timeout", 5.0)
    settings.setdefault("llm_retries", 2)
    return LLMClient(PrettyConfig(**settings), environ=server.env)


def ask(client: LLMClient, purpose: str = "generate", step: str = "click Checkout") -> Answer:
    return client.ask(purpose, step=step, messages=MESSAGES)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- requests and answers ----------------------------------------------------------------------


def test_every_request_names_its_purpose_and_step(server):
    sentence = 'type «Grüße, Zoë» into the "Note" field & press Enter'
    for purpose in Purpose:
        server.on(purpose, "ok")
    client = client_for(server)
    for purpose in Purpose:
        client.ask(purpose, step=sentence, messages=MESSAGES)
    assert [r.purpose for r in server.requests] == list(Purpose)
    for request in server.requests:
        assert request.headers["x-prettyplay-step"] == quote(sentence, safe="")
        assert request.headers["x-prettyplay-step"].isascii()
        assert request.step == sentence
        assert request.messages == MESSAGES


def test_the_model_and_temperature_follow_the_purpose(server):
    server.on(None, "ok", repeat=True)
    client = client_for(server, model="gen-model", classification_model="verdict-model")
    for purpose in Purpose:
        ask(client, purpose)
    models = {r.purpose: r.model for r in server.requests}
    assert models == {
        "generate": "gen-model",
        "heal": "gen-model",
        "steer": "gen-model",
        "classify": "verdict-model",
        "diagnose": "verdict-model",
        "gate": "verdict-model",
    }
    assert all(r.temperature == 0 for r in server.requests)


def test_verdict_requests_use_the_model_without_a_classification_model(server):
    server.on(None, "ok", repeat=True)
    ask(client_for(server, model="only-model"), "gate")
    assert server.requests[0].model == "only-model"


def test_an_answer_and_the_usage_by_purpose(server):
    server.on("generate", CODE, answer("", finish_reason="length"))
    server.on("classify", VERDICT)
    client = client_for(server)

    first = ask(client)
    assert first.text == CODE
    assert first.finish_reason == "stop"
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    empty = ask(client)
    assert (empty.text, empty.finish_reason, empty.completion_tokens) == ("", "length", 0)
    verdict = ask(client, "classify")

    assert client.calls == 3
    assert client.usage == {
        "generate": Usage(2, first.prompt_tokens + empty.prompt_tokens, first.completion_tokens),
        "classify": Usage(1, verdict.prompt_tokens, verdict.completion_tokens),
    }
    total = client.total_usage
    assert total.requests == 3
    assert total.total_tokens == sum(
        a.prompt_tokens + a.completion_tokens for a in (first, empty, verdict)
    )


def test_one_debug_record_per_request_without_message_contents(server, caplog):
    server.on("generate", CODE)
    caplog.set_level(logging.DEBUG, logger="prettyplay")
    answer = ask(client_for(server))
    records = [r for r in caplog.records if getattr(r, "event", None) == "llm_request"]
    assert len(records) == 1
    assert records[0].levelno == logging.DEBUG
    assert records[0].purpose == "generate"
    assert records[0].tokens == answer.prompt_tokens + answer.completion_tokens
    assert not any("SENTENCE" in r.getMessage() for r in caplog.records if r.name == "prettyplay")


def test_an_unknown_purpose_sends_nothing(server):
    client = client_for(server)
    with pytest.raises(ValueError, match="unknown purpose"):
        ask(client, "chat")
    assert server.requests == [] and client.calls == 0


# -- unavailable -------------------------------------------------------------------------------


def test_no_key_means_unavailable_and_nothing_is_sent(server):
    client = LLMClient(PrettyConfig(), environ={"OPENAI_BASE_URL": server.base_url})
    assert not client.available
    with pytest.raises(ProviderUnavailableError) as caught:
        ask(client)
    message = str(caught.value)
    assert message.startswith("the LLM is unavailable: no API key is configured")
    assert "set OPENAI_API_KEY (and OPENAI_BASE_URL for a local or compatible server" in message
    assert server.requests == [] and client.calls == 0
    assert not LLMClient(PrettyConfig(), environ={}).available


def test_the_openai_client_is_built_on_the_first_request(server, monkeypatch):
    built = []
    real = openai.OpenAI

    def spy(*args, **kwargs):
        built.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(openai, "OpenAI", spy)
    server.on("generate", "one", "two")
    client = client_for(server, llm_timeout=7.0, llm_retries=1)
    assert client.available
    assert built == []
    ask(client)
    ask(client)
    assert len(built) == 1
    assert (built[0]["timeout"], built[0]["max_retries"]) == (7.0, 1)
    assert built[0]["base_url"] == server.base_url


def test_a_server_error_is_retried(server):
    server.on("generate", server_error(), CODE)
    client = client_for(server)
    assert ask(client).text == CODE
    assert len(server.requests) == 2
    assert client.calls == 1 and client.usage[Purpose.GENERATE].requests == 1


def test_a_rate_limit_is_retried_after_the_server_asked_delay(server):
    server.on("heal", rate_limited(retry_after_ms=300), CODE)
    assert ask(client_for(server), "heal").text == CODE
    first, second = server.requests
    assert second.time - first.time >= 0.3


def test_a_dropped_connection_is_retried(server):
    server.on("generate", drop(), CODE)
    assert ask(client_for(server)).text == CODE
    assert len(server.requests) == 2


def test_a_server_that_keeps_failing_makes_the_llm_unavailable(server):
    server.on("generate", server_error("the model is overloaded"), repeat=True)
    client = client_for(server, llm_timeout=2.0, llm_retries=2)
    with pytest.raises(ProviderUnavailableError) as caught:
        ask(client)
    message = str(caught.value)
    assert "the LLM is unavailable" in message
    assert "HTTP 500" in message and "the model is overloaded" in message
    assert "OPENAI_BASE_URL" in message
    assert len(server.requests) == 3

    # The client stays down for the rest of the run: no further request is sent.
    assert not client.available
    with pytest.raises(ProviderUnavailableError, match="HTTP 500"):
        ask(client, "classify")
    assert len(server.requests) == 3


@pytest.mark.parametrize("retries", [0, 1])
def test_a_server_slower_than_llm_timeout(server, retries):
    server.on("generate", delay(30, CODE), repeat=True)
    client = client_for(server, llm_timeout=1.0, llm_retries=retries)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as caught:
        ask(client)
    elapsed = time.monotonic() - started
    # it waited llm_timeout and gave up long before the server's answer (30 s) came
    assert 1.0 <= elapsed < 15
    assert "within llm_timeout=1 s" in str(caught.value)
    assert "prettyplay.llm_timeout" in str(caught.value)
    assert len(server.requests) == retries + 1


def test_a_refused_connection_makes_the_llm_unavailable():
    port = closed_port()
    environ = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "test-key"}
    client = LLMClient(PrettyConfig(llm_timeout=2.0, llm_retries=1), environ=environ)
    with pytest.raises(ProviderUnavailableError) as caught:
        ask(client)
    message = str(caught.value)
    assert f"cannot connect to http://127.0.0.1:{port}/v1" in message
    assert "OPENAI_BASE_URL" in message
    assert not client.available


def test_the_run_wide_cap(server):
    server.on("generate", "one", "two", "three")
    client = client_for(server, max_llm_calls=2)
    ask(client)
    ask(client)
    assert not client.available
    with pytest.raises(ProviderUnavailableError) as caught:
        ask(client)
    assert "the run-wide cap max_llm_calls=2 is reached" in str(caught.value)
    assert len(server.requests) == 2 and client.calls == 2


def test_a_cap_of_zero_sends_nothing(server):
    client = client_for(server, max_llm_calls=0)
    assert not client.available
    with pytest.raises(ProviderUnavailableError, match="max_llm_calls=0"):
        ask(client)
    assert server.requests == []


# -- misconfigured -----------------------------------------------------------------------------


def test_a_rejected_key_fails_fast(server):
    server.on("generate", unauthorized(), repeat=True)
    with pytest.raises(ConfigError) as caught:
        ask(client_for(server))
    error = caught.value
    assert error.key == "OPENAI_API_KEY"
    assert error.value == "(hidden)"
    assert "401" in error.problem
    assert "test-key" not in str(error)
    assert len(server.requests) == 1


def test_a_forbidden_request_names_the_key_and_its_permissions(server):
    server.on("generate", forbidden(), repeat=True)
    with pytest.raises(ConfigError) as caught:
        ask(client_for(server))
    assert caught.value.key == "OPENAI_API_KEY"
    assert "permissions" in caught.value.problem and "403" in caught.value.problem
    assert "test-key" not in str(caught.value)
    assert len(server.requests) == 1


def test_an_unknown_model_names_the_setting(server):
    server.on("generate", model_not_found("gpt-nope"))
    with pytest.raises(ConfigError) as caught:
        ask(client_for(server, model="gpt-nope"))
    assert (caught.value.key, caught.value.value) == ("model", "gpt-nope")
    assert "set prettyplay.model" in str(caught.value)
    assert len(server.requests) == 1


def test_an_unknown_classification_model_names_its_setting(server):
    server.on("diagnose", model_not_found("judge-nope"))
    with pytest.raises(ConfigError) as caught:
        ask(client_for(server, classification_model="judge-nope"), "diagnose")
    assert (caught.value.key, caught.value.value) == (
        "classification_model",
        "judge-nope",
    )


def test_an_exhausted_quota_fails_fast(server):
    server.on("generate", insufficient_quota(), repeat=True)
    client = client_for(server, llm_retries=3)
    with pytest.raises(ConfigError) as caught:
        ask(client)
    assert caught.value.key == "OPENAI_API_KEY"
    assert "quota" in caught.value.problem
    assert len(server.requests) == 1


def test_an_unscripted_request_fails_loudly(server):
    with pytest.raises(
        ProviderUnavailableError, match="no scripted answer for purpose=gate step=x"
    ):
        ask(client_for(server), "gate", step="x")
    assert len(server.requests) == 1


def test_another_process_reaches_the_server(server):
    server.on("generate", CODE)
    script = (
        "from prettyplay_behave.config import PrettyConfig\n"
        "from prettyplay_behave.llm.client import LLMClient\n"
        "client = LLMClient(PrettyConfig(llm_timeout=5.0))\n"
        "print(client.ask('generate', step='open the shop', messages=[]).text)\n"
    )
    env = {**os.environ, **server.env}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == CODE
    assert server.requests[0].step == "open the shop"


def test_a_response_that_is_no_chat_completion(server):
    server.on("generate", Reply(body={"choices": [{"message": None}]}), CODE)
    client = client_for(server)
    with pytest.raises(ProviderUnavailableError, match="not a chat completion"):
        ask(client)
    assert ask(client).text == CODE
