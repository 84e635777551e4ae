"""The ``prettyplay`` command line: its help reads as plain text with named arguments, it tells
its version, and a feature file behave cannot read is one line, the same from every command."""

from __future__ import annotations

import argparse
import re
from importlib import metadata
from pathlib import Path

import pytest

from prettyplay_behave.cli import main, parser
from tests.support.behave_runs import run_prettyplay
from tests.support.caches import plant, steps


def commands(of: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Every command of the command line (the top one too), as its words."""
    found = [list(path)]
    for action in of._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found += commands(command, (*path, name))
    return found


COMMANDS = commands(parser())
# what each command's arguments are called in its usage line
NAMED = {
    "check": "[PATH ...]",
    "cache list": "[PATH ...]",
    "cache prune": "[--features DIR] [--dry-run] [CACHE_DIR]",
    "cache drop": "[--cache-dir CACHE_DIR] [--dry-run] SENTENCE",
    "cache migrate": "[CACHE_DIR ...]",
    "cache diff": "[--cache-dir CACHE_DIR] [REF]",
    "init": "[--base-url URL] [DIR]",
    "export": "[--features DIR] [--cache-dir CACHE_DIR] [--files-dir DIR] [--force] DIR",
    "plan": "[-D NAME=VALUE] [--strict] [PATH ...]",
}
BROKEN = "Scenario: Pay\n  Given I pay\n"  # no Feature line: behave's parser refuses it


def test_the_commands_are_found_at_every_level() -> None:
    found = {" ".join(command) for command in COMMANDS}
    assert {"", "check", "cache", "cache prune", "cache diff", "plan"} <= found, found


def help_of(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: " ".join(command) or "top")
def test_the_help_of_every_command_is_plain_text_with_named_arguments(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one usage line, whatever the terminal
    text = help_of(command, capsys)
    usage = text.splitlines()[0]
    assert usage.startswith(f"usage: {' '.join(['prettyplay', *command])} [-h]"), usage
    assert "``" not in text and ":class:" not in text
    # an argument shown by the name the code gives it (paths, cache_dir) is lower case
    shown = usage.removeprefix(f"usage: {' '.join(['prettyplay', *command])}")
    assert re.findall(r"(?<![-\w])[a-z_]+\b", shown) == [], usage
    assert NAMED.get(" ".join(command), "") in usage


def test_the_cache_command_describes_the_step_library(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of(["cache"], capsys)
    assert "one Python file per step" in text and "entries per feature" not in text


def test_the_version_is_the_installed_packages(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"prettyplay {metadata.version('prettyplay-behave')}\n"


def test_prune_on_a_feature_file_behave_cannot_read_says_so_in_one_line_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    features = tmp_path / "features"
    (features / "steps").mkdir(parents=True)
    (features / "steps" / "prettyplay_steps.py").write_text(
        "from prettyplay_behave.behave.steps import *  # noqa: F403\n"
    )
    (features / "pay.feature").write_text(BROKEN)
    # no feature file reads this entry: a prune that skipped the broken file would delete it
    plant(
        features / ".prettyplay",
        "pay.feature::Pay",
        ("action", "I pay", "def step(page) -> None:\n    pass\n"),
    )
    before = steps(features / ".prettyplay")
    said = {}
    for command in (["cache", "prune"], ["export", "exported"], ["plan"]):
        done = run_prettyplay(tmp_path, command)
        assert done.returncode == 2, done
        assert "Traceback" not in done.stderr and done.stdout == "", done
        said[command[0]] = done.stderr
    line = (
        "prettyplay: features/pay.feature: behave cannot read it (Parser failure in "
        'state=initial at line 1: "Scenario: Pay"; REASON: Scenario may not occur before '
        "Feature.)\n"
    )
    assert said == {"cache": line, "export": line, "plan": line}
    assert steps(features / ".prettyplay") == before
    assert not (tmp_path / "exported").exists()


def test_a_step_annotation_prettyplay_does_not_know_stops_prune_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    features = tmp_path / "features"
    features.mkdir()
    (features / "pay.feature").write_text(
        "Feature: Pay\n  Scenario: Pay\n    Given I pay [speed=2]\n"
    )
    assert main(["cache", "prune", str(features / ".prettyplay")]) == 2
    error = capsys.readouterr().err
    assert error == (
        f"prettyplay: {features / 'pay.feature'}: unknown step parameter 'speed' in "
        "'I pay [speed=2]'; known: tries, delay\n"
    )
