"""``prettyplay export``: the examples exported, then run by plain behave in a Python where
prettyplay cannot be imported, against the demo shop."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from prettyplay_behave.behave.liveness import scenarios_of
from prettyplay_behave.cli import main
from prettyplay_behave.demo.server import DemoShop

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
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlainRun]:
    folder = tmp_path_factory.mktemp("export")
    exported = folder / "exported"
    output = io.StringIO()
    here = Path.cwd()
    os.chdir(ROOT)  # the project's root, as a user runs prettyplay (tags name files from it)
    try:
        with redirect_stdout(output):
            status = main(["export", str(exported), "--features", "features"])
    finally:
        os.chdir(here)
    python = plain_python(folder / "venv")
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
    yield PlainRun(status, output.getvalue(), exported, python, environ, cwd, behave)


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
