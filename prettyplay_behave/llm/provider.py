"""The model behind every request: a small interface, and what it hands back.

A provider turns one :class:`Completion` (the model, the messages, the JSON schema a verdict is
asked for in) into an :class:`Answer`. The run's :class:`~.client.LLMClient` keeps everything
that is the same for any model: the purposes, the ``max_llm_calls`` cap, usage and cost, and
``structured_output``. The default provider is the openai client (:mod:`.openai_provider`),
which serves OpenAI and every OpenAI-compatible server; another is handed to the runtime
(``Runtime(provider=...)``, ``PrettyPlay(provider=...)``): a tests' scripted provider, or a
client of another API.

What a provider raises, and what follows:

- :class:`~..errors.ProviderUnavailableError`: no request can be answered now (not configured,
  unreachable, failing). A provider that will not recover in this run says so from then on in
  :meth:`Provider.unavailable_reason`, so no further request is sent;
- :class:`~..errors.ConfigError`: a misconfiguration (a rejected key, an unknown model);
- :class:`SchemaRefused`: the server refused the ``response_format`` of a verdict request.
  Under ``structured_output=auto`` the client asks again without it and never sends it again in
  the run; under ``on`` the run stops with a ConfigError naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .purposes import Purpose


@dataclass(frozen=True)
class Answer:
    """The text of one completion and what it cost."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Completion:
    """One request as the provider gets it: the step's sentence travels along for the logs and
    the server (a header of the openai provider)."""

    purpose: Purpose
    model: str
    step: str
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None = None  # a verdict's JSON schema, when asked for


class SchemaRefused(Exception):
    """The server refused a request's ``response_format``; ``text`` says so for the user."""

    def __init__(self, text: str, server_message: str) -> None:
        super().__init__(text)
        self.text = text
        self.server_message = server_message


@runtime_checkable
class Provider(Protocol):
    """What the engine needs of a model: an answer per completion, and whether it may ask."""

    def unavailable_reason(self) -> str | None:
        """Why no request may be sent now (a sentence that starts "the LLM is unavailable:"),
        or None when one may."""
        ...

    def complete(self, completion: Completion) -> Answer:
        """The answer to ``completion``; raises as the module tells."""
        ...

    @property
    def where(self) -> str:
        """Where the answers come from, for messages (an endpoint without credentials)."""
        ...
