"""Gherkin to prettyplay: kinds, trailing parameters, data and group tags."""

from __future__ import annotations

import pytest
from behave.model import Table

from prettyplay_behave.behave.mapping import split_annotation, step_spec
from prettyplay_behave.config import PrettyConfig
from prettyplay_behave.errors import ConfigError


@pytest.mark.parametrize(
    ("step_type", "kind"), [("given", "action"), ("when", "action"), ("then", "check")]
)
def test_keywords_map_to_actions_and_checks(step_type: str, kind: str) -> None:
    assert step_spec(step_type, "the page greets Ann").kind == kind


def test_trailing_parameters_are_stripped_from_the_sentence() -> None:
    spec = step_spec("then", 'the status shows "order confirmed" [tries=2, delay=0.5]')
    assert (spec.sentence, spec.tries, spec.delay) == ('the status shows "order confirmed"', 2, 0.5)


def test_brackets_that_are_not_parameters_stay_in_the_sentence() -> None:
    assert split_annotation("I pick the [blue] mug") == ("I pick the [blue] mug", {})


def test_an_unknown_parameter_is_named() -> None:
    with pytest.raises(ValueError, match="unknown step parameter 'retries'"):
        split_annotation("I click Buy [retries=2]")


def test_a_bad_parameter_value_is_named() -> None:
    with pytest.raises(ValueError, match="tries='x'"):
        split_annotation("I click Buy [tries=x]")


def test_docstring_and_table_become_data() -> None:
    table = Table(["field", "value"], rows=[["Email", "ann@example.com"]])
    assert step_spec("when", "I fill:", table=table).data == (
        "| field | value |\n| Email | ann@example.com |"
    )
    assert step_spec("when", "I type:", text="hello\nworld").data == "hello\nworld"


def test_group_tags_are_settings_of_the_test() -> None:
    config = PrettyConfig().for_test(["group", "group.speed=30", "group.delay=2"], "Buy")
    assert (config.group_speed, config.group_delay) == (30, 2.0)
    assert (PrettyConfig().for_test(["group"]).group_speed, config.source_of("group_speed")) == (
        None,
        "tag @group.speed=30 of scenario 'Buy'",
    )
    with pytest.raises(ConfigError, match=r"'group_speed' = 'fast' \(from tag @group\.speed=fast"):
        PrettyConfig().for_test(["group", "group.speed=fast"], "Buy")
    with pytest.raises(ConfigError, match="expected 0 to 100"):
        PrettyConfig().for_test(["group.speed=140"])


def test_a_behave_whose_runner_is_elsewhere_stops_the_run_loudly() -> None:
    from types import SimpleNamespace

    from prettyplay_behave.behave.environment import check_scenario_tags
    from prettyplay_behave.errors import PrettyPlayError

    with pytest.raises(PrettyPlayError, match=r"behave's runner is not where prettyplay looks"):
        check_scenario_tags(SimpleNamespace(), PrettyConfig())
