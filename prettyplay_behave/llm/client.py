"""The LLM client: one Chat Completions request per call, told apart by purpose.

Endpoint and key come from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``, the variables of the
openai package itself. A local or compatible server (Ollama, vLLM, LM Studio, LiteLLM, ...) needs
``OPENAI_BASE_URL`` *and* some ``OPENAI_API_KEY``: any dummy value will do, but without a key the
LLM counts as unavailable.

Outcomes a caller tells apart:

- an :class:`Answer` (its text may be empty: the caller records that as unparseable);
- :class:`ProviderUnavailableError`: no key, the server cannot be reached or keeps failing after
  the openai client's own retries, or the run-wide ``max_llm_calls`` cap is reached. After a
  failure of the server the client stays down for the rest of the run;
- :class:`ConfigError`: a misconfiguration the server reports (401, 403, unknown model, exhausted
  quota, a refused ``response_format`` with ``structured_output=on``); it fails fast and names
  the setting to fix.

Verdict requests carry their JSON schema in ``response_format`` (``structured_output``: ``auto``
sends it until a server refuses it with an HTTP 400 naming it, then asks again without it, once,
and never sends it again in the run; ``on`` always; ``off`` never). Code requests never do.

The openai package is imported and its client built on the first request, so a replay-only run
pays for neither.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..errors import ConfigError, ProviderUnavailableError
from .prices import Price, price_of
from .purposes import Purpose

if TYPE_CHECKING:
    import openai

    from ..config import PrettyConfig

log = logging.getLogger("prettyplay")

PURPOSE_HEADER = "X-Prettyplay-Purpose"
STEP_HEADER = "X-Prettyplay-Step"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
HIDDEN = "(hidden)"
KEY_SOURCE = "environment variable OPENAI_API_KEY"


@dataclass(frozen=True)
class Answer:
    """The text of one completion and what it cost."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


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
    """Chat Completions for the engine's purposes, with availability, a cap and usage counts."""

    def __init__(self, config: PrettyConfig, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.config = config
        self.api_key = env.get("OPENAI_API_KEY") or None
        self.base_url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.calls = 0
        self._usage: dict[Purpose, Usage] = {}
        self._down: str | None = None
        self._openai: openai.OpenAI | None = None
        self._lock = threading.Lock()
        # structured_output=auto: set once a server refused response_format, for the run
        self.schema_refused = False

    # -- availability --------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """Whether a request may be sent: a key, not down, and under ``max_llm_calls``."""
        return self._unavailable_reason() is None

    def require(self) -> None:
        """Raise :class:`ProviderUnavailableError` when no request may be sent."""
        reason = self._unavailable_reason()
        if reason is not None:
            raise ProviderUnavailableError(reason)

    def _unavailable_reason(self) -> str | None:
        if not self.api_key:
            return (
                "the LLM is unavailable: no API key is configured; set OPENAI_API_KEY "
                "(and OPENAI_BASE_URL for a local or compatible server, which accepts any "
                "dummy key)"
            )
        if self._down:
            return self._down
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
        model = self.model_for(purpose)
        client = self._count(purpose)
        started = time.monotonic()
        answer: Answer | None = None
        try:
            answer = self._complete(client, purpose, model, step, messages)
        finally:
            tokens = (answer.prompt_tokens + answer.completion_tokens) if answer else 0
            log.debug(
                "LLM request %s with %s: %s, %d tokens in %.1f s",
                purpose,
                model,
                answer.finish_reason if answer else "failed",
                tokens,
                time.monotonic() - started,
                extra={"event": "llm_request", "purpose": str(purpose), "tokens": tokens},
            )
        with self._lock:
            self._add(purpose, Usage(0, answer.prompt_tokens, answer.completion_tokens))
        return answer

    def _count(self, purpose: Purpose) -> openai.OpenAI:
        """Count one request of ``purpose`` before it is sent, so none goes past the cap."""
        with self._lock:
            self.require()
            self.calls += 1
            self._add(purpose, Usage(requests=1))
            return self._client()

    def _schema_for(self, purpose: Purpose) -> dict[str, Any] | None:
        mode = self.config.structured_output
        if mode == "off" or (mode == "auto" and self.schema_refused):
            return None
        return purpose.response_format

    def _complete(
        self,
        client: openai.OpenAI,
        purpose: Purpose,
        model: str,
        step: str,
        messages: list[dict[str, str]],
    ) -> Answer:
        schema = self._schema_for(purpose)
        extra: dict[str, Any] = {"response_format": schema} if schema else {}
        try:
            completion = client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                extra_headers={PURPOSE_HEADER: str(purpose), STEP_HEADER: quote(step, safe="")},
                timeout=self.config.llm_timeout,
                **extra,
            )
        except Exception as exc:
            refused = schema is not None and _refuses_schema(exc)
            if refused and self.config.structured_output == "auto":
                self._forget_schema(exc)
                return self._complete(self._count(purpose), purpose, model, step, messages)
            self._raise_for(exc, model, purpose.verdict, refused)
            raise
        return _answer(completion, _display(self.base_url))

    def _forget_schema(self, exc: Exception) -> None:
        """structured_output=auto after a refused response_format: never send it again."""
        self.schema_refused = True
        log.info(
            "%s refused response_format (%s); verdict requests go without a JSON schema "
            "for the rest of the run",
            _display(self.base_url),
            _server_message(exc),
            extra={"event": "structured_output_refused"},
        )

    def _add(self, purpose: Purpose, usage: Usage) -> None:
        self._usage[purpose] = self._usage.get(purpose, Usage()) + usage

    def _client(self) -> openai.OpenAI:
        if self._openai is None:
            import openai

            self._openai = openai.OpenAI(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.config.llm_timeout,
                max_retries=self.config.llm_retries,
                http_client=openai.DefaultHttpxClient(event_hooks={"response": [_quota_is_final]}),
            )
        return self._openai

    # -- failures ------------------------------------------------------------------------------

    def _raise_for(
        self, exc: Exception, model: str, verdict: bool, schema_refused: bool = False
    ) -> None:
        """Turn an openai error into ProviderUnavailableError or ConfigError (else return)."""
        import openai

        where = _display(self.base_url)
        attempts = f"llm_retries={self.config.llm_retries}"
        if isinstance(exc, openai.APITimeoutError):
            self._mark_down(
                _TIMED_OUT.format(where=where, attempts=attempts, timeout=self.config.llm_timeout),
                exc,
            )
        if isinstance(exc, openai.APIConnectionError):
            self._mark_down(
                _UNREACHABLE.format(where=where, attempts=attempts, cause=_cause(exc)), exc
            )
        if not isinstance(exc, openai.APIStatusError):
            if isinstance(exc, openai.OpenAIError):
                raise ProviderUnavailableError(
                    f"the LLM is unavailable: {where} answered unexpectedly "
                    f"({type(exc).__name__}: {exc}); check the server behind OPENAI_BASE_URL"
                ) from exc
            return
        status, code = exc.status_code, SCHEMA_REFUSED if schema_refused else _error_code(exc)
        facts = {
            "where": where,
            "attempts": attempts,
            "status": status,
            "model": model,
            "message": _server_message(exc),
        }
        for applies, outcome, text in _STATUS_FAILURES:
            if applies(status, code):
                self._fail(outcome, text.format(**facts), model, verdict, exc)
        raise ProviderUnavailableError(
            "the LLM is unavailable: " + _REFUSED.format(**facts)
        ) from None

    def _fail(self, outcome: str, text: str, model: str, verdict: bool, exc: Exception) -> None:
        if outcome == "down":
            self._mark_down(text, exc)
        if outcome == "schema":
            raise self.config.error("structured_output", text) from None
        if outcome == "model":
            key = (
                "classification_model" if verdict and self.config.classification_model else "model"
            )
            raise self.config.error(key, text.replace("{key}", key)) from None
        raise ConfigError("OPENAI_API_KEY", HIDDEN, KEY_SOURCE, text) from None

    def _mark_down(self, why: str, exc: Exception) -> None:
        self._down = f"the LLM is unavailable: {why}"
        raise ProviderUnavailableError(self._down) from exc


_TIMED_OUT = (
    "no answer from {where} within llm_timeout={timeout:g} s ({attempts}); check that the server "
    "is up, or raise prettyplay.llm_timeout or prettyplay.llm_retries"
)
_UNREACHABLE = (
    "cannot connect to {where} ({cause}; {attempts}); check OPENAI_BASE_URL and that the server "
    "is running"
)
_REFUSED = (
    "{where} refused the request (HTTP {status}: {message}); check OPENAI_BASE_URL and the "
    "model {model!r}"
)

# The error code a refused response_format is given (the server's own code varies).
SCHEMA_REFUSED = "response_format_refused"

# What an HTTP error status means, first match wins: "key", "model" and "schema" are
# misconfigurations (a ConfigError naming the setting), "down" leaves the LLM unavailable for
# the rest of the run.
_STATUS_FAILURES: tuple[tuple[Callable[[int, str | None], bool], str, str], ...] = (
    (
        lambda status, code: code == SCHEMA_REFUSED,
        "schema",
        "{where} refused the JSON schema of a verdict request (HTTP {status}: {message}); set "
        "prettyplay.structured_output=auto to ask again without it, or off",
    ),
    (
        lambda status, code: status == 401,
        "key",
        "{where} rejected the API key (401: {message}); set a valid OPENAI_API_KEY (and check that "
        "OPENAI_BASE_URL names the intended server)",
    ),
    (
        lambda status, code: status == 403,
        "key",
        "{where} refused the request (403: {message}); check the account permissions of "
        "OPENAI_API_KEY for the model {model!r}",
    ),
    (
        lambda status, code: status == 404,
        "model",
        "{where} does not know the model {model!r} (404: {message}); set prettyplay.{{key}} to a "
        "model the server offers (or check that OPENAI_BASE_URL ends with the API path, such as "
        "/v1)",
    ),
    (
        lambda status, code: status == 429 and code == "insufficient_quota",
        "key",
        "the account quota is exhausted (429 insufficient_quota: {message}); check the plan and "
        "billing of the account behind OPENAI_API_KEY, or use another key",
    ),
    (
        lambda status, code: status == 429,
        "down",
        "{where} kept rate-limiting the requests (429, {attempts}: {message}); wait and run again, "
        "or lower the load on the server",
    ),
    (
        lambda status, code: status >= 500 or status in (408, 409),
        "down",
        "{where} kept failing (HTTP {status}, {attempts}: {message}); check the server behind "
        "OPENAI_BASE_URL or run again later",
    ),
)


def _answer(completion: Any, where: str) -> Answer:
    try:
        choices = getattr(completion, "choices", None)
        choice = choices[0] if choices else None
        usage = getattr(completion, "usage", None)
        return Answer(
            text=str(choice.message.content or "") if choice else "",
            finish_reason=str(choice.finish_reason or "") if choice else "",
            prompt_tokens=int(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=int(usage.completion_tokens or 0) if usage else 0,
        )
    except (AttributeError, TypeError, ValueError, IndexError, KeyError) as exc:
        raise ProviderUnavailableError(
            f"the LLM is unavailable: {where} answered with something that is not a chat "
            f"completion ({type(exc).__name__}: {exc}); check the server behind OPENAI_BASE_URL"
        ) from exc


def _refuses_schema(exc: Exception) -> bool:
    """Whether an HTTP error is a server refusing ``response_format``: a 400 (or 422) that
    names it."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 422):
        return False
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    text = f"{param} {_server_message(exc)} {exc}".lower()
    return any(name in text for name in _SCHEMA_WORDS)


_SCHEMA_WORDS = ("response_format", "json_schema", "response format", "structured output")


def _quota_is_final(response: Any) -> None:
    """Mark a 429 ``insufficient_quota`` as not retryable: waiting never refills a quota."""
    if response.status_code != 429 or "x-should-retry" in response.headers:
        return
    response.read()
    if b"insufficient_quota" in response.content:
        response.headers["x-should-retry"] = "false"


def _error_code(exc: Any) -> str | None:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    code = getattr(exc, "code", None) or (error.get("code") if isinstance(error, dict) else None)
    return code if isinstance(code, str) else None


def _server_message(exc: Any) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    message = error.get("message") if isinstance(error, dict) else None
    return str(message or exc.message).strip()


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{type(cause).__name__}: {cause}" if cause else str(exc)


def _display(url: str) -> str:
    """The endpoint without any credentials written into the URL."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"
