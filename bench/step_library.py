"""What the step library saves: requests and wall time of a suite with an Outline and a shared
Background, cold, replayed, edited and against a changed UI.

Real behave runs against the to-do app of the tests (``tests/support/todo_app.py``), the real
openai client against the scripted server, which answers from the requests alone: ``generate``
writes the code for the sentence (taking its value as a parameter when the request names one,
spelling it out when it does not), ``classify`` says ``rot``, ``heal`` writes the code for the
renamed field, ``gate`` passes everything. The runs, in order, in one project:

- cold: an empty cache;
- replay: strict, no LLM configured;
- edited, strict: two Examples rows swapped, a row added, a scenario renamed;
- changed UI: the new-todo field's placeholder renamed, with the LLM.

``--package DIR`` runs the prettyplay of another checkout (its ``prettyplay_behave`` put first on
``PYTHONPATH``, its ``templates/`` as ``templates_dir``), so the same suite measures an earlier
version:

    .venv/bin/python bench/step_library.py
    git worktree add /tmp/before <commit>
    .venv/bin/python bench/step_library.py --package /tmp/before
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prettyplay_behave.parameters import parameterize  # noqa: E402
from tests.support.llm_server import (  # noqa: E402
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)
from tests.support.pages import PageServer  # noqa: E402
from tests.support.todo_app import CODE, FIELD, RENAMED_FIELD, TYPING, todo_page  # noqa: E402

SUITE = """\
Feature: Todos
  Background:
    Given I open the todo app

  Scenario Outline: Add a todo
    When I add a todo "<item>"
    Then the list shows "<item>"
    And the counter shows "1 item left"

    Examples:
      | item         |
      | buy milk     |
      | feed the cat |
      | call Ann     |

  Scenario: Complete a todo
    When I add a todo "water the plants"
    And I complete the todo "water the plants"
    Then the todo "water the plants" is completed
    And the counter shows "0 items left"

  Scenario: Delete a todo
    When I add a todo "call Ann"
    And I add a todo "pay the rent"
    And I delete the todo "call Ann"
    Then the list shows "pay the rent"
    And the counter shows "1 item left"

  Scenario: Type and clear
    When I type "milk" into the new todo field
    Then the new todo field says "milk"
    When I clear the new todo field
    Then the new todo field is empty
"""
EDITED = SUITE.replace(
    "      | buy milk     |\n      | feed the cat |\n",
    "      | feed the cat |\n      | walk the dog |\n      | buy milk     |\n",
).replace("Scenario: Delete a todo", "Scenario: Remove a todo")
ENVIRONMENT = "from prettyplay_behave.behave import use_prettyplay\n\nuse_prettyplay(globals())\n"
STEPS = "import prettyplay_behave.behave.steps  # noqa: F401\n"
BODIES = {**CODE, **TYPING}
ROT = {"label": "rot", "explanation": "the field's placeholder is new", "recommendation": "-"}


def code_for(request: RecordedRequest, field: str) -> str:
    """The code a model writes for the request's sentence: the value as a parameter when the
    request names its parameters, spelled out when it does not."""
    parameters = parameterize(str(request.step))
    body = BODIES[parameters.template].replace(FIELD, field)
    signature = "def step(page) -> None:"
    if parameters.values and "PARAMETERS" in request.content("user"):
        signature = "def step(page, value) -> None:"
    elif parameters.values:
        body = f"value = {parameters.values[0]!r}\n{body}"
    return signature + "\n" + "".join(f"    {line}\n" for line in body.splitlines())


def scripted(llm: ScriptedLLMServer) -> None:
    llm.on("generate", lambda r: code_answer(code_for(r, FIELD)), repeat=True)
    llm.on("classify", json_answer(ROT), repeat=True)
    llm.on("heal", lambda r: code_answer(code_for(r, RENAMED_FIELD)), repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)


def behave(project: Path, package: Path, env: dict[str, str], *args: str) -> tuple[str, float]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    environ.update(env, PYTHONPATH=str(package))
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "behave", "--no-color", "-f", "progress", *args],
        cwd=project, env=environ, text=True, capture_output=True, timeout=900,
    )  # fmt: skip
    return completed.stdout + completed.stderr, time.perf_counter() - started


def scenarios(output: str) -> str:
    found = re.search(r"(\d+) scenarios? passed, (\d+) failed(?:, (\d+) error)?", output)
    if found is None:
        return "no behave summary"
    return f"{found[1]} passed, {found[2]} failed" + (
        f", {found[3]} errors" if found[3] not in (None, "0") else ""
    )


def new_project(project: Path) -> None:
    """A behave project in ``project`` that uses prettyplay, with no feature yet."""
    (project / "features" / "steps").mkdir(parents=True)
    (project / "features" / "environment.py").write_text(ENVIRONMENT)
    (project / "features" / "steps" / "prettyplay_steps.py").write_text(STEPS)


def run_options(app_url: str, package: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``-D`` options of a run against ``app_url`` with ``package``'s prompts, and those of
    a strict one."""
    base = (
        "-D",
        f"prettyplay.base_url={app_url}",
        "-D",
        f"prettyplay.templates_dir={package / 'templates'}",
    )
    return base, (*base, "-D", "prettyplay.strict=true")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT, help="the checkout to measure")
    package = parser.parse_args().package.resolve()
    assert (package / "prettyplay_behave").is_dir(), f"{package}: no prettyplay_behave there"
    with tempfile.TemporaryDirectory() as tmp, PageServer({"/": todo_page()}) as app:
        project = Path(tmp)
        new_project(project)
        feature = project / "features" / "todos.feature"
        base, strict = run_options(app.url, package)
        runs = (
            ("cold", SUITE, "normal", True, base),
            ("replay (strict)", SUITE, "normal", False, strict),
            ("edited (strict)", EDITED, "normal", False, strict),
            ("changed UI", SUITE, "renamed", True, base),
        )
        print(f"prettyplay from {package}")
        print("| run | scenarios | requests | by purpose | wall time |")
        print("| --- | --- | ---: | --- | ---: |")
        for name, text, variant, with_llm, args in runs:
            feature.write_text(text)
            app.pages["/"] = todo_page(variant)
            with ScriptedLLMServer() as llm:
                scripted(llm)
                output, wall = behave(project, package, llm.env if with_llm else {}, *args)
                purposes = Counter(r.purpose for r in llm.requests)
            by_purpose = ", ".join(f"{p} {n}" for p, n in sorted(purposes.items())) or "-"
            print(f"| {name} | {scenarios(output)} | {len(llm.requests)} | {by_purpose} | "
                  f"{wall:.1f} s |")  # fmt: skip
        # the project library's files, or an earlier checkout's per-feature file
        cache = [
            path
            for path in (project / "features" / ".prettyplay").rglob("*")
            if path.is_file() and path.suffix != ".lock"
        ]
        size = sum(path.stat().st_size for path in cache)
        print(f"cache: {len(cache)} files, {size:,} bytes")


if __name__ == "__main__":
    main()
