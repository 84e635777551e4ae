"""Settings: each written once, with its parser, its check and its scope.

Every setting is one field below, declared with :func:`setting`: its default, how a text value
(from a tag, ``-D``, the environment or a config file) is parsed, what a good value is, and the
message for a bad one. Its scope is the class it is declared in:

- :class:`TestConfig`: read by each test (a scenario tag may set it for one scenario);
- :class:`RunConfig`: read once per run (the browser, the LLM client, the cache, the report).

:class:`PrettyConfig`, the public type, holds both: the run's settings and the defaults of every
test. ``config.for_test(tags)`` gives one test's :class:`TestConfig`.

Sources, strongest first: a scenario tag (``@prettyplay.<key>=<value>``, plus the ``@strict`` and
``@interactive`` shorthands; per-test keys only), ``-D prettyplay.<key>=<value>``, the
environment variable ``PRETTYPLAY_<KEY>``, the behave config file's userdata, the default. A bad
value fails at start with a :class:`ConfigError` naming the key, the value and its source.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, cast
from urllib.parse import urlsplit

from .errors import ConfigError
from .safety.origins import origin_of  # one reading of origins, the browser's (re-exported)

PREFIX = "prettyplay."
ENV_PREFIX = "PRETTYPLAY_"
BROWSERS = ("chromium", "firefox", "webkit")
TRACE_POLICIES = ("off", "on", "retain-on-failure")
SCREENSHOT_POLICIES = ("only-on-failure", "on", "off")
VIDEO_POLICIES = ("off", "on", "retain-on-failure")
COLOR_SCHEMES = ("light", "dark", "no-preference")
TAG_SHORTHANDS = ("strict", "interactive")
# The group block's tags (docs/groups.md), each the short form of a setting.
TAG_ALIASES = {"group.speed": "group_speed", "group.delay": "group_delay"}
STRUCTURED_OUTPUT = ("auto", "on", "off")
REPORT_HISTORY = 10  # the runs whose reports report_dir keeps, by default

DEFAULT_MODEL = "gpt-4.1-mini"
FILE_SOURCE = "behave config file (userdata)"
DEFINE_SOURCE = "command line -D"


# -- parsing text values ------------------------------------------------------------------------


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


def _parse_str(text: str) -> str:
    return text


def _parse_viewport(text: str) -> tuple[int, int]:
    width, _, height = text.strip().lower().partition("x")
    try:
        return int(width), int(height)
    except ValueError:
        raise ValueError("expected WIDTHxHEIGHT such as 1280x720") from None


def _parse_word(text: str) -> str:
    return text.strip().lower()


def _parse_context_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"expected a JSON object ({exc})") from None
    problem = _context_args_problem(value)
    if problem:
        raise ValueError(problem)
    return cast("dict[str, Any]", value)


def _context_args_problem(value: Any) -> str | None:
    from .context_args import problem

    return problem(value)


def _parse_origins(text: str) -> tuple[str, ...]:
    return tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())


# -- checking typed values ----------------------------------------------------------------------


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_price(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value >= 0


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


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


def _is_viewport(value: Any) -> bool:
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(_is_int(v) and 0 < v <= 10_000 for v in value)
    )


def _is_storage_state(value: Any) -> bool:
    """A readable JSON object file, as Playwright's ``storage_state()`` writes it."""
    if not isinstance(value, str):
        return False
    try:
        with open(value, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and {"cookies", "origins"} <= set(state)


def _is_endpoint(value: Any) -> bool:
    return isinstance(value, str) and urlsplit(value).scheme in ("ws", "wss", "http", "https")


def _between(low: int, high: int | None = None) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and v >= low and (high is None or v <= high)


# -- one setting --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """How one key is read from text and checked."""

    parse: Callable[[str], Any]
    check: Callable[[Any], bool]
    problem: str  # what a good value is, for the ConfigError of a bad one
    optional: bool = False  # None (written as "none", "auto" or nothing) means unset

    def read(self, text: str) -> Any:
        if self.optional and text.strip().lower() in ("", "none", "auto"):
            return None
        return self.parse(text)

    def accepts(self, value: Any) -> bool:
        return (self.optional and value is None) or self.check(value)


def setting(
    default: Any,
    parse: Callable[[str], Any],
    check: Callable[[Any], bool],
    problem: str,
    *,
    optional: bool = False,
) -> Any:
    """A config field: its default and its :class:`Setting`. A table's default is a fresh
    empty one per config."""
    metadata = {"setting": Setting(parse, check, problem, optional)}
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


def settings_of(cls: type) -> dict[str, Setting]:
    """The settings a config class declares (its own and its bases'), by key."""
    return {f.name: f.metadata["setting"] for f in fields(cls) if "setting" in f.metadata}


def _validate(config: object) -> None:
    for key, rule in settings_of(type(config)).items():
        value = getattr(config, key)
        if not rule.accepts(value):
            raise ConfigError(key, shown(key, value), type(config).__name__, rule.problem)


# -- the two scopes -----------------------------------------------------------------------------


class _Sourced:
    """Where each value of a config came from, for the errors found after it was read."""

    def source_of(self, key: str) -> str:
        """Where the value of ``key`` came from: a tag, ``-D``, the environment, the config
        file, the default, or the ``PrettyConfig`` built in Python."""
        sources: Mapping[str, str] = getattr(self, "sources", {})
        if key in sources:
            return sources[key]
        found = next(f for f in fields(cast(Any, self)) if f.name == key)
        default = found.default_factory() if callable(found.default_factory) else found.default
        return "the default" if getattr(self, key) == default else "PrettyConfig"

    def error(self, key: str, problem: str) -> ConfigError:
        """A ConfigError about the value of ``key``, found after the settings were read."""
        return ConfigError(key, shown(key, getattr(self, key)), self.source_of(key), problem)


@dataclass(frozen=True)
class TestConfig(_Sourced):
    """The settings of one test; a scenario tag may change any of them."""

    __test__ = False  # a product class, not a pytest test class

    base_url: str | None = setting(
        None,
        _parse_str,
        _is_http_url,
        "expected an http(s) URL such as http://localhost:8000",
        optional=True,
    )
    strict: bool = setting(False, _parse_bool, _is_bool, "expected true or false")
    interactive: bool = setting(False, _parse_bool, _is_bool, "expected true or false")
    generation_attempts: int = setting(3, _parse_int, _between(1, 20), "expected 1 to 20")
    healing_attempts: int = setting(2, _parse_int, _between(0, 20), "expected 0 to 20")
    instructions: str = setting("", _parse_str, _is_text, "expected text")
    action_timeout_ms: int = setting(10_000, _parse_int, _between(1), "expected milliseconds > 0")
    step_timeout_ms: int = setting(60_000, _parse_int, _between(1), "expected milliseconds > 0")
    settle_ms: int = setting(2_000, _parse_int, _between(0), "expected milliseconds >= 0")
    allowed_origins: tuple[str, ...] = setting(
        (),
        _parse_origins,
        _is_origin_list,
        "expected comma-separated origins such as http://localhost:8000",
    )
    trace: str = setting(
        "retain-on-failure",
        _parse_str,
        lambda v: v in TRACE_POLICIES,
        f"expected one of {', '.join(TRACE_POLICIES)}",
    )
    screenshot: str = setting(
        "only-on-failure",
        _parse_str,
        lambda v: v in SCREENSHOT_POLICIES,
        f"expected one of {', '.join(SCREENSHOT_POLICIES)}",
    )
    video: str = setting(
        "off",
        _parse_str,
        lambda v: v in VIDEO_POLICIES,
        f"expected one of {', '.join(VIDEO_POLICIES)}",
    )
    files_dir: str | None = setting(None, _parse_str, _is_name, "expected a folder", optional=True)
    # the browser context of each test, as pytest-playwright names them
    storage_state: str | None = setting(
        None,
        _parse_str,
        _is_storage_state,
        "expected a readable Playwright storage-state file (JSON with cookies and origins)",
        optional=True,
    )
    device: str | None = setting(
        None,
        _parse_str,
        _is_name,
        "expected a Playwright device name such as 'iPhone 13'",
        optional=True,
    )
    viewport: tuple[int, int] | None = setting(
        None,
        _parse_viewport,
        _is_viewport,
        "expected WIDTHxHEIGHT such as 1280x720",
        optional=True,
    )
    locale: str | None = setting(
        None, _parse_str, _is_name, "expected a locale such as de-DE", optional=True
    )
    timezone_id: str | None = setting(
        None, _parse_str, _is_name, "expected a time zone such as Europe/Berlin", optional=True
    )
    color_scheme: str | None = setting(
        None,
        _parse_str,
        lambda v: v in COLOR_SCHEMES,
        f"expected one of {', '.join(COLOR_SCHEMES)}",
        optional=True,
    )
    ignore_https_errors: bool = setting(False, _parse_bool, _is_bool, "expected true or false")
    # Playwright's own new_context options, over the settings above (docs/configuration.md)
    context_args: Mapping[str, Any] = setting(
        {},
        _parse_context_args,
        lambda v: _context_args_problem(v) is None,
        "expected a JSON object of Playwright's new_context options",
    )
    expect_timeout_ms: int = setting(5_000, _parse_int, _between(1), "expected milliseconds > 0")
    # a cookie value step code reads is redacted like a secret (unless false)
    redact_cookies: bool = setting(True, _parse_bool, _is_bool, "expected true or false")
    # the pace of a @group scenario's block: @group.speed=N and @group.delay=S
    group_speed: int | None = setting(
        None, _parse_int, _between(0, 100), "expected 0 to 100", optional=True
    )
    group_delay: float | None = setting(
        None,
        _parse_float,
        lambda v: _is_number(v) and v >= 0,
        "expected seconds, 0 or more",
        optional=True,
    )
    # where each value that is not a default came from, for errors found only later
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.allowed_origins, list):
            object.__setattr__(self, "allowed_origins", tuple(self.allowed_origins))
        _validate(self)

    @property
    def origins(self) -> tuple[str, ...]:
        """Where step code may navigate: the setting, else the origin of ``base_url``."""
        if self.allowed_origins:
            return tuple(origin_of(origin) for origin in self.allowed_origins)
        return (origin_of(self.base_url),) if self.base_url else ()


@dataclass(frozen=True)
class RunConfig(_Sourced):
    """The settings read once per run: the browser, the LLM client, the cache, the report."""

    model: str = setting(DEFAULT_MODEL, _parse_str, _is_name, "expected a model name")
    test_id_attribute: str = setting(
        "data-testid", _parse_str, _is_name, "expected an attribute name such as data-test"
    )
    classification_model: str | None = setting(
        None, _parse_str, _is_name, "expected a model name", optional=True
    )
    llm_timeout: float = setting(
        60.0, _parse_float, lambda v: _is_number(v) and v > 0, "expected seconds greater than 0"
    )
    llm_retries: int = setting(2, _parse_int, _between(0, 10), "expected 0 to 10")
    max_llm_calls: int | None = setting(
        None, _parse_int, _between(0), "expected a count >= 0", optional=True
    )
    speed: int = setting(100, _parse_int, _between(0, 100), "expected 0 to 100")
    headless: bool = setting(True, _parse_bool, _is_bool, "expected true or false")
    # a final error's traceback: the step code's own lines only (false), or every frame of
    # prettyplay's too (true), for a bug report about prettyplay itself
    full_tracebacks: bool = setting(False, _parse_bool, _is_bool, "expected true or false")
    browser: str = setting(
        "chromium", _parse_str, lambda v: v in BROWSERS, f"expected one of {', '.join(BROWSERS)}"
    )
    browser_channel: str | None = setting(
        None, _parse_str, _is_name, "expected a channel such as chrome or msedge", optional=True
    )
    browser_executable: str | None = setting(
        None, _parse_str, _is_text, "expected a path", optional=True
    )
    browser_endpoint: str | None = setting(
        None, _parse_str, _is_endpoint, "expected a ws://, wss:// or http:// URL", optional=True
    )
    cache_dir: str | None = setting(None, _parse_str, _is_name, "expected a folder", optional=True)
    report_dir: str | None = setting(None, _parse_str, _is_name, "expected a folder", optional=True)
    # the runs whose reports report_dir keeps: under BehaveX each behave run (a task) is one
    report_history: int = setting(REPORT_HISTORY, _parse_int, _between(1), "expected a count >= 1")
    templates_dir: str | None = setting(
        None, _parse_str, _is_name, "expected a folder", optional=True
    )
    structured_output: str = setting(
        "auto",
        _parse_word,
        lambda v: v in STRUCTURED_OUTPUT,
        f"expected one of {', '.join(STRUCTURED_OUTPUT)}",
    )
    price_per_mtok_input: float | None = setting(
        None,
        _parse_float,
        _is_price,
        "expected US dollars per million input tokens, a number >= 0",
        optional=True,
    )
    price_per_mtok_output: float | None = setting(
        None,
        _parse_float,
        _is_price,
        "expected US dollars per million output tokens, a number >= 0",
        optional=True,
    )

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def verdict_model(self) -> str:
        """The model of classification, group diagnosis and the compliance gate."""
        return self.classification_model or self.model

    @property
    def slow_mo_ms(self) -> int:
        return pace_ms(self.speed)


@dataclass(frozen=True)
class PrettyConfig(RunConfig, TestConfig):
    """The settings of a run and the defaults of its tests; see docs/configuration.md."""

    hooks: tuple[object, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        TestConfig.__post_init__(self)
        if isinstance(self.hooks, list):
            object.__setattr__(self, "hooks", tuple(self.hooks))

    def replace(self, **changes: Any) -> PrettyConfig:
        return dataclasses.replace(self, **changes)

    def for_test(self, tags: Iterable[str] = (), scenario: str = "") -> TestConfig:
        """One test's settings: the run's defaults with the scenario's tag settings on top.

        A tag that names a run-wide key is a ConfigError naming the key, the tag and the
        scenario: it could only be ignored.
        """
        values: dict[str, Any] = {key: getattr(self, key) for key in TEST_KEYS}
        tagged, tag_sources = tag_settings(tags, scenario)
        if "context_args" in tagged:  # a tag adds to the run's options, key by key
            tagged["context_args"] = {**self.context_args, **tagged["context_args"]}
        values.update(tagged)
        return TestConfig(**values, sources={**self.sources, **tag_sources})


TEST_KEYS = tuple(settings_of(TestConfig))
RUN_KEYS = tuple(settings_of(RunConfig))
KEYS = tuple(settings_of(PrettyConfig))
SETTINGS = settings_of(PrettyConfig)


def pace_ms(speed: int) -> int:
    """The pause of a pace 0-100 (the browser's ``speed``, a group's ``speed``), in ms."""
    return int((100 - speed) * 30)


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the run is in CI (``CI`` is set): interactive steering never opens there."""
    return bool((os.environ if environ is None else environ).get("CI"))


def shown(key: str, value: Any) -> Any:
    """A value as an error may show it: context options that hold a password are not shown."""
    if key == "context_args" and "pass" in str(value).lower():
        return "(not shown: it holds a password)"
    return value


# -- resolving the sources ----------------------------------------------------------------------


def did_you_mean(key: str, prefix: str = "", upper: bool = False) -> str:
    """`` (did you mean 'prettyplay.speed'?)`` for a misspelt key such as ``sped``, or ""."""
    near = difflib.get_close_matches(key.lower(), KEYS, n=1, cutoff=0.75)
    if not near:
        return ""
    return f" (did you mean {prefix + (near[0].upper() if upper else near[0])!r}?)"


def _typed(key: str, text: str, source: str) -> Any:
    if key not in SETTINGS:
        near = did_you_mean(key, PREFIX)
        raise ConfigError(
            PREFIX + key, text, source, f"unknown setting{near}; known: {', '.join(KEYS)}"
        )
    rule = SETTINGS[key]
    try:
        value = rule.read(text)
    except ValueError as exc:
        raise ConfigError(key, shown(key, text), source, str(exc)) from None
    if not rule.accepts(value):
        raise ConfigError(key, shown(key, text), source, rule.problem)
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
            if key not in SETTINGS:
                near = did_you_mean(key, ENV_PREFIX, upper=True)
                raise ConfigError(name, text, "environment", f"unknown setting{near}")
            layer[key] = _typed(key, text, f"environment variable {name}")
    return layer


def tag_settings(tags: Iterable[str], scenario: str = "") -> tuple[dict[str, Any], dict[str, str]]:
    """Settings written as scenario tags: ``@strict``, ``@interactive``, ``@prettyplay.key=v``,
    and the group's ``@group.speed=N`` and ``@group.delay=S``.

    Only per-test keys may be set this way; a run-wide key is a ConfigError. Returns the values
    and, for each, the tag it came from.
    """
    layer: dict[str, Any] = {}
    sources: dict[str, str] = {}
    where = f" of scenario {scenario!r}" if scenario else ""
    for tag in tags:
        alias, _, text = tag.partition("=")
        source = f"tag @{tag}{where}"
        if tag in TAG_SHORTHANDS:
            layer[tag], sources[tag] = True, source
        elif alias in TAG_ALIASES:
            key = TAG_ALIASES[alias]
            layer[key], sources[key] = _typed(key, text, source), source
        elif alias.startswith("group."):  # a misspelt group setting is never silently ignored
            near = difflib.get_close_matches(alias, TAG_ALIASES, n=1)
            raise ConfigError(
                alias,
                text,
                source,
                "unknown group setting"
                + (f" (did you mean @{near[0]}={text}?)" if near else "")
                + "; a group's tags are "
                + " and ".join(f"@{name}=..." for name in TAG_ALIASES),
            )
        elif tag.startswith(PREFIX):
            name, _, text = tag.partition("=")
            key = name[len(PREFIX) :]
            if key in RUN_KEYS:
                raise ConfigError(
                    key,
                    text,
                    source,
                    "a run-wide setting cannot be set per scenario; set it with -D, the "
                    f"environment or the config file (a tag may set: {', '.join(TEST_KEYS)})",
                )
            layer.update(_layer([(name, text)], source))
            sources[key] = source
    return layer, sources


def resolve_config(
    *,
    file_values: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    defines: Mapping[str, str] | None = None,
    base: PrettyConfig | None = None,
) -> PrettyConfig:
    """The run's config: ``-D`` over the environment over the config file over ``base``."""
    settings: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers = [
        (_layer((file_values or {}).items(), FILE_SOURCE), FILE_SOURCE),
        (_env_layer(environ or {}), "environment"),
        (_layer((defines or {}).items(), DEFINE_SOURCE), DEFINE_SOURCE),
    ]
    for layer, source in layers:
        settings.update(layer)
        sources.update(dict.fromkeys(layer, source))
    base = base or PrettyConfig()
    return base.replace(**settings, sources={**base.sources, **sources})
