"""PrettyConfig: every setting, where it comes from, and its validation.

Sources, strongest first: a scenario tag (``@prettyplay.<key>=<value>``, plus the ``@strict`` and
``@interactive`` shorthands), ``-D prettyplay.<key>=<value>``, the environment variable
``PRETTYPLAY_<KEY>``, the behave config file's userdata, the default. A bad value fails at start
with a :class:`ConfigError` naming the key, the value and the source it came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigError

PREFIX = "prettyplay."
ENV_PREFIX = "PRETTYPLAY_"
BROWSERS = ("chromium", "firefox", "webkit")
TRACE_POLICIES = ("off", "on", "retain-on-failure")

DEFAULT_MODEL = "gpt-4.1-mini"


@dataclass(frozen=True)
class PrettyConfig:
    """The settings of a run; see docs/configuration.md for each key."""

    base_url: str | None = None
    model: str = DEFAULT_MODEL
    classification_model: str | None = None
    llm_timeout: float = 60.0
    llm_retries: int = 2
    strict: bool = False
    interactive: bool = False
    generation_attempts: int = 3
    healing_attempts: int = 2
    speed: int = 100
    headless: bool = True
    browser: str = "chromium"
    browser_executable: str | None = None
    browser_endpoint: str | None = None
    cache_dir: str | None = None
    instructions: str = ""
    action_timeout_ms: int = 10_000
    settle_ms: int = 2_000
    allowed_origins: tuple[str, ...] = ()
    report_dir: str | None = None
    trace: str = "retain-on-failure"
    max_llm_calls: int | None = None
    templates_dir: str | None = None
    hooks: tuple[object, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in _RULES:
                validate(f.name, getattr(self, f.name), "PrettyConfig")
        if isinstance(self.allowed_origins, list):
            object.__setattr__(self, "allowed_origins", tuple(self.allowed_origins))
        if isinstance(self.hooks, list):
            object.__setattr__(self, "hooks", tuple(self.hooks))

    @property
    def verdict_model(self) -> str:
        """The model of classification, group diagnosis and the compliance gate."""
        return self.classification_model or self.model

    @property
    def slow_mo_ms(self) -> int:
        return int((100 - self.speed) * 30)

    @property
    def origins(self) -> tuple[str, ...]:
        """Where step code may navigate: the setting, else the origin of ``base_url``."""
        if self.allowed_origins:
            return tuple(origin_of(origin) for origin in self.allowed_origins)
        return (origin_of(self.base_url),) if self.base_url else ()

    def replace(self, **changes: Any) -> PrettyConfig:
        return dataclasses.replace(self, **changes)


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` as browsers compare it: lower case, no default port."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None or port == DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


# -- parsing text values (from tags, -D, the environment and config files) -------------------


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("expected a whole number") from None


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("expected a number") from None


def _parse_optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse_or_none(text: str) -> Any:
        return None if text.strip().lower() in ("", "none", "auto") else parse(text)

    return parse_or_none


def _parse_origins(text: str) -> tuple[str, ...]:
    return tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())


def _parse_str(text: str) -> str:
    return text


_PARSERS: dict[str, Callable[[str], Any]] = {
    "base_url": _parse_optional(_parse_str),
    "model": _parse_str,
    "classification_model": _parse_optional(_parse_str),
    "llm_timeout": _parse_float,
    "llm_retries": _parse_int,
    "strict": _parse_bool,
    "interactive": _parse_bool,
    "generation_attempts": _parse_int,
    "healing_attempts": _parse_int,
    "speed": _parse_int,
    "headless": _parse_bool,
    "browser": _parse_str,
    "browser_executable": _parse_optional(_parse_str),
    "browser_endpoint": _parse_optional(_parse_str),
    "cache_dir": _parse_optional(_parse_str),
    "instructions": _parse_str,
    "action_timeout_ms": _parse_int,
    "settle_ms": _parse_int,
    "allowed_origins": _parse_origins,
    "report_dir": _parse_optional(_parse_str),
    "trace": _parse_str,
    "max_llm_calls": _parse_optional(_parse_int),
    "templates_dir": _parse_optional(_parse_str),
}

KEYS = tuple(_PARSERS)


# -- validating typed values ------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    test: Callable[[Any], bool]
    problem: str
    optional: bool = False


def _check(test: Callable[[Any], bool], problem: str, optional: bool = False) -> _Rule:
    return _Rule(test, problem, optional)


def validate(key: str, value: Any, source: str, written: str | None = None) -> None:
    """Raise a ConfigError naming key, value (as written) and source when the value is bad."""
    rule = _RULES[key]
    if not (rule.optional and value is None) and not rule.test(value):
        raise ConfigError(key, value if written is None else written, source, rule.problem)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_http_url(value: Any) -> bool:
    return (
        isinstance(value, str)
        and urlsplit(value).scheme in ("http", "https")
        and bool(urlsplit(value).netloc)
    )


def _is_origin_list(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(
        _is_http_url(v) and urlsplit(v).path in ("", "/") for v in value
    )


def _is_endpoint(value: Any) -> bool:
    return isinstance(value, str) and urlsplit(value).scheme in ("ws", "wss", "http", "https")


_RULES: dict[str, _Rule] = {
    "base_url": _check(_is_http_url, "expected an http(s) URL such as http://localhost:8000", True),
    "model": _check(lambda v: isinstance(v, str) and bool(v.strip()), "expected a model name"),
    "classification_model": _check(
        lambda v: isinstance(v, str) and bool(v.strip()), "expected a model name", True
    ),
    "llm_timeout": _check(lambda v: _is_number(v) and v > 0, "expected seconds greater than 0"),
    "llm_retries": _check(lambda v: _is_int(v) and 0 <= v <= 10, "expected 0 to 10"),
    "strict": _check(lambda v: isinstance(v, bool), "expected true or false"),
    "interactive": _check(lambda v: isinstance(v, bool), "expected true or false"),
    "generation_attempts": _check(lambda v: _is_int(v) and 1 <= v <= 20, "expected 1 to 20"),
    "healing_attempts": _check(lambda v: _is_int(v) and 0 <= v <= 20, "expected 0 to 20"),
    "speed": _check(lambda v: _is_int(v) and 0 <= v <= 100, "expected 0 to 100"),
    "headless": _check(lambda v: isinstance(v, bool), "expected true or false"),
    "browser": _check(lambda v: v in BROWSERS, f"expected one of {', '.join(BROWSERS)}"),
    "browser_executable": _check(lambda v: isinstance(v, str), "expected a path", True),
    "browser_endpoint": _check(_is_endpoint, "expected a ws://, wss:// or http:// URL", True),
    "cache_dir": _check(lambda v: isinstance(v, str) and bool(v), "expected a folder", True),
    "instructions": _check(lambda v: isinstance(v, str), "expected text"),
    "action_timeout_ms": _check(lambda v: _is_int(v) and v > 0, "expected milliseconds > 0"),
    "settle_ms": _check(lambda v: _is_int(v) and v >= 0, "expected milliseconds >= 0"),
    "allowed_origins": _check(
        _is_origin_list, "expected comma-separated origins such as http://localhost:8000"
    ),
    "report_dir": _check(lambda v: isinstance(v, str) and bool(v), "expected a folder", True),
    "trace": _check(lambda v: v in TRACE_POLICIES, f"expected one of {', '.join(TRACE_POLICIES)}"),
    "max_llm_calls": _check(lambda v: _is_int(v) and v >= 0, "expected a count >= 0", True),
    "templates_dir": _check(lambda v: isinstance(v, str) and bool(v), "expected a folder", True),
}


# -- resolving the sources --------------------------------------------------------------------


def _typed(key: str, text: str, source: str) -> Any:
    if key not in _PARSERS:
        raise ConfigError(PREFIX + key, text, source, f"unknown setting; known: {', '.join(KEYS)}")
    try:
        value = _PARSERS[key](text)
    except ValueError as exc:
        raise ConfigError(key, text, source, str(exc)) from None
    validate(key, value, source, written=text)
    return value


def _layer(items: Iterable[tuple[str, str]], source: str) -> dict[str, Any]:
    """Typed values of the ``prettyplay.*`` items of one source."""
    layer = {}
    for name, text in items:
        if name.startswith(PREFIX):
            key = name[len(PREFIX) :]
            layer[key] = _typed(key, str(text), source)
    return layer


def _env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    layer = {}
    for name, text in environ.items():
        if name.startswith(ENV_PREFIX):
            key = name[len(ENV_PREFIX) :].lower()
            if key not in _PARSERS:
                raise ConfigError(name, text, "environment", "unknown setting")
            layer[key] = _typed(key, text, f"environment variable {name}")
    return layer


def tag_settings(tags: Iterable[str]) -> dict[str, Any]:
    """Settings written as scenario tags: ``@strict``, ``@interactive``, ``@prettyplay.key=v``."""
    layer: dict[str, Any] = {}
    for tag in tags:
        if tag in ("strict", "interactive"):
            layer[tag] = True
        elif tag.startswith(PREFIX):
            name, _, text = tag.partition("=")
            layer.update(_layer([(name, text)], f"tag @{tag}"))
    return layer


def resolve_config(
    *,
    file_values: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    defines: Mapping[str, str] | None = None,
    base: PrettyConfig | None = None,
) -> PrettyConfig:
    """The run's config: ``-D`` over the environment over the config file over ``base``."""
    settings: dict[str, Any] = {}
    settings.update(_layer((file_values or {}).items(), "behave config file (userdata)"))
    settings.update(_env_layer(environ or {}))
    settings.update(_layer((defines or {}).items(), "command line -D"))
    return (base or PrettyConfig()).replace(**settings)


def for_scenario(config: PrettyConfig, tags: Iterable[str]) -> PrettyConfig:
    """The run's config with a scenario's tag settings on top."""
    settings = tag_settings(tags)
    return config.replace(**settings) if settings else config
