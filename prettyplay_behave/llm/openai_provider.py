"""The default provider: the openai client, for OpenAI and every OpenAI-compatible server.

Endpoint and key come from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``, the variables of the
openai package itself. A local or compatible server (Ollama, vLLM, LM Studio, LiteLLM, ...) needs
``OPENAI_BASE_URL`` *and* some ``OPENAI_API_KEY``: any dummy value will do, but without a key the
LLM counts as unavailable.

The openai client retries what is transient (``llm_retries``, within ``llm_timeout`` each). What
is left of a failure becomes a :class:`~..errors.ProviderUnavailableError` (a server that times
out, cannot be reached or keeps failing stays down for the rest of the run), a
:class:`~..errors.ConfigError` naming the setting to fix (401, 403, an unknown model, an
exhausted quota), or :class:`~.provider.SchemaRefused` (an HTTP 400 or 422 naming
``response_format``).

The openai package is imported and its client built on the first request, so a replay-only run
pays for neither.
"""

from __future__ import annotations

import os
import ssl
import threading
import urllib.request
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..errors import ConfigError, ProviderUnavailableError
from .provider import Answer, Completion, SchemaRefused

if TYPE_CHECKING:
    import openai

    from ..config import PrettyConfig

PURPOSE_HEADER = "X-Prettyplay-Purpose"
STEP_HEADER = "X-Prettyplay-Step"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
HIDDEN = "(hidden)"
KEY_SOURCE = "environment variable OPENAI_API_KEY"


class OpenAIProvider:
    """Chat Completions through the openai client, configured from the environment."""

    def __init__(self, config: PrettyConfig, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.config = config
        self.api_key = env.get("OPENAI_API_KEY") or None
        self.base_url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._down: str | None = None
        self._openai: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return _display(self.base_url)

    def unavailable_reason(self) -> str | None:
        if not self.api_key:
            return (
                "the LLM is unavailable: no API key is configured; set OPENAI_API_KEY "
                "(and OPENAI_BASE_URL for a local or compatible server, which accepts any "
                "dummy key)"
            )
        return self._down

    def complete(self, completion: Completion) -> Answer:
        schema = completion.response_format
        extra: dict[str, Any] = {"response_format": schema} if schema else {}
        try:
            response = self._client().chat.completions.create(
                model=completion.model,
                messages=completion.messages,  # type: ignore[arg-type]
                temperature=0,
                extra_headers={
                    PURPOSE_HEADER: str(completion.purpose),
                    STEP_HEADER: quote(completion.step, safe=""),
                },
                timeout=self.config.llm_timeout,
                **extra,
            )
        except Exception as exc:
            self._raise_for(exc, completion, schema is not None and _refuses_schema(exc))
            raise
        return _answer(response, self.where)

    def _client(self) -> openai.OpenAI:
        with self._lock:
            if self._openai is None:
                import openai

                self._openai = openai.OpenAI(
                    api_key=self.api_key,
                    base_url=self.base_url,
                    timeout=self.config.llm_timeout,
                    max_retries=self.config.llm_retries,
                    http_client=openai.DefaultHttpxClient(
                        event_hooks={"response": [_quota_is_final]}, **_tls_options(self.base_url)
                    ),
                )
            return self._openai

    # -- failures ------------------------------------------------------------------------------

    def _raise_for(self, exc: Exception, completion: Completion, schema_refused: bool) -> None:
        """Turn an openai error into the provider's errors (else return)."""
        import openai

        where = self.where
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
            "model": completion.model,
            "message": _server_message(exc),
        }
        for applies, outcome, text in _STATUS_FAILURES:
            if applies(status, code):
                self._fail(outcome, text.format(**facts), completion, exc)
        raise ProviderUnavailableError(
            "the LLM is unavailable: " + _REFUSED.format(**facts)
        ) from None

    def _fail(self, outcome: str, text: str, completion: Completion, exc: Exception) -> None:
        if outcome == "down":
            self._mark_down(text, exc)
        if outcome == "schema":
            raise SchemaRefused(text, _server_message(exc)) from None
        if outcome == "model":
            key = (
                "classification_model"
                if completion.purpose.verdict and self.config.classification_model
                else "model"
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


def _tls_options(base_url: str) -> dict[str, Any]:
    """What the HTTP client is given for TLS. A plain-HTTP server reached without a proxy (a
    local model) uses none: a context that trusts no certificate spares loading the system's
    (some 30 ms a client, and a test of the Python API builds one) and refuses any TLS it meets."""
    proxies = urllib.request.getproxies()
    if urlsplit(base_url).scheme == "http" and not (proxies.get("http") or proxies.get("all")):
        return {"verify": ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)}
    return {}


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
