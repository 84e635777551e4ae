"""``prettyplay init``: a new project in an empty folder and in one with its own hooks and
config, each run by behave; the config file behave reads gets ``base_url``; nothing the user
wrote is overwritten."""

from __future__ import annotations

import configparser
import io
import subprocess
from pathlib import Path

import pytest

from prettyplay_behave.scaffold import init
from tests.conftest import BehaveProject
from tests.support.behave_runs import run_prettyplay
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer

OPEN_HOME = 'def step(page) -> None:\n    page.goto("/")\n'
HAS_TITLE = 'def step(page) -> None:\n    expect(page).to_have_title(re.compile(".+"))\n'
WRITTEN = [
    "features/environment.py",
    "features/steps/prettyplay_steps.py",
    "features/sample.feature",
    "features/files/.gitkeep",
    ".gitignore",
]
USER_ENVIRONMENT = '''\
"""My own hooks."""
import pathlib


def before_all(context):
    pathlib.Path("before_all.ran").write_text("yes")


def after_scenario(context, scenario):
    pathlib.Path("after_scenario.ran").write_text(scenario.name)
'''
USER_SETUP_CFG = """\
[metadata]
name = shop-tests

[flake8]
max-line-length = 100

[behave]
show_skipped = false
"""
USER_STEPS = """\
from behave import given


@given("I am one of my own steps")
def my_own_step(context):
    assert context.page.url.startswith("http")
"""
USER_FEATURE = """\
Feature: Mine
  Scenario: My own step
    Given I open the home page
    And I am one of my own steps
"""


def prettyplay(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_prettyplay(cwd, list(args))


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def behave_userdata(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The userdata behave itself reads from the project's config files."""
    from behave.configuration import Configuration

    monkeypatch.chdir(root)
    return dict(Configuration(command_args=[], load_config=True).userdata)


def script_sample(llm: ScriptedLLMServer) -> None:
    llm.on("generate", code_answer(OPEN_HOME), step="I open the home page", repeat=True)
    llm.on("generate", code_answer(HAS_TITLE), step="the page has a title")
    llm.on("gate", CLEAN_GATE, repeat=True)


def test_init_in_an_empty_folder_makes_a_project_that_behave_runs(
    tmp_path: Path, shop, llm: ScriptedLLMServer
) -> None:
    root = tmp_path / "new"
    root.mkdir()
    done = prettyplay(root, "init", "--base-url", shop.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"prettyplay init in {root.resolve()}"
    for name in [*WRITTEN, "behave.ini"]:
        assert any(line.split()[:2] == ["wrote", name] for line in lines), (name, lines)
    assert "OPENAI_API_KEY" in lines[-1]
    environment = (root / "features/environment.py").read_text()
    assert environment.rstrip().endswith(
        "from prettyplay_behave.behave import use_prettyplay\n\nuse_prettyplay(globals())"
    )
    assert (
        (root / "features/steps/prettyplay_steps.py")
        .read_text()
        .endswith("import prettyplay_behave.behave.steps  # noqa: F401\n")
    )
    ignored = (root / ".gitignore").read_text().splitlines()
    assert {"reports/", "features/.prettyplay/.lock"} <= set(ignored)
    project = BehaveProject(root)

    dry = project.run("--dry-run")
    assert dry.returncode == 0, dry
    assert "2 untested" in dry.output

    without_key = project.run()
    assert without_key.returncode == 1
    assert "the LLM is unavailable: no API key is configured; set OPENAI_API_KEY" in (
        without_key.output
    )

    script_sample(llm)
    generated = project.run(env=llm.env)  # base_url comes from the new behave.ini
    assert generated.returncode == 0, generated
    assert "2 generated" in generated.output
    assert len(list((root / "features/.prettyplay/steps").glob("*.py"))) == 2
    assert llm.requests_for("generate")[0].content("user").count(shop.url) >= 1

    before = snapshot(root)
    again = prettyplay(root, "init", "--base-url", "http://elsewhere:9000")
    assert again.returncode == 0, again.stderr
    assert [line.split()[0] for line in again.stdout.splitlines()[1:-1]] == ["kept"] * 6
    assert snapshot(root) == before


def test_init_beside_the_users_hooks_and_setup_cfg_keeps_them(
    tmp_path: Path, shop, llm: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "existing"
    project = BehaveProject(root)
    project.write("features/environment.py", USER_ENVIRONMENT)
    project.write("setup.cfg", USER_SETUP_CFG)
    project.write("features/steps/my_steps.py", USER_STEPS)
    project.write("features/mine.feature", USER_FEATURE)
    before = snapshot(root)
    done = prettyplay(root, "init", "--base-url", shop.url)
    assert done.returncode == 0, done.stderr
    assert (
        f"set      prettyplay.base_url = {shop.url} in setup.cfg [behave.userdata]" in done.stdout
    )
    assert "appended features/environment.py" in done.stdout
    assert not (root / "behave.ini").exists()
    after = snapshot(root)
    for name in ("features/steps/my_steps.py", "features/mine.feature"):
        assert after[name] == before[name]  # untouched, byte for byte
    for name in ("setup.cfg", "features/environment.py"):
        assert after[name].startswith(before[name]), name  # kept, with lines added at the end
    environment = after["features/environment.py"].decode()
    assert environment.rstrip().endswith("use_prettyplay(globals())")
    compile(environment, "environment.py", "exec")
    parser = configparser.ConfigParser()
    parser.read_string(after["setup.cfg"].decode())
    assert parser["flake8"]["max-line-length"] == "100"
    assert parser["behave"]["show_skipped"] == "false"
    assert behave_userdata(root, monkeypatch) == {"prettyplay.base_url": shop.url}

    dry = project.run("--dry-run")
    assert dry.returncode == 0, dry
    script_sample(llm)
    ran = project.run(env=llm.env)
    assert ran.returncode == 0, ran
    assert "2 scenarios passed, 0 failed" in ran.output
    assert (root / "before_all.ran").read_text() == "yes"  # the user's hooks still run
    assert (root / "after_scenario.ran").exists()


def init_here(root: Path, url: str = "http://localhost:8000") -> str:
    out = io.StringIO()
    assert init(root, url, out) == 0
    return out.getvalue()


def test_init_adds_base_url_to_the_config_behave_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an existing [behave.userdata] section (CRLF line endings kept): the line goes under it
    crlf = tmp_path / "crlf"
    crlf.mkdir()
    original = (
        b"[behave]\r\nshow_skipped = false\r\n\r\n[behave.userdata]\r\nprettyplay.model = m\r\n"
    )
    (crlf / "behave.ini").write_bytes(original)
    init_here(crlf)
    text = (crlf / "behave.ini").read_bytes()
    assert b"\n" not in text.replace(b"\r\n", b"")
    assert text.startswith(b"[behave]\r\nshow_skipped = false\r\n\r\n[behave.userdata]\r\n")
    assert text.endswith(b"prettyplay.model = m\r\n")
    assert behave_userdata(crlf, monkeypatch) == {
        "prettyplay.model": "m", "prettyplay.base_url": "http://localhost:8000"
    }  # fmt: skip

    # pyproject.toml alone: [tool.behave.userdata] with the quoted dotted key
    toml = tmp_path / "toml"
    toml.mkdir()
    (toml / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.behave]\npaths = ["features"]\n'
    )
    out = init_here(toml, "https://shop.example/app?a=1&b=2")
    assert "in pyproject.toml [tool.behave.userdata]" in out
    assert behave_userdata(toml, monkeypatch) == {
        "prettyplay.base_url": "https://shop.example/app?a=1&b=2"
    }
    assert (toml / "pyproject.toml").read_text().startswith('[project]\nname = "x"\n')
    assert '"prettyplay.base_url" = "https://shop.example/app?a=1&b=2"' in (
        (toml / "pyproject.toml").read_text()
    )
    assert not (toml / "behave.ini").exists()

    # pyproject's userdata beside a setup.cfg: behave reads setup.cfg's, so it goes there
    both = tmp_path / "both"
    both.mkdir()
    pyproject = '[tool.behave.userdata]\n"prettyplay.model" = "x"\n'
    (both / "pyproject.toml").write_text(pyproject)
    (both / "setup.cfg").write_text("[flake8]\nmax-line-length = 100")  # no final newline
    out = init_here(both)
    assert "pyproject.toml's [tool.behave.userdata] is not read while setup.cfg exists" in out
    assert (both / "pyproject.toml").read_text() == pyproject
    assert (both / "setup.cfg").read_text().startswith("[flake8]\nmax-line-length = 100\n\n")
    assert behave_userdata(both, monkeypatch) == {"prettyplay.base_url": "http://localhost:8000"}


def test_init_leaves_what_it_cannot_or_need_not_change(tmp_path: Path) -> None:
    set_already = tmp_path / "set"
    (set_already / "features" / "steps").mkdir(parents=True)
    (set_already / "setup.cfg").write_text("[behave.userdata]\nprettyplay.base_url = http://a:1\n")
    environment = "from prettyplay_behave.behave import use_prettyplay\nuse_prettyplay(globals())\n"
    (set_already / "features" / "environment.py").write_text(environment)
    (set_already / "features" / "steps" / "all.py").write_text(
        "import prettyplay_behave.behave.steps  # noqa: F401\n"
    )
    (set_already / ".gitignore").write_text("reports/\n*.pyc")
    before = snapshot(set_already)
    out = init_here(set_already, "http://b:2")
    after = snapshot(set_already)
    for name in ("setup.cfg", "features/environment.py", "features/steps/all.py"):
        assert after[name] == before[name], name
    assert "kept     setup.cfg (it sets prettyplay.base_url = http://a:1)" in out
    # run again on a project set up before: its own app's URL, and no sample it had deleted
    assert "next: start the app at http://a:1," in out
    assert not (set_already / "features" / "sample.feature").exists()
    assert "kept     the features as they are (no sample feature)" in out
    assert "kept     features/steps/all.py (it imports prettyplay_behave.behave.steps)" in out
    assert not (set_already / "features" / "steps" / "prettyplay_steps.py").exists()
    assert after[".gitignore"] == (
        b"reports/\n*.pyc\n\n# prettyplay: reports and the library's lock file\n"
        b"features/.prettyplay/.lock\n"
    )

    # an inline userdata table cannot take a [tool.behave.userdata] section: told, not broken
    inline = tmp_path / "inline"
    inline.mkdir()
    pyproject = '[tool.behave]\nuserdata = { "prettyplay.model" = "x" }\n'
    (inline / "pyproject.toml").write_text(pyproject)
    out = init_here(inline)
    assert "kept     pyproject.toml (prettyplay.base_url cannot be added safely" in out
    assert (inline / "pyproject.toml").read_text() == pyproject

    # a call of its own, even indented, is never doubled (the hooks would be wrapped twice)
    guarded = tmp_path / "guarded"
    (guarded / "features").mkdir(parents=True)
    own = (
        "import os\nfrom prettyplay_behave.behave import use_prettyplay\n\n"
        "if os.environ:\n    use_prettyplay(globals())\n"
    )
    (guarded / "features" / "environment.py").write_text(own)
    assert "kept     features/environment.py (it calls use_prettyplay)" in init_here(guarded)
    assert (guarded / "features" / "environment.py").read_text() == own

    # an environment.py without a final newline gets the call on a line of its own
    bare = tmp_path / "bare"
    (bare / "features").mkdir(parents=True)
    (bare / "features" / "environment.py").write_text("def before_all(context):\n    pass")
    init_here(bare)
    text = (bare / "features" / "environment.py").read_text()
    assert text.startswith("def before_all(context):\n    pass\n\n# prettyplay:")
    assert text.endswith("\nuse_prettyplay(globals())\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base-url", "localhost:8000"], "--base-url 'localhost:8000': expected an http://"),
        (["no-such-folder"], "no-such-folder: no such folder"),
    ],
)
def test_init_refuses_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    done = prettyplay(tmp_path, "init", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_init_keeps_a_feature_of_the_users_that_has_the_samples_name(tmp_path: Path) -> None:
    """A project not set up before gets the sample, unless a file of that name is there: the
    user's own feature is kept as it is."""
    (tmp_path / "features").mkdir()
    own = "Feature: Mine\n  Scenario: Mine\n    Given I open the app\n"
    (tmp_path / "features" / "sample.feature").write_text(own)
    assert "kept     features/sample.feature (it exists)" in init_here(tmp_path)
    assert (tmp_path / "features" / "sample.feature").read_text() == own
