"""The LLM client: one request per call, told apart by purpose, to the run's provider.

The client keeps what is the same for any model: which model serves a purpose (a verdict goes to
``classification_model``), the run-wide ``max_llm_calls`` cap, the requests and tokens of every
purpose and their cost, and ``structured_output``. The model itself is behind a
:class:`~.provider.Provider` (the openai client unless another is handed in).

Outcomes a caller tells apart:

- an :class:`Answer` (its text may be empty: the caller records that as unparseable);
- :class:`ProviderUnavailableError`: the provider cannot answer (no key, the server cannot be
  reached or keeps failing after the openai client's own retries), or the run-wide
  ``max_llm_calls`` cap is reached. After a failure of the server the provider stays down for
  the rest of the run;
- :class:`ConfigError`: a misconfiguration the server reports (401, 403, unknown model, exhausted
  quota, a refused ``response_format`` with ``structured_output=on``); it fails fast and names
  the setting to fix.

Verdict requests carry their JSON schema in ``response_format`` (``structured_output``: ``auto``
sends it until a server refuses it, then asks again without it, once, and never sends it again
in the run; ``on`` always; ``off`` never). Code requests never do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ProviderUnavailableError
from ..log_events import LogEvent, record
from .openai_provider import OpenAIProvider
from .prices import Price, price_of
from .provider import Answer, Completion, Provider, SchemaRefused
from .purposes import Purpose

if TYPE_CHECKING:
    from ..config import PrettyConfig

__all__ = ["Answer", "LLMClient", "Usage"]


@dataclass(frozen=True)
class Usage:
    """Requests and tokens, of one purpose or of the whole run."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.requests + other.requests,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


class LLMClient:
    """Requests for the engine's purposes, with availability, a cap and usage counts."""

    def __init__(
        self,
        config: PrettyConfig,
        environ: Mapping[str, str] | None = None,
        provider: Provider | None = None,
    ) -> None:
        """``provider`` answers the requests: the openai client (configured from ``environ``,
        by default the process's environment) unless another is given."""
        self.config = config
        self.provider: Provider = provider or OpenAIProvider(config, environ)
        self.calls = 0
        self._usage: dict[Purpose, Usage] = {}
        self._lock = threading.Lock()
        # structured_output=auto: set once a server refused response_format, for the run
        self.schema_refused = False

    # -- availability --------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """Whether a request may be sent: the provider can answer, under ``max_llm_calls``."""
        return self._unavailable_reason() is None

    def require(self) -> None:
        """Raise :class:`ProviderUnavailableError` when no request may be sent."""
        reason = self._unavailable_reason()
        if reason is not None:
            raise ProviderUnavailableError(reason)

    def _unavailable_reason(self) -> str | None:
        reason = self.provider.unavailable_reason()
        if reason:
            return reason
        cap = self.config.max_llm_calls
        if cap is not None and self.calls >= cap:
            return (
                f"the LLM is unavailable: the run-wide cap max_llm_calls={cap} is reached; "
                "raise prettyplay.max_llm_calls or unset it"
            )
        return None

    # -- usage ---------------------------------------------------------------------------------

    @property
    def usage(self) -> dict[Purpose, Usage]:
        """Requests and tokens of this run, by purpose."""
        with self._lock:
            return dict(self._usage)

    @property
    def total_usage(self) -> Usage:
        return sum(self.usage.values(), Usage())

    def model_for(self, purpose: Purpose) -> str:
        """The model that serves ``purpose``: verdict purposes go to the verdict model."""
        return self.config.verdict_model if purpose.verdict else self.config.model

    @property
    def costs(self) -> dict[Purpose, float | None]:
        """US dollars spent by purpose, each priced for the model that served it; None where
        that model has no known price."""
        costs: dict[Purpose, float | None] = {}
        for purpose, usage in self.usage.items():
            price = price_of(self.model_for(purpose), self.config)
            costs[purpose] = (
                price.cost(usage.prompt_tokens, usage.completion_tokens) if price else None
            )
        return costs

    @property
    def prices(self) -> dict[str, Price | None]:
        """The price of every model that served a request of this run."""
        models = {self.model_for(purpose) for purpose in self.usage}
        return {model: price_of(model, self.config) for model in sorted(models)}

    # -- requests ------------------------------------------------------------------------------

    def ask(self, purpose: Purpose | str, *, step: str, messages: list[dict[str, str]]) -> Answer:
        """One completion for ``purpose`` (or its name) about the step whose sentence is ``step``.

        Verdict purposes use the verdict model. Raises ProviderUnavailableError or ConfigError
        as the module tells.
        """
        purpose = Purpose.of(purpose)
        completion = Completion(
            purpose, self.model_for(purpose), step, messages, self._schema_for(purpose)
        )
        self._count(purpose)
        started = time.monotonic()
        answer: Answer | None = None
        try:
            answer = self._complete(completion)
        finally:
            tokens = (answer.prompt_tokens + answer.completion_tokens) if answer else 0
            record(
                LogEvent.LLM_REQUEST,
                "LLM request %s with %s: %s, %d tokens in %.1f s",
                purpose,
                completion.model,
                answer.finish_reason if answer else "failed",
                tokens,
                time.monotonic() - started,
                purpose=str(purpose),
                tokens=tokens,
            )
        with self._lock:
            self._add(purpose, Usage(0, answer.prompt_tokens, answer.completion_tokens))
        return answer

    def _count(self, purpose: Purpose) -> None:
        """Count one request of ``purpose`` before it is sent, so none goes past the cap."""
        with self._lock:
            self.require()
            self.calls += 1
            self._add(purpose, Usage(requests=1))

    def _schema_for(self, purpose: Purpose) -> dict[str, Any] | None:
        mode = self.config.structured_output
        if mode == "off" or (mode == "auto" and self.schema_refused):
            return None
        return purpose.response_format

    def _complete(self, completion: Completion) -> Answer:
        try:
            return self.provider.complete(completion)
        except SchemaRefused as refused:
            if self.config.structured_output != "auto":
                raise self.config.error("structured_output", refused.text) from None
            self._forget_schema(refused.server_message)
        self._count(completion.purpose)
        return self.provider.complete(replace(completion, response_format=None))

    def _forget_schema(self, server_message: str) -> None:
        """structured_output=auto after a refused response_format: never send it again."""
        self.schema_refused = True
        record(
            LogEvent.STRUCTURED_OUTPUT_REFUSED,
            "%s refused response_format (%s); verdict requests go without a JSON schema "
            "for the rest of the run",
            self.provider.where,
            server_message,
        )

    def _add(self, purpose: Purpose, usage: Usage) -> None:
        self._usage[purpose] = self._usage.get(purpose, Usage()) + usage
