"""``prettyplay export``: the examples exported, then run by plain behave in a Python where
prettyplay cannot be imported, against the demo shop."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import sysconfig
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave.behave.liveness import scenarios_of
from prettyplay_behave.cache import (
    CacheKey,
    CacheStore,
    CacheWrite,
    RedVerdict,
    StepEntry,
    file_name,
    render_steps,
)
from prettyplay_behave.cli import main
from prettyplay_behave.demo.server import DemoShop
from prettyplay_behave.safety.step_code import check_code

ROOT = Path(__file__).resolve().parent.parent.parent
FEATURES = ROOT / "features"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_export")]


@dataclass(frozen=True)
class PlainRun:
    export_status: int
    export_output: str
    export_dir: Path
    python: Path  # the interpreter of behave and Playwright alone
    environ: dict[str, str]
    cwd: Path
    behave: subprocess.CompletedProcess[str]


def plain_python(folder: Path) -> Path:
    """A venv without pip that sees the project venv's packages through a plain path line: an
    editable install's finder (a .pth of that folder) is not processed from there, so behave and
    Playwright import and prettyplay does not."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(own, "project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plain_python(tmp_path_factory.mktemp("venv") / "venv")


def export_and_run(folder: Path, python: Path, features: Path) -> PlainRun:
    """``prettyplay export`` from the project root that holds ``features``, then behave on the
    export in the plain Python, from a folder outside the repository."""
    exported = folder / "exported"
    output = io.StringIO()
    here = Path.cwd()
    os.chdir(
        features.parent
    )  # the project's root, as a user runs prettyplay (tags name files from it)
    try:
        with redirect_stdout(output):
            status = main(["export", str(exported), "--features", features.name])
    finally:
        os.chdir(here)
    environ = {
        name: value
        for name, value in os.environ.items()
        if name != "PYTHONPATH" and not name.startswith("PRETTYPLAY_")
    }
    cwd = folder / "elsewhere"
    cwd.mkdir()
    with DemoShop() as shop:
        behave = subprocess.run(
            [str(python), "-m", "behave", str(exported), "--no-color", "--format", "pretty"],
            cwd=cwd,
            env={**environ, "BASE_URL": shop.url},
            capture_output=True,
            text=True,
            timeout=300,
        )
    return PlainRun(status, output.getvalue(), exported, python, environ, cwd, behave)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory, python: Path) -> PlainRun:
    return export_and_run(tmp_path_factory.mktemp("examples"), python, FEATURES)


PICKS = """\
Feature: Picks
  Scenario: Twice
    When I open the shop
    And I open the shop
    Then the address ends with "/login"

  Scenario: Remember
    Given I open the "/login" page
    When I note the heading
    Then the heading is still the noted one

  Scenario: Forget
    Given I open the "/login" page
    Then the heading is still the noted one

  Scenario: Form
    Given I open the "/login" page
    When I fill the form:
      | field | value           |
      | Email | ann@example.com |
    Then the email field holds "ann@example.com"

  Scenario: Red
    Given I open the "/cart" page
    Then the total is 13

  Scenario: Fixed
    Given I open the "/cart" page
    Then the heading says "Your cart"

  Scenario Outline: Paths
    Given I open the <path> path
    Then the address ends with "<path>"

    Examples:
      | path   |
      | /login |
      | /cart  |
"""


def code(body: str, *parameters: str) -> str:
    head = f"def step(page{''.join(f', {name}' for name in parameters)}) -> None:\n"
    return head + "".join(f"    {line}\n" for line in body.strip().splitlines())


@pytest.fixture(scope="module")
def picks_run(tmp_path_factory: pytest.TempPathFactory, python: Path) -> PlainRun:
    """A feature whose steps find pinned, value-specific, general, data and red entries (one
    still red, one whose app was fixed since), as a run wrote them, exported and run by plain
    behave."""
    folder = tmp_path_factory.mktemp("picks")
    features = folder / "features"
    features.mkdir()
    (features / "picks.feature").write_text(PICKS)
    store = CacheStore(features / ".prettyplay", validate=check_code)

    def keep(
        scenario: str, kind: str, sentence: str, body: str, *parameters: str, **how: Any
    ) -> None:
        where = {name: how.pop(name) for name in ("data", "occurrence", "outline") if name in how}
        key = CacheKey(f"picks.feature::{scenario}", kind, sentence, **where)
        store.write(CacheWrite(key, code(body, *parameters), "generated", **how))

    heading = 'page.get_by_role("heading", level=1).inner_text()'
    url_ends = 'expect(page).to_have_url(re.compile(re.escape(text) + "$"))'
    keep("Twice", "action", "I open the shop", 'page.goto("/")')
    keep("Twice", "action", "I open the shop", 'page.goto("/login")', occurrence=2, pinned=True)
    keep("Twice", "check", 'the address ends with "/login"', url_ends, "text")
    keep("Remember", "action", 'I open the "/login" page', "page.goto(text)", "text")
    keep("Remember", "action", "I note the heading", f'remember("heading", {heading})')
    keep(
        "Remember",
        "check",
        "the heading is still the noted one",
        f'assert recall("heading") == {heading}',
    )
    keep(
        "Form",
        "action",
        "I fill the form:",
        'page.get_by_label("Email").fill("ann@example.com")',
        data="| field | value |\n| Email | ann@example.com |",
    )
    keep(
        "Form",
        "check",
        'the email field holds "ann@example.com"',
        'expect(page.get_by_label("Email")).to_have_value(text)',
        "text",
    )
    keep(
        "Red",
        "check",
        "the total is 13",
        'expect(page.get_by_text("Total")).to_have_text("13", timeout=500)',
        verdict=RedVerdict("product_defect", "the cart shows no total"),
    )
    keep(  # judged red once; the app does what the step says now
        "Fixed",
        "check",
        'the heading says "Your cart"',
        'expect(page.get_by_role("heading", level=1)).to_have_text("Your cart")',
        verdict=RedVerdict("product_defect", "the cart has no heading"),
    )
    keep(
        "Paths -- @1.1 ",
        "action",
        "I open the /login path",
        "page.goto(path)",
        "path",
        outline="I open the <path> path",
    )
    return export_and_run(folder, python, features)


def test_prettyplay_cannot_be_imported_where_the_export_runs(plain_run: PlainRun) -> None:
    tried = subprocess.run(
        [str(plain_run.python), "-c", "import behave, parse, playwright; import prettyplay_behave"],
        cwd=plain_run.cwd,
        env=plain_run.environ,
        capture_output=True,
        text=True,
    )
    assert tried.returncode == 1
    assert "No module named 'prettyplay_behave'" in tried.stderr


def test_the_exported_examples_pass_with_behave_and_playwright_alone(plain_run: PlainRun) -> None:
    from behave.parser import parse_file

    scenarios = sum(
        len(list(scenarios_of(parse_file(str(path))))) for path in FEATURES.rglob("*.feature")
    )
    behave = plain_run.behave
    assert behave.returncode == 0, behave.stdout[-3000:] + behave.stderr[-3000:]
    assert f"{scenarios} scenarios passed, 0 failed, 0 skipped" in behave.stdout
    assert re.search(r"\d+ steps passed, 0 failed, 0 skipped$", behave.stdout, re.MULTILINE)
    # every step ran an exported definition: the pretty formatter names where each one is
    located = re.findall(r"# (\S+):\d+$", behave.stdout, re.MULTILINE)
    steps = [place for place in located if not place.endswith(".feature")]
    assert steps and all(place.endswith("steps/exported_steps.py") for place in steps)


def test_the_export_copies_the_features_and_says_what_it_wrote(plain_run: PlainRun) -> None:
    assert plain_run.export_status == 0, plain_run.export_output
    assert "wrote shop/checkout.feature (1 step annotation removed)" in plain_run.export_output
    copied = (plain_run.export_dir / "shop" / "checkout.feature").read_text()
    assert 'Then the order status shows "order confirmed"\n' in copied
    assert "[tries=2]" in (FEATURES / "shop" / "checkout.feature").read_text()  # untouched
    tagged = (plain_run.export_dir / "real_pages.feature").read_text()
    assert "@prettyplay.storage_state=files/ann.json" in tagged
    assert (plain_run.export_dir / "files" / "receipt.pdf").is_file()
    assert not (plain_run.export_dir / ".prettyplay").exists()
    for module in plain_run.export_dir.rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) prettyplay", text, re.MULTILINE), module


def scenario_lines(output: str) -> dict[str, str]:
    """Each scenario of the pretty formatter's output: its name and its lines."""
    parts = re.split(r"^  Scenario(?: Outline)?: ", output, flags=re.MULTILINE)[1:]
    return {part.split("  #")[0].strip(): part for part in parts}


def test_each_step_runs_the_entry_a_prettyplay_run_finds(picks_run: PlainRun) -> None:
    """The pin of the scenario and occurrence, the general code with the step's values (an
    Outline's placeholder too), the code of the step's table; memory lives for one scenario,
    and a red entry runs its code: red while the app still fails it, green once it is fixed."""
    behave = picks_run.behave
    assert picks_run.export_status == 0, picks_run.export_output
    assert "6 scenarios passed, 2 failed, 0 skipped" in behave.stdout, behave.stdout[-3000:]
    scenarios = scenario_lines(behave.stdout)
    assert (
        "ASSERT FAILED: nothing was remembered as 'heading' (remembered: nothing)"
        in (scenarios["Forget"])
    )
    assert "Locator expected to have text '13'" in scenarios["Red"], scenarios["Red"]
    steps = (picks_run.export_dir / "steps" / "exported_steps.py").read_text()
    assert "# red when exported: product_defect: the cart has no heading\n" in steps
    failing = re.search(r"Failing scenarios:\n(.*?)\n\n", behave.stdout, re.DOTALL)
    assert failing is not None
    # Fixed, judged red when its app failed it, passes
    assert [line.split("  ")[-1] for line in failing.group(1).splitlines()] == ["Forget", "Red"]


ODD = """\
Feature: Odd code
  Scenario: Odd code
    Given I note the line separators
    And I open the shop after a comment
    And I open the shop spaced
    And I open the shop after a blank line
    When I attach the receipt
"""
# Code a hand edit or a merge may leave in the library (each passes the policy), by sentence.
ODD_CODE = {
    "I note the line separators": (
        'def step(page) -> None:\n    note = "a\u2028b\x1cc"  # d\u2028e\x1cf\n    page.goto("/")\n'
    ),
    "I open the shop after a comment": (
        '# opens the shop\ndef step(page) -> None:\n    page.goto("/")\n'
    ),
    "I open the shop spaced": 'def step (page) -> None:\n    page.goto("/")\n',
    "I open the shop after a blank line": '\ndef  step(page) -> None:\n    page.goto("/")\n',
    "I attach the receipt": (
        "def step(page) -> None:\n"
        '    page.goto("/")  # \u2028\x1c\n'
        '    note = "\u2028\x1c\x1d\x1e\x85\u2029"\n'
        '    page.set_input_files("#receipt", "receipt.pdf")\n'
    ),
}


def test_odd_code_is_exported_as_it_is_and_plain_behave_loads_it(
    tmp_path: Path, python: Path
) -> None:
    """Line separators Python does not count, a comment or a blank line before the def, spaces
    around the name: each function is the cached code renamed (its upload named through
    upload), byte for byte; an entry whose values do not fit its sentence's marks is left out
    by name, and behave loads the rest."""
    features = tmp_path / "features"
    features.mkdir()
    (features / "odd.feature").write_text(ODD, encoding="utf-8")
    store = CacheStore(features / ".prettyplay", validate=check_code)
    for sentence, code in ODD_CODE.items():
        store.write(
            CacheWrite(CacheKey("odd.feature::Odd code", "action", sentence), code, "generated")
        )
    short = StepEntry("action", 'I pay "{}" for "{}"', ODD_CODE["I open the shop spaced"],
                      "generated", values=("tea",))  # fmt: skip
    short_file = features / ".prettyplay" / "steps" / file_name(short.step)
    short_file.write_bytes(render_steps([short]))
    kept = {e.sentence: e.code for e in CacheStore(store.cache_dir, check_code).library().entries}
    assert kept == ODD_CODE  # the library holds each code as it was written

    output = io.StringIO()
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        with redirect_stdout(output):
            status = main(["export", "exported"])
    finally:
        os.chdir(here)
    assert status == 1, output.getvalue()
    assert (
        f"left out: features/.prettyplay/steps/{short_file.name}: line 10 (action 'I pay "
        "\"{}\" for \"{}\"' for 'tea'): 'values' holds 1 value, but its sentence has 2 marks ({})\n"
    ) in output.getvalue()
    assert "no cached code" not in output.getvalue()

    module = (tmp_path / "exported" / "steps" / "exported_steps.py").read_text(encoding="utf-8")
    for sentence, code in ODD_CODE.items():
        name = "_".join(sentence.lower().split())
        function = code.replace("step", name, 1).replace('"receipt.pdf"', 'upload("receipt.pdf")')
        assert f"\n\n\n{function}\n\n" in module, sentence  # whole, as it is, but the two
        assert f"                code={name},\n" in module

    loaded = subprocess.run(
        [str(python), "-m", "behave", "--dry-run", "--no-color", "--format", "pretty",
         str(tmp_path / "exported")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stdout[-3000:] + loaded.stderr[-3000:]
    # every step found its definition (none undefined), and none ran
    assert "\n0 steps passed, 0 failed, 0 skipped, 5 untested\n" in loaded.stdout
    located = re.findall(r"# (\S+):\d+$", loaded.stdout, re.MULTILINE)
    steps = [place for place in located if not place.endswith(".feature")]
    assert len(steps) == 5 and all(place.endswith("steps/exported_steps.py") for place in steps)
