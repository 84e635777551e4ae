"""LLM faults, end to end through a step: every one ends in a clear error or a clean retry,
within a bounded time, and a failed step writes nothing to the cache."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave import (
    ConfigError,
    IncurableStepError,
    PrettyPlay,
    ProviderUnavailableError,
)
from prettyplay_behave.cache import file_name
from prettyplay_behave.cache import store as cache_module
from tests.faults.support import api_config, folder_bytes, plant
from tests.support.caches import steps
from tests.support.llm_server import (
    CLEAN_GATE,
    Reply,
    ScriptedLLMServer,
    answer,
    code_answer,
    delay,
    drop,
    forbidden,
    http_error,
    insufficient_quota,
    json_answer,
    model_not_found,
    rate_limited,
    server_error,
    unauthorized,
)
from tests.support.shop_steps import ACCEPT, BROKEN_ACCEPT, OPEN_SHOP

INCURABLE = json_answer(
    {"label": "incurable", "explanation": "no code came", "recommendation": "rephrase the step"}
)
FLAKY = json_answer({"label": "flaky", "explanation": "e", "recommendation": "r"})
MEGABYTE = 1_000_000


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose listener never accepts and whose backlog is full: a connect times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = int(listener.getsockname()[1])
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield port
    finally:
        for sock in [*fillers, listener]:
            sock.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the provider is unavailable ---------------------------------------------------------------


@pytest.mark.parametrize("fault", ["read timeout", "connect timeout", "refused"])
def test_an_unreachable_provider_is_unavailable_in_bounded_time_and_writes_nothing(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, monkeypatch, request, fault: str
) -> None:
    timeout, retries = 1.0, 1
    base_url = llm_env.base_url
    if fault == "read timeout":
        llm_env.on("generate", delay(30, code_answer(OPEN_SHOP)), repeat=True)
    elif fault == "connect timeout":
        base_url = f"http://127.0.0.1:{request.getfixturevalue('unanswered_port')}/v1"
    else:
        base_url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    config = api_config(shop.url, tmp_path / "cache", llm_timeout=timeout, llm_retries=retries)
    with PrettyPlay("visit", config=config, page=page) as t:
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError) as caught:
            t.step("open the shop")
        elapsed = time.monotonic() - started
        assert t.runtime.llm.calls == 1
        # the client stays down for the run: the next step fails without sending a request
        sent = len(llm_env.requests)
        with pytest.raises(ProviderUnavailableError) as second:
            t.step("accept the cookie banner")
        assert not t.runtime.llm.available
        assert t.runtime.llm.calls == 1
        assert len(llm_env.requests) == sent
        assert t.page.url == "about:blank"  # no code ever ran
    message = str(caught.value)
    if fault == "refused":
        assert message.startswith(f"the LLM is unavailable: cannot connect to {base_url} (")
        assert "Connection refused" in message and "check OPENAI_BASE_URL" in message
    else:
        assert message == (
            f"the LLM is unavailable: no answer from {base_url} within llm_timeout=1 s "
            "(llm_retries=1); check that the server is up, or raise prettyplay.llm_timeout "
            "or prettyplay.llm_retries"
        )
    assert str(second.value) == message
    # each attempt gave up at llm_timeout: long before the server's 30 s answer, or the
    # system's connect timeout (about two minutes)
    assert elapsed < 15
    if fault == "read timeout":
        assert len(llm_env.requests_for("generate")) == retries + 1
    assert folder_bytes(tmp_path / "cache") == {}


# -- transient failures are retried --------------------------------------------------------------


RETRY_AFTER_SECONDS = http_error(
    429,
    "Rate limit reached; try again in 1s.",
    code="rate_limit_exceeded",
    error_type="requests",
    headers={"retry-after": "1"},
)


@pytest.mark.parametrize(
    "first",
    [server_error(), rate_limited(retry_after_ms=50), RETRY_AFTER_SECONDS, drop()],
    ids=["500", "429 retry-after-ms", "429 retry-after", "dropped connection"],
)
def test_a_transient_failure_is_retried_and_the_step_written_once(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, monkeypatch, first: Reply
) -> None:
    llm_env.on("generate", first, code_answer(OPEN_SHOP), step="open the shop")
    llm_env.on("gate", server_error(), CLEAN_GATE)
    writes: list[Path] = []
    replace = cache_module._replace

    def counted(path: Path, content: bytes) -> None:
        writes.append(path)
        replace(path, content)

    monkeypatch.setattr(cache_module, "_replace", counted)
    config = api_config(shop.url, tmp_path / "cache", llm_retries=2)
    with PrettyPlay("visit", config=config, page=page) as t:
        run = t.step("open the shop")
        assert (run.origin, t.page.url) == ("generated", shop.url + "/")
        assert t.runtime.engine.keeper.writes == 1
    assert [r.purpose for r in llm_env.requests] == ["generate", "generate", "gate", "gate"]
    assert writes == [tmp_path / "cache" / "steps" / file_name(("action", "open the shop", ""))]
    assert [e["sentence"] for e in steps(tmp_path / "cache")] == ["open the shop"]
    generates = llm_env.requests_for("generate")
    gap = generates[1].time - generates[0].time
    if first is RETRY_AFTER_SECONDS:
        # the server's retry-after is honoured (the client's own backoff is about 0.5 s)
        assert gap >= 0.9


# -- misconfiguration fails fast ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "setting", "says"),
    [
        (insufficient_quota(), "OPENAI_API_KEY", "the account quota is exhausted (429"),
        (unauthorized(), "OPENAI_API_KEY", "rejected the API key (401: Incorrect API key"),
        (forbidden(), "OPENAI_API_KEY", "refused the request (403: You are not allowed"),
        (model_not_found("gpt-4.1-mini"), "model", "does not know the model"),
    ],
    ids=["quota", "401", "403", "unknown model"],
)
def test_a_misconfiguration_fails_fast_naming_the_setting(
    page,
    shop,
    tmp_path: Path,
    llm_env: ScriptedLLMServer,
    reply: Reply,
    setting: str,
    says: str,
) -> None:
    llm_env.on("generate", reply, repeat=True)
    config = api_config(shop.url, tmp_path / "cache", llm_retries=3)
    with PrettyPlay("visit", config=config, page=page) as t:
        with pytest.raises(ConfigError) as caught:
            t.step("open the shop")
    message = str(caught.value)
    assert message.startswith(f"setting {setting!r} = ")
    assert says in message
    assert "test-key" not in message  # the key itself is never shown
    assert len(llm_env.requests) == 1  # no retry loop (llm_retries=3)
    assert folder_bytes(tmp_path / "cache") == {}


# -- garbage answers ----------------------------------------------------------------------------


GARBAGE_CODE = {
    "prose": (
        answer("I would open the shop and then look around."),
        "the answer holds 0 code blocks and is not step code itself",
    ),
    "two code blocks": (
        answer(code_answer(OPEN_SHOP) + "\n\nor perhaps:\n\n" + code_answer(ACCEPT)),
        "the answer holds 2 code blocks that define step; expected exactly one",
    ),
    "refusal": (
        answer("I'm sorry, but I can't help with that."),
        "the answer holds 0 code blocks and is not step code itself",
    ),
    "finish_reason=length": (
        answer('```python\ndef step(page) -> None:\n    page.goto("/', finish_reason="length"),
        "a code block is never closed (the answer looks truncated)",
    ),
    "1 MB": (
        answer(code_answer(OPEN_SHOP, prose="x" * MEGABYTE)),
        "the answer is 1,000,0",  # ...characters long; the limit is 100,000
    ),
}


@pytest.mark.parametrize("kind", list(GARBAGE_CODE))
def test_a_garbage_code_answer_is_recorded_unparseable_and_never_passes(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, kind: str
) -> None:
    reply, reason = GARBAGE_CODE[kind]
    llm_env.on("generate", reply)
    llm_env.on("classify", INCURABLE)
    config = api_config(shop.url, tmp_path / "cache", generation_attempts=1)
    with PrettyPlay("visit", config=config, page=page) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
        assert t.page.url == "about:blank"  # none of the code ran
        run = t.state.scenario[-1]
    assert [a.outcome for a in run.history] == ["unparseable answer"]
    record = run.history[0].text
    assert record.startswith(reason)
    assert f"finish_reason: {reply.finish_reason}" in record
    render = caught.value.render()
    assert render.startswith("IncurableStepError: the generation budget is exhausted\n---\n")
    assert f"error: {reason}" in render
    assert run.outcome == "failed"
    assert [r.purpose for r in llm_env.requests] == ["generate", "classify"]
    assert folder_bytes(tmp_path / "cache") == {}


def test_a_runaway_answer_does_not_ride_the_later_requests_whole(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer
) -> None:
    llm_env.on("generate", code_answer(OPEN_SHOP, prose="x" * MEGABYTE))
    llm_env.on("classify", INCURABLE)
    config = api_config(shop.url, tmp_path / "cache", generation_attempts=1)
    with PrettyPlay("visit", config=config, page=page) as t:
        with pytest.raises(IncurableStepError):
            t.step("open the shop")
    classify = llm_env.requests_for("classify")[0]
    # a request of 250,000 tokens is refused by any provider, and paid for by some
    assert len(classify.text) < 200_000


GARBAGE_VERDICTS = {
    "prose": (answer("The step looks broken to me."), "the answer is not valid JSON"),
    "truncated JSON": (
        answer('{"label": "rot", "explanation": "the butt'),
        "the answer is not valid JSON: an object is never closed",
    ),
    "refusal": (answer("I'm sorry, but I can't help with that."), "the answer is not valid JSON"),
    "two objects, neither a verdict": (
        answer(f"```json\n{FLAKY}\n```\n\n```json\n{FLAKY}\n```"),
        "the verdict: label 'flaky' is not one of product_defect, rot, fixable, incurable (and "
        "none of the other 1 fits either)",
    ),
    "finish_reason=length": (
        answer('{"label": "rot", "explanation": "', finish_reason="length"),
        "the answer is not valid JSON",
    ),
    "1 MB": (
        answer(json_answer({"label": "rot", "explanation": "x" * MEGABYTE, "recommendation": ""})),
        "the answer is 1,000,0",
    ),
}


@pytest.mark.parametrize("kind", list(GARBAGE_VERDICTS))
def test_a_garbage_classification_degrades_to_incurable_and_never_heals(
    page,
    shop,
    tmp_path: Path,
    llm_env: ScriptedLLMServer,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    reply, reason = GARBAGE_VERDICTS[kind]
    cache_dir = tmp_path / "cache"
    plant(
        cache_dir,
        "visit",
        ("step", "open the shop", OPEN_SHOP),
        ("step", "accept the cookie banner", BROKEN_ACCEPT),
    )
    before = folder_bytes(cache_dir)
    llm_env.on("classify", reply)
    caplog.set_level(logging.WARNING, logger="prettyplay")
    with PrettyPlay("visit", config=api_config(shop.url, cache_dir), page=page) as t:
        t.step("open the shop")
        with pytest.raises(IncurableStepError) as caught:
            t.step("accept the cookie banner")
    render = caught.value.render()
    assert render.startswith(
        "IncurableStepError: the cached step failed and cannot be healed\n---\n"
    )
    assert f"explanation: the classification answer was unparseable: {reason}" in render
    degraded = [r for r in caplog.records if getattr(r, "event", "") == "classification_degraded"]
    assert len(degraded) == 1 and "taken as incurable" in degraded[0].getMessage()
    assert [r.purpose for r in llm_env.requests] == ["classify"]  # no heal, no retry
    assert folder_bytes(cache_dir) == before


@pytest.mark.parametrize("kind", ["truncated JSON", "refusal", "finish_reason=length"])
def test_a_garbage_gate_verdict_writes_nothing(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, kind: str
) -> None:
    reply, reason = GARBAGE_VERDICTS[kind]
    llm_env.on("generate", code_answer(OPEN_SHOP))
    llm_env.on("gate", reply, repeat=True)
    with PrettyPlay("visit", config=api_config(shop.url, tmp_path / "cache"), page=page) as t:
        with pytest.raises(IncurableStepError) as caught:
            t.step("open the shop")
    render = caught.value.render()
    assert render.startswith(
        "IncurableStepError: the compliance gate could not judge the candidate; "
        "nothing was written\n---\n"
    )
    assert f"error: UnparseableAnswer: {reason}" in render and "(asked twice)" in render
    assert "the gate's last answer (finish_reason: " in render
    assert [r.purpose for r in llm_env.requests] == ["generate", "gate", "gate"]
    assert folder_bytes(tmp_path / "cache") == {}
