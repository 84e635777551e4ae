"""A scripted provider: the engine's requests answered in process, from the same script as the
scripted server, with no HTTP and no openai client.

For the engine's own rules (routing, budgets, verdicts, groups), which need a real page but not
the wire; the tests of the openai client itself, and of everything a provider's failures do to
a run, keep the real client talking HTTP to :class:`~tests.support.llm_server.ScriptedLLMServer`::

    provider = ScriptedProvider()
    provider.on("generate", code_answer("def step(page) -> None:\\n    page.goto('/')"))
    with PrettyPlay("t", config=config, browser=browser, provider=provider) as t:
        t.step("open the shop")
    assert provider.requests_for("generate")[0].model == "gpt-4.1-mini"

A reply with an HTTP error status makes the request fail as the openai provider would after its
retries (:class:`ProviderUnavailableError`); a server refusing ``response_format`` raises
:class:`SchemaRefused`; a dropped connection is unavailable too. Delays are slept.
"""

from __future__ import annotations

import time

from prettyplay_behave.errors import ProviderUnavailableError
from prettyplay_behave.llm.provider import Answer, Completion, SchemaRefused
from tests.support.llm_server import RecordedRequest, Scripted, _estimate_tokens

WHERE = "the scripted provider"


class ScriptedProvider(Scripted):
    """Answers from rules (``on``), records every request (``requests``)."""

    where = WHERE

    def unavailable_reason(self) -> str | None:
        return None

    def complete(self, completion: Completion) -> Answer:
        body: dict[str, object] = {"model": completion.model, "messages": completion.messages}
        if completion.response_format is not None:
            body["response_format"] = completion.response_format
        request = RecordedRequest(
            method="CALL",
            path="",
            headers={},
            purpose=str(completion.purpose),
            step=completion.step,
            body=body,
            time=time.time(),
        )
        reply = self._record(request)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            raise ProviderUnavailableError(f"the LLM is unavailable: {WHERE} dropped the request")
        if reply.status != 200 or reply.body is not None:
            error = (reply.body or {}).get("error") or {}
            message = error.get("message", "") if isinstance(error, dict) else ""
            if reply.status == 400 and "response_format" in str(reply.body):
                raise SchemaRefused(f"{WHERE} refused response_format", message)
            raise ProviderUnavailableError(
                f"the LLM is unavailable: {WHERE} answered HTTP {reply.status}: {message}"
            )
        text = reply.text or ""
        return Answer(
            text, reply.finish_reason, _estimate_tokens(request.text), _estimate_tokens(text)
        )
