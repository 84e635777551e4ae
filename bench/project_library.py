"""What one library per project saves: cache entries and files written by a suite of several
features that share steps, cold, replayed and against a changed UI.

Real behave runs against the to-do app of the tests, the real openai client against the
scripted server (answering as ``bench/step_library.py`` does), in one project of five features
that share their Background and most steps. The runs, in order:

- cold: an empty cache;
- replay: strict, no LLM configured;
- changed UI: the new-todo field's placeholder renamed, with the LLM.

For each run: the scenarios, the LLM requests, the entries written (added or changed, read with
this checkout's parser, which reads every format) and the distinct steps they are entries of,
and the cache files touched (added, changed or deleted); then the entries and files the cache
holds. ``--package DIR`` runs the prettyplay of
another checkout, e.g. the last with per-feature files (format 2):

    .venv/bin/python bench/project_library.py
    mkdir /tmp/before && git archive c5e262c | tar -x -C /tmp/before
    .venv/bin/python bench/project_library.py --package /tmp/before
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from step_library import behave, new_project, run_options, scenarios, scripted  # noqa: E402

from prettyplay_behave.cache import parse  # noqa: E402
from prettyplay_behave.cache_diff import entry_changes  # noqa: E402
from prettyplay_behave.safety.step_code import check_code  # noqa: E402
from tests.support.llm_server import ScriptedLLMServer  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.todo_app import todo_page  # noqa: E402

BACKGROUND = "  Background:\n    Given I open the todo app\n\n"
FEATURES = {
    "add.feature": BACKGROUND
    + """\
  Scenario Outline: Add a todo
    When I add a todo "<item>"
    Then the list shows "<item>"
    And the counter shows "1 item left"

    Examples:
      | item         |
      | buy milk     |
      | feed the cat |
""",
    "complete.feature": BACKGROUND
    + """\
  Scenario: Complete a todo
    When I add a todo "water the plants"
    And I complete the todo "water the plants"
    Then the todo "water the plants" is completed
    And the counter shows "0 items left"
""",
    "delete.feature": BACKGROUND
    + """\
  Scenario: Delete a todo
    When I add a todo "call Ann"
    And I add a todo "pay the rent"
    And I delete the todo "call Ann"
    Then the list shows "pay the rent"
    And the counter shows "1 item left"
""",
    "typing.feature": BACKGROUND
    + """\
  Scenario: Type and clear
    When I type "milk" into the new todo field
    Then the new todo field says "milk"
    When I clear the new todo field
    Then the new todo field is empty
    When I add a todo "bread"
    Then the list shows "bread"
""",
    "smoke.feature": BACKGROUND
    + """\
  Scenario: Add and complete
    When I add a todo "run the bench"
    And I complete the todo "run the bench"
    Then the counter shows "0 items left"
""",
}


def cache_files(cache_dir: Path) -> dict[str, bytes]:
    """Every cache file (old per-feature JSON or library Python) by its path in the folder."""
    found = [*cache_dir.rglob("*.json"), *cache_dir.glob("steps/*.py")]
    return {str(path.relative_to(cache_dir)): path.read_bytes() for path in found}


def entries_of(name: str, raw: bytes | None) -> list:
    return parse(Path(name), raw, check_code).entries if raw is not None else []


def written(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[int, int, int]:
    """Entries added or changed, the steps they are entries of, and files added, changed or
    deleted."""
    from prettyplay_behave.cache import Library

    touched = [name for name in {*before, *after} if before.get(name) != after.get(name)]
    entries, steps = 0, set()
    for name in touched:
        old = Library(entries_of(name, before.get(name)))
        new = Library(entries_of(name, after.get(name)))
        changes = [c for c in entry_changes(old, new) if c.what != "removed"]
        entries += len(changes)
        steps |= {change.entry.step for change in changes}
    return entries, len(steps), len(touched)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT, help="the checkout to measure")
    package = parser.parse_args().package.resolve()
    assert (package / "prettyplay_behave").is_dir(), f"{package}: no prettyplay_behave there"
    with tempfile.TemporaryDirectory() as tmp, PageServer({"/": todo_page()}) as app:
        project = Path(tmp)
        new_project(project)
        for name, body in FEATURES.items():
            title = name.removesuffix(".feature").capitalize()
            (project / "features" / name).write_text(f"Feature: {title}\n{body}")
        cache_dir = project / "features" / ".prettyplay"
        base, strict = run_options(app.url, package)
        runs = (
            ("cold", "normal", True, base),
            ("replay (strict)", "normal", False, strict),
            ("changed UI", "renamed", True, base),
        )
        print(f"prettyplay from {package}")
        print("| run | scenarios | requests | entries written (of steps) | files touched |")
        print("| --- | --- | ---: | ---: | ---: |")
        for name, variant, with_llm, args in runs:
            app.pages["/"] = todo_page(variant)
            before = cache_files(cache_dir)
            with ScriptedLLMServer() as llm:
                scripted(llm)
                output, _ = behave(project, package, llm.env if with_llm else {}, *args)
                purposes = Counter(r.purpose for r in llm.requests)
            by_purpose = ", ".join(f"{p} {n}" for p, n in sorted(purposes.items()))
            requests = f"{len(llm.requests)} ({by_purpose})" if by_purpose else "0"
            entries, steps, files = written(before, cache_files(cache_dir))
            print(f"| {name} | {scenarios(output)} | {requests} | {entries} ({steps}) | {files} |")
        held = cache_files(cache_dir)
        total = sum(len(entries_of(name, raw)) for name, raw in held.items())
        size = sum(len(raw) for raw in held.values())
        print(f"cache: {total} entries in {len(held)} files, {size:,} bytes")


if __name__ == "__main__":
    main()
