"""Structured output: verdict requests carry their JSON schema in ``response_format`` where the
server takes it, through the real openai client against the scripted server."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay
from prettyplay_behave.errors import ConfigError, ProviderUnavailableError
from prettyplay_behave.llm.client import LLMClient
from prettyplay_behave.llm.purposes import Purpose
from prettyplay_behave.vocabulary import GroupLabel, StepLabel
from tests.support.llm_server import (
    CLEAN_GATE,
    ScriptedLLMServer,
    code_answer,
    http_error,
    json_answer,
)
from tests.support.shop_steps import ACCEPT, OPEN_SHOP

MESSAGES = [{"role": "user", "content": "judge"}]
VERDICTS = {
    "classify": json_answer({"label": "rot", "explanation": "e", "recommendation": "r"}),
    "diagnose": json_answer(
        {"label": "incurable", "root_step": None, "explanation": "e", "recommendation": "r"}
    ),
    "gate": CLEAN_GATE,
}


@pytest.fixture
def server(module_server: ScriptedLLMServer) -> ScriptedLLMServer:
    """The module's server, answering every purpose after the rules a test adds first."""
    module_server.reset()
    module_server.fallback = lambda request: VERDICTS.get(
        str(request.purpose), code_answer(OPEN_SHOP)
    )
    return module_server


def client_for(server: ScriptedLLMServer, **settings) -> LLMClient:
    settings = {"llm_timeout": 5.0, "llm_retries": 2, **settings}
    return LLMClient(PrettyConfig(**settings), environ=server.env)


def ask_all(client: LLMClient) -> None:
    for purpose in Purpose:
        client.ask(purpose, step="click Checkout", messages=MESSAGES)


# -- what is sent -------------------------------------------------------------------------------


def test_by_default_verdict_requests_carry_their_schema_and_code_requests_none(server) -> None:
    ask_all(client_for(server))
    sent = {str(r.purpose): r.response_format for r in server.requests}
    for purpose in Purpose:
        if not purpose.verdict:
            assert sent[purpose] is None, purpose
            continue
        assert sent[purpose] == {
            "type": "json_schema",
            "json_schema": {
                "name": f"prettyplay_{purpose}",
                "schema": purpose.schema,
                "strict": False,
            },
        }


def test_the_schemas_hold_the_shapes_the_readers_take() -> None:
    classify = Purpose.CLASSIFY.schema
    assert classify is not None and Purpose.DIAGNOSE.schema and Purpose.GATE.schema
    assert classify["properties"]["label"]["enum"] == [str(label) for label in StepLabel]
    assert classify["required"] == ["label", "explanation", "recommendation"]
    assert classify["properties"]["root_step"] == {"type": ["string", "null"]}  # optional
    diagnose = Purpose.DIAGNOSE.schema
    assert diagnose["properties"]["label"]["enum"] == [str(label) for label in GroupLabel]
    assert diagnose["required"] == ["label", "root_step", "explanation", "recommendation"]
    finding = Purpose.GATE.schema["properties"]["findings"]["items"]
    assert finding["properties"]["dimension"]["enum"] == ["instructions", "adequacy"]
    assert finding["properties"]["severity"]["enum"] == ["high", "medium", "low"]
    assert finding["required"] == ["dimension", "severity", "message"]
    for purpose, answer in VERDICTS.items():  # an answer of the schema's shape is read
        Purpose.of(purpose).read(answer)
    assert Purpose.GENERATE.response_format is None


def test_off_never_sends_a_schema(server) -> None:
    ask_all(client_for(server, structured_output="off"))
    assert len(server.requests) == len(Purpose)
    assert all(r.response_format is None for r in server.requests)


def test_on_always_sends_it(server) -> None:
    client = client_for(server, structured_output="on")
    ask_all(client)
    ask_all(client)
    verdicts = [r for r in server.requests if Purpose.of(str(r.purpose)).verdict]
    assert len(verdicts) == 6 and all(r.response_format for r in verdicts)


# -- a server without structured output ---------------------------------------------------------


def test_auto_asks_again_without_it_once_and_remembers_for_the_run(
    server, caplog: pytest.LogCaptureFixture
) -> None:
    server.refuse_response_format = True
    caplog.set_level(logging.INFO, logger="prettyplay")
    client = client_for(server)
    first = client.ask("gate", step="click Checkout", messages=MESSAGES)
    assert first.text == CLEAN_GATE
    assert [(r.purpose, r.response_format is not None) for r in server.requests] == [
        ("gate", True),  # refused: HTTP 400 naming response_format
        ("gate", False),  # the one retry
    ]
    ask_all(client)
    ask_all(client)
    later = server.requests[2:]
    assert len(later) == 2 * len(Purpose)
    assert all(r.response_format is None for r in later)
    # both requests of the first ask were sent, so both count
    assert client.usage[Purpose.GATE].requests == 4
    assert client.calls == 2 + 2 * len(Purpose)
    refused = [r for r in caplog.records if getattr(r, "event", "") == "structured_output_refused"]
    assert len(refused) == 1
    assert "verdict requests go without a JSON schema for the rest of the run" in (
        refused[0].getMessage()
    )


def test_on_makes_a_refusal_a_misconfiguration_naming_the_setting(server) -> None:
    server.refuse_response_format = True
    client = client_for(server, structured_output="on")
    with pytest.raises(ConfigError) as caught:
        client.ask("classify", step="click Checkout", messages=MESSAGES)
    message = str(caught.value)
    assert message.startswith("setting 'structured_output' = 'on' (from PrettyConfig): ")
    assert "refused the JSON schema of a verdict request (HTTP 400: Invalid parameter: " in message
    assert "set prettyplay.structured_output=auto to ask again without it, or off" in message
    assert len(server.requests) == 1  # no retry
    client.ask("generate", step="click Checkout", messages=MESSAGES)  # code requests go on


def test_another_bad_request_is_not_taken_for_a_refused_schema(server) -> None:
    server.on("classify", http_error(400, "This model's maximum context length is 8192 tokens."))
    client = client_for(server)
    with pytest.raises(ProviderUnavailableError, match=r"refused the request \(HTTP 400"):
        client.ask("classify", step="click Checkout", messages=MESSAGES)
    assert len(server.requests) == 1
    client.ask("gate", step="click Checkout", messages=MESSAGES)
    assert server.requests[-1].response_format is not None  # still sent: nothing was refused


def test_a_refusal_worded_by_a_validating_server(server) -> None:
    # FastAPI-style servers answer 422 with the offending field in the details
    detail = {"detail": [{"loc": ["body", "response_format"], "msg": "extra fields not permitted"}]}
    server.on("diagnose", http_error(422, json.dumps(detail)))
    client = client_for(server)
    client.ask("diagnose", step="click Checkout", messages=MESSAGES)
    assert [r.response_format is not None for r in server.requests] == [True, False]
    assert client.schema_refused


# -- in a run -----------------------------------------------------------------------------------


def test_a_run_against_a_server_without_structured_output(
    shop, tmp_path: Path, llm_env: ScriptedLLMServer, browser
) -> None:
    llm_env.refuse_response_format = True
    llm_env.on("generate", code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("generate", code_answer(ACCEPT), step="accept the cookie banner")
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    config = PrettyConfig(base_url=shop.url, cache_dir=str(tmp_path / "cache"), llm_retries=0)
    with PrettyPlay("visit", config=config, browser=browser) as t:
        assert t.step("open the shop").origin == "generated"
        assert t.step("accept the cookie banner").origin == "generated"
        usage = t.runtime.llm.usage
    sent = [(r.purpose, r.step, r.response_format is not None) for r in llm_env.requests]
    assert sent == [
        ("generate", "open the shop", False),
        ("gate", "open the shop", True),
        ("gate", "open the shop", False),
        ("generate", "accept the cookie banner", False),
        ("gate", "accept the cookie banner", False),
    ]
    assert usage[Purpose.GATE].requests == 3  # the refused request counts: it was sent
