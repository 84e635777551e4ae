"""Log lines and behave's formatters on one destination (a terminal, or one pipe for stdout and
stderr as here): a log line never lands inside a formatter's line, and the coloured ``pretty``
formatter's rewrite of a step's line never overwrites the log lines printed meanwhile."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import BehaveProject

FEATURE = """\
Feature: Lines
  Scenario: Logs
    Given I log a line
    And I log a line
"""
OWN_STEPS = """\
import logging

from behave import step


@step("I log a line")
def log_a_line(context):
    logging.getLogger("own").warning("a line from the step")
"""
ESCAPE = re.compile(r"\x1b\[(\d*)([A-Za-z])")


def run(project: BehaveProject, shop, *args: str) -> str:
    """behave with stdout and stderr on one pipe, as on a terminal."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-m", "behave", "-D", f"prettyplay.base_url={shop.url}", *args],
        cwd=project.root, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    return done.stdout


def screen(output: str) -> list[str]:
    """The lines a terminal shows for ``output``: the cursor moves up and down, lines are
    overwritten from where the cursor is, colours are dropped."""
    rows: list[str] = [""]
    row = column = 0
    position = 0
    for match in [*ESCAPE.finditer(output), None]:
        end = match.start() if match else len(output)
        for char in output[position:end]:
            if char == "\n":
                row, column = row + 1, 0
                rows += [""] * (row + 1 - len(rows))
            elif char == "\r":
                column = 0
            else:
                line = rows[row].ljust(column)
                rows[row] = line[:column] + char + line[column + 1 :]
                column += 1
        if match is None:
            break
        count = int(match[1] or 1)
        if match[2] == "A":
            row = max(0, row - count)
        elif match[2] == "B":
            row += count
            rows += [""] * (row + 1 - len(rows))
        position = match.end()
    return rows


def test_a_log_line_starts_on_a_line_of_its_own_in_progress_output(project: BehaveProject, shop):
    project.write("features/lines.feature", FEATURE)
    project.write("features/steps/own_steps.py", OWN_STEPS)
    output = run(project, shop, "-f", "progress", "--no-color", "--no-logcapture")
    lines = output.splitlines()
    logged = [line for line in lines if "a line from the step" in line]
    assert logged == ["LOG_WARNING:own: a line from the step"] * 2, output
    assert "features/lines.feature  " in lines, output  # the feature's line, ended before the log
    assert not any("feature  LOG_" in line or ".LOG_" in line for line in lines), output


def test_the_pretty_formatters_rewrite_keeps_the_log_lines(project: BehaveProject, shop):
    project.write("features/lines.feature", FEATURE)
    project.write("features/steps/own_steps.py", OWN_STEPS)
    output = run(project, shop, "-f", "pretty", "--color=always", "--no-logcapture")
    assert "\x1b[" in output  # coloured: the pretty formatter rewrites each step's line
    shown = [line.rstrip() for line in screen(output)]
    text = "\n".join(shown)
    assert shown.count("LOG_WARNING:own: a line from the step") == 2, text  # none overwritten
    given = next(i for i, line in enumerate(shown) if "Given I log a line" in line)
    # the step's line as it started, the step's log line, then the step's line with its result
    assert shown[given + 1] == "LOG_WARNING:own: a line from the step", text
    assert "Given I log a line" in shown[given + 2], text
    assert "s" in shown[given + 2].split("own_steps.py:6")[-1], text  # its duration: the result
