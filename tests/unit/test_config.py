"""Settings: every key, the precedence of the sources, and errors that name key, value, source."""

from __future__ import annotations

import re

import pytest

from prettyplay_behave.config import (
    KEYS,
    RUN_KEYS,
    TEST_KEYS,
    PrettyConfig,
    TestConfig,
    resolve_config,
)
from prettyplay_behave.errors import ConfigError
from tests.conftest import ROOT

CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"


def documented_rows() -> list[list[str]]:
    """The rows of the table under "## The keys" in docs/configuration.md."""
    section = CONFIGURATION_DOC.read_text(encoding="utf-8").split("\n## The keys\n", 1)[1]
    rows = []
    for line in section.lstrip("\n").splitlines():
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    header, rule, *body = rows
    assert header[:2] == ["key", "scope"] and set(rule[0]) == {"-"}, header
    return body


def documented_keys() -> list[str]:
    """The first column of the table: the keys."""
    keys = []
    for row in documented_rows():
        found = re.fullmatch(r"`(\w+)`", row[0])
        assert found, f"not a key in {CONFIGURATION_DOC.name}: {row[0]}"
        keys.append(found.group(1))
    return keys


def test_the_docs_tell_the_scope_of_every_key() -> None:
    scopes = {row[0].strip("`"): row[1] for row in documented_rows()}
    assert {key for key, scope in scopes.items() if scope == "test"} == set(TEST_KEYS)
    assert {key for key, scope in scopes.items() if scope == "run"} == set(RUN_KEYS)


@pytest.mark.parametrize("key", ["model", "browser", "report_dir", "max_llm_calls", "speed"])
def test_a_tag_with_a_run_wide_key_names_the_key_the_tag_and_the_scenario(key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        PrettyConfig().for_test([f"prettyplay.{key}=other"], "Order a tea")
    error = caught.value
    assert error.key == key
    assert error.source == f"tag @prettyplay.{key}=other of scenario 'Order a tea'"
    assert "a run-wide setting cannot be set per scenario" in error.problem


def test_a_tag_with_a_per_test_key_sets_it_for_that_test_only() -> None:
    config = PrettyConfig(healing_attempts=2)
    tagged = config.for_test(["prettyplay.healing_attempts=5", "interactive"], "Order a tea")
    assert (tagged.healing_attempts, tagged.interactive) == (5, True)
    assert type(tagged) is TestConfig and not hasattr(tagged, "model")
    assert config.for_test().healing_attempts == 2


def test_the_docs_document_every_key_and_no_other() -> None:
    documented = documented_keys()
    assert len(documented) == len(set(documented)), "a key is documented twice"
    assert set(documented) == set(KEYS)
    config = PrettyConfig()
    assert all(hasattr(config, key) for key in documented)


def test_defaults() -> None:
    config = PrettyConfig(base_url="http://localhost:8000/app")
    assert config.verdict_model == config.model
    assert (config.llm_timeout, config.llm_retries) == (60.0, 2)
    assert (config.generation_attempts, config.healing_attempts) == (3, 2)
    assert (config.speed, config.slow_mo_ms, config.headless) == (100, 0, True)
    assert config.origins == ("http://localhost:8000",)


def test_speed_maps_to_slow_mo() -> None:
    assert PrettyConfig(speed=30).slow_mo_ms == 2100


def test_precedence_tag_over_define_over_environment_over_file() -> None:
    file_values = {"prettyplay.speed": "10", "prettyplay.model": "file-model"}
    environ = {"PRETTYPLAY_SPEED": "20", "PRETTYPLAY_LLM_RETRIES": "4"}
    defines = {"prettyplay.speed": "30"}
    config = resolve_config(file_values=file_values, environ=environ, defines=defines)
    assert (config.speed, config.model, config.llm_retries) == (30, "file-model", 4)
    tagged = config.for_test(["strict", "prettyplay.settle_ms=40"])
    assert (tagged.settle_ms, tagged.strict) == (40, True)
    assert not config.strict


@pytest.mark.parametrize(
    ("sources", "key", "value", "source"),
    [
        ({"file_values": {"prettyplay.speed": "140"}}, "speed", "140", "behave config file"),
        ({"defines": {"prettyplay.healing_attempts": "-1"}}, "healing_attempts", "-1", "-D"),
        ({"environ": {"PRETTYPLAY_LLM_TIMEOUT": "soon"}}, "llm_timeout", "soon", "PRETTYPLAY_"),
        ({"defines": {"prettyplay.colour": "red"}}, "prettyplay.colour", "red", "-D"),
        ({"environ": {"PRETTYPLAY_COLOUR": "red"}}, "PRETTYPLAY_COLOUR", "red", "environment"),
        ({"defines": {"prettyplay.browser": "lynx"}}, "browser", "lynx", "-D"),
        ({"defines": {"prettyplay.base_url": "localhost"}}, "base_url", "localhost", "-D"),
        ({"defines": {"prettyplay.strict": "maybe"}}, "strict", "maybe", "-D"),
        ({"defines": {"prettyplay.allowed_origins": "ftp://x"}}, "allowed_origins", "ftp", "-D"),
    ],
)
def test_bad_settings_name_key_value_and_source(
    sources: dict[str, dict[str, str]], key: str, value: str, source: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(
            file_values=sources.get("file_values"),
            environ=sources.get("environ"),
            defines=sources.get("defines"),
        )
    message = str(caught.value)
    assert key in message and value in message and source in message


def test_a_bad_tag_value_names_the_tag() -> None:
    with pytest.raises(ConfigError, match=r"tag @prettyplay\.settle_ms=fast"):
        PrettyConfig().for_test(["prettyplay.settle_ms=fast"])


def test_python_api_values_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"'speed' = 140 \(from PrettyConfig\)"):
        PrettyConfig(speed=140)
    with pytest.raises(ConfigError, match="generation_attempts"):
        PrettyConfig(generation_attempts=0)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:80/shop", "http://127.0.0.1"),
        ("HTTPS://Shop.Example:443", "https://shop.example"),
        ("http://localhost:8000/", "http://localhost:8000"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
    ],
)
def test_origins_compare_as_browsers_do(url: str, origin: str) -> None:
    assert PrettyConfig(base_url=url).origins == (origin,)


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ({"defines": {"prettyplay.sped": "3"}}, "(did you mean 'prettyplay.speed'?); known: "),
        ({"file_values": {"prettyplay.Base_URL": "x"}}, "(did you mean 'prettyplay.base_url'?)"),
        ({"environ": {"PRETTYPLAY_SPEEED": "3"}}, "(did you mean 'PRETTYPLAY_SPEED'?)"),
    ],
)
def test_a_misspelt_setting_names_the_nearest_key(sources, message) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(**sources)
    assert message in str(caught.value)


def test_a_setting_near_no_key_lists_them_all() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(defines={"prettyplay.zzz": "1"})
    assert "did you mean" not in str(caught.value)
    assert "unknown setting; known: base_url, " in str(caught.value)


def test_the_refused_context_options_are_playwright_options_each_with_what_to_use_instead() -> None:
    from prettyplay_behave.context_args import ORIGIN_BOUND, REFUSED, playwright_options

    options = playwright_options()
    assert {"geolocation", "permissions", "http_credentials", "offline"} <= options
    assert set(REFUSED) <= options and set(ORIGIN_BOUND) <= options
    assert all(len(instead) > 20 for instead in REFUSED.values())


def test_a_misspelt_group_tag_is_refused_with_the_name_meant() -> None:
    with pytest.raises(ConfigError) as caught:
        PrettyConfig().for_test(["group", "group.speeed=50"], "Order")
    assert str(caught.value) == (
        "setting 'group.speeed' = '50' (from tag @group.speeed=50 of scenario 'Order'): unknown "
        "group setting (did you mean @group.speed=50?); a group's tags are @group.speed=... and "
        "@group.delay=..."
    )
    assert PrettyConfig().for_test(["group", "group.speed=50"]).group_speed == 50
