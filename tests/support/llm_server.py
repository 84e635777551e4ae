"""A scripted OpenAI-compatible server for tests: real HTTP on 127.0.0.1, no real LLM.

Use it as a context manager (or ``start()`` / ``stop()``) and script what it answers::

    with ScriptedLLMServer() as server:
        server.on("generate", code_answer("def step(page) -> None:\\n    page.goto('/')"))
        server.on("classify", server_error(), json_answer({...}), step="click Checkout")
        env = {**os.environ, **server.env}        # for a behave run in a subprocess
        ...
        assert server.requests_for("generate")[0].model == "gpt-4.1-mini"

A rule matches a request on its purpose (the ``X-Prettyplay-Purpose`` header; ``None`` matches
any) and optionally a substring of its step (the decoded ``X-Prettyplay-Step`` header). Each rule
holds a queue of replies, used one per matching request; an exhausted rule stops matching, unless
``repeat=True`` keeps its last reply. A reply is answer text (``str``), a :class:`Reply`
(see :func:`answer`, :func:`http_error`, :func:`delay`, :func:`drop` and the shortcuts), or a
callable that receives the :class:`RecordedRequest` and returns either. An unmatched request gets
``server.fallback``: by default an HTTP 500 "no scripted answer for purpose=X step=Y" that the
openai client does not retry, so a test fails loudly and quickly.

``server.refuse_response_format = True`` makes it a server without structured output: every
request that carries ``response_format`` gets an HTTP 400 naming the parameter (as OpenAI words
it), before any rule is consulted; the request is still recorded.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias
from urllib.parse import unquote

from typing_extensions import Self

PURPOSE_HEADER = "X-Prettyplay-Purpose"
STEP_HEADER = "X-Prettyplay-Step"
TEST_KEY = "test-key"


@dataclass(frozen=True)
class Reply:
    """One scripted response: answer text, an HTTP error, a dropped connection; maybe delayed."""

    text: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


Script: TypeAlias = "str | Reply | Callable[[RecordedRequest], str | Reply]"


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server received it; header names in lower case."""

    method: str
    path: str
    headers: dict[str, str]
    purpose: str | None
    step: str | None
    body: dict[str, Any]
    time: float

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def temperature(self) -> float | None:
        return self.body.get("temperature")

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.body.get("response_format")

    @property
    def text(self) -> str:
        """All message contents, joined."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)

    def content(self, role: str) -> str:
        """The content of the first message of ``role`` ("system" or "user")."""
        return next((str(m.get("content")) for m in self.messages if m.get("role") == role), "")


# -- replies ------------------------------------------------------------------------------------


def answer(text: str, *, finish_reason: str = "stop", delay: float = 0.0) -> Reply:
    """A completion whose message content is ``text``."""
    return Reply(text=text, finish_reason=finish_reason, delay=delay)


def http_error(
    status: int,
    message: str = "scripted error",
    *,
    code: str | None = None,
    error_type: str = "server_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    """An HTTP error with an OpenAI-style JSON body."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def delay(seconds: float, then: str | Reply = "") -> Reply:
    """Sleep ``seconds``, then send ``then`` (answer text or a reply)."""
    reply = answer(then) if isinstance(then, str) else then
    return replace(reply, delay=seconds)


def drop() -> Reply:
    """Close the connection without a response."""
    return Reply(drop=True)


def server_error(message: str = "scripted server error", retry_after_ms: int = 10) -> Reply:
    """HTTP 500; ``retry-after-ms`` keeps the client's backoff short."""
    return http_error(500, message, headers={"retry-after-ms": str(retry_after_ms)})


def rate_limited(retry_after_ms: int = 10) -> Reply:
    """HTTP 429 rate limit with ``retry-after-ms``."""
    return http_error(
        429,
        "Rate limit reached; try again shortly.",
        code="rate_limit_exceeded",
        error_type="requests",
        headers={"retry-after-ms": str(retry_after_ms)},
    )


def insufficient_quota() -> Reply:
    """HTTP 429 ``insufficient_quota``, as OpenAI sends it (no retry hint)."""
    return http_error(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        code="insufficient_quota",
        error_type="insufficient_quota",
    )


def unauthorized() -> Reply:
    return http_error(
        401,
        "Incorrect API key provided.",
        code="invalid_api_key",
        error_type="invalid_request_error",
    )


def forbidden() -> Reply:
    return http_error(
        403, "You are not allowed to use this model.", code=None, error_type="invalid_request_error"
    )


def model_not_found(model: str) -> Reply:
    return http_error(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found",
        error_type="invalid_request_error",
    )


def response_format_refused() -> Reply:
    """HTTP 400 for a ``response_format`` the server does not support, worded as OpenAI does."""
    return Reply(
        status=400,
        body={
            "error": {
                "message": "Invalid parameter: 'response_format' of type 'json_schema' is not "
                "supported with this model.",
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        },
    )


def code_answer(code: str, prose: str = "") -> str:
    """Answer text holding ``code`` in one python fence (after optional prose)."""
    fenced = f"```python\n{code.strip()}\n```"
    return f"{prose}\n\n{fenced}" if prose else fenced


def json_answer(obj: Any) -> str:
    return json.dumps(obj)


# the compliance gate's verdict on code with nothing to object to
CLEAN_GATE = json_answer({"findings": []})


# -- the server ---------------------------------------------------------------------------------


@dataclass
class _Rule:
    purpose: str | None
    step: str | None
    replies: list[Script]
    repeat: bool

    def matches(self, request: RecordedRequest) -> bool:
        if not self.replies:
            return False
        if self.purpose is not None and request.purpose != self.purpose:
            return False
        return self.step is None or self.step in (request.step or "")

    def take(self) -> Script:
        if self.repeat and len(self.replies) == 1:
            return self.replies[0]
        return self.replies.pop(0)


def _unscripted(message: str) -> Reply:
    """A loud HTTP 500 the openai client does not retry."""
    return http_error(500, message, code="unscripted", headers={"x-should-retry": "false"})


def _estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters a token."""
    return (len(text) + 3) // 4


class Scripted:
    """Rules, a fallback and the recorded requests: what the server and the in-process provider
    (:mod:`tests.support.scripted_provider`) answer from. Safe to use from any thread."""

    def __init__(self) -> None:
        self.fallback: Script | None = None
        self.refuse_response_format = False
        self._rules: list[_Rule] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    # -- scripting ---------------------------------------------------------------------------

    def on(
        self, purpose: str | None, *replies: Script, step: str | None = None, repeat: bool = False
    ) -> Self:
        """Add a rule: requests of ``purpose`` about a step containing ``step`` get ``replies``."""
        if not replies:
            raise ValueError("a rule needs at least one reply")
        with self._lock:
            self._rules.append(_Rule(purpose, step, list(replies), repeat))
        return self

    def reset(self) -> None:
        """Forget every rule, the fallback and the recorded requests."""
        with self._lock:
            self._rules.clear()
            self._requests.clear()
            self.fallback = None
            self.refuse_response_format = False

    @property
    def pending(self) -> int:
        """Scripted replies not used yet (repeating rules count one)."""
        with self._lock:
            return sum(len(rule.replies) for rule in self._rules)

    # -- recorded requests -------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat completion request received, in order."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, purpose: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.purpose == purpose]

    def _record(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            if self.refuse_response_format and "response_format" in request.body:
                return response_format_refused()
            rule = next((r for r in self._rules if r.matches(request)), None)
            script = rule.take() if rule else self.fallback
        if script is None:
            return _unscripted(
                f"no scripted answer for purpose={request.purpose} step={request.step}"
            )
        try:
            reply = script(request) if callable(script) else script
        except Exception as exc:
            reply = _unscripted(f"the scripted reply raised {type(exc).__name__}: {exc}")
        return answer(reply) if isinstance(reply, str) else reply


class ScriptedLLMServer(Scripted):
    """The server; rules, fallback and recorded requests are safe to use from any thread."""

    def __init__(self, models: tuple[str, ...] = ("gpt-4.1-mini",)) -> None:
        super().__init__()
        self.models = models
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        handler = type("Handler", (_Handler,), {"script": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # A handler sleeping through a scripted delay must not hold up stop().
        self._httpd.block_on_close = False
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-llm-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The value for ``OPENAI_BASE_URL``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def env(self) -> dict[str, str]:
        """``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` for a client (or a subprocess)."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": TEST_KEY}

    # -- serving -----------------------------------------------------------------------------

    def _completion(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        with self._lock:
            self._ids += 1
            number = self._ids
        text = reply.text or ""
        prompt_tokens = _estimate_tokens(request.text)
        completion_tokens = _estimate_tokens(text)
        return {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(request.time),
            "model": request.model or "unknown",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class _Handler(BaseHTTPRequestHandler):
    script: ScriptedLLMServer

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                for m in self.script.models
            ]
            self._send(200, {"object": "list", "data": data})
        else:
            self._send(404, {"error": {"message": f"no route GET {self.path}", "code": None}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        # any API path: /v1 (most servers), none, or Azure's /openai/v1
        if not self.path.split("?")[0].endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route POST {self.path}", "code": None}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        step = self.headers.get(STEP_HEADER)
        request = RecordedRequest(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            purpose=self.headers.get(PURPOSE_HEADER),
            step=unquote(step) if step is not None else None,
            body=body if isinstance(body, dict) else {"unparsed": body},
            time=time.time(),
        )
        reply = self.script._record(request)
        if reply.delay and self.script._stopping.wait(reply.delay):
            reply = drop()
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.status == 200 and reply.body is None:
            self._send(200, self.script._completion(request, reply), reply.headers)
        else:
            self._send(reply.status, reply.body or {}, reply.headers)

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read server.requests instead
