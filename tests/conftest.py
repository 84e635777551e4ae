"""Shared fixtures: the demo shop, a real Chromium, and behave projects run in a process of their
own."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium
from prettyplay_behave.demo.server import DemoShop
from tests.support.behave_runs import run_behave
from tests.support.healing_run import HEALING_OPTIONS, LOGIN_DEFECT, git, script_heals
from tests.support.llm_server import RecordedRequest, ScriptedLLMServer, json_answer
from tests.support.pages import PageServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

ROOT = Path(__file__).resolve().parent.parent

ENVIRONMENT = """\
from prettyplay_behave.behave import use_prettyplay

use_prettyplay(globals())
"""
STEPS = "import prettyplay_behave.behave.steps  # noqa: F401\n"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first, each group in its own order: a parallel run then starts its longest
    tests while the short ones can still fill the other workers, instead of ending on them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def node_compile_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Playwright's driver is a Node.js program that every behave run and browser fixture starts
    again: with Node's compile cache, each start after the first skips compiling its scripts."""
    os.environ.setdefault("NODE_COMPILE_CACHE", str(tmp_path_factory.mktemp("node-compile-cache")))


@pytest.fixture(scope="session")
def shop() -> Iterator[DemoShop]:
    with DemoShop() as running:
        yield running


@pytest.fixture
def fresh_shop() -> Iterator[DemoShop]:
    """A shop of its own, for tests that switch its variant."""
    with DemoShop() as running:
        yield running


def launch_chromium(playwright: Playwright) -> Browser:
    """The system Chromium, launched as prettyplay launches it."""
    return playwright.chromium.launch(
        executable_path=find_system_chromium(), args=list(CHROMIUM_ARGS)
    )


class SharedPlaywright:
    """One Playwright and one Chromium per worker, for the tests that use ``playwright`` or
    ``browser`` (each test with contexts or browsers of its own): the browser starts on first
    use, and after a crash again with a new Playwright. A thread runs one sync Playwright at a
    time, so it is stopped before a test marked ``own_playwright``, and started before any other
    test outside ``tests/unit``: a test that starts a Playwright of its own without the mark
    fails every time, never only when it happens to follow a test that used the shared one."""

    def __init__(self) -> None:
        self._running = ExitStack()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    @property
    def playwright(self) -> Playwright:
        if self._playwright is None:
            from playwright.sync_api import sync_playwright

            self._playwright = self._running.enter_context(sync_playwright())
        return self._playwright

    @property
    def browser(self) -> Browser:
        if self._browser is not None and not self._browser.is_connected():
            self.stop()  # a crash may have taken its driver along
        if self._browser is None:
            self._browser = launch_chromium(self.playwright)
        return self._browser

    def stop(self) -> None:
        self._browser = self._playwright = None
        self._running.close()  # the browser closes with its Playwright


SHARED = SharedPlaywright()
UNIT = ROOT / "tests" / "unit"


@pytest.fixture(autouse=True)
def one_playwright_per_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("own_playwright"):
        SHARED.stop()
    elif not request.node.path.is_relative_to(UNIT):
        SHARED.playwright  # noqa: B018 (started, as the docstring says)
    yield


@pytest.fixture
def playwright() -> Playwright:
    """The worker's Playwright, to hand to ``PrettyPlay(..., playwright=...)``."""
    return SHARED.playwright


@pytest.fixture
def browser() -> Browser:
    return SHARED.browser


def pytest_sessionfinish() -> None:
    SHARED.stop()


@pytest.fixture(scope="session")
def video_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which Playwright can record video: it encodes with its own ffmpeg
    build, found in its browsers folder; this machine's ffmpeg (Debian's) stands in for it."""
    import playwright

    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg, "recording video needs ffmpeg: apt-get install -y ffmpeg"
    listing = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    tools = json.loads(listing.read_text())["browsers"]
    revision = next(tool["revision"] for tool in tools if tool["name"] == "ffmpeg")
    browsers = tmp_path_factory.mktemp("playwright-browsers")
    (browsers / f"ffmpeg-{revision}").mkdir()
    (browsers / f"ffmpeg-{revision}" / "ffmpeg-linux").symlink_to(ffmpeg)
    return {"PLAYWRIGHT_BROWSERS_PATH": str(browsers)}


@pytest.fixture
def pages() -> Iterator[PageServer]:
    """Fixed pages on 127.0.0.1, for what the demo shop does not have."""
    with PageServer() as server:
        yield server


@pytest.fixture
def page_on(browser) -> Iterator[Callable[[str], Any]]:
    """A page of the module's browser with the given base URL."""
    contexts = []

    def make(base_url: str) -> Any:
        contexts.append(browser.new_context(base_url=base_url))
        return contexts[-1].new_page()

    try:
        yield make
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page of a fresh context of the module's browser, for tests that drive Playwright
    themselves; an action waits at most 10 s."""
    context = browser.new_context()
    context.set_default_timeout(10_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@dataclass
class BehaveResult:
    returncode: int
    output: str

    def __str__(self) -> str:
        return f"exit {self.returncode}\n{self.output}"


@dataclass
class BehaveProject:
    """A throwaway behave project: features, environment.py, steps and cache in a tmp folder."""

    root: Path

    @property
    def features(self) -> Path:
        return self.root / "features"

    @property
    def cache_dir(self) -> Path:
        return self.features / ".prettyplay"

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 180
    ) -> BehaveResult:
        environ = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PRETTYPLAY_", "OPENAI_")) and key != "CI"
        }
        environ.update(env or {})
        returncode, output = run_behave(
            self.root, environ, ["--no-color", "-f", "plain", *args], timeout
        )
        return BehaveResult(returncode, output)


def new_project(folder: Path) -> BehaveProject:
    """A behave project in ``folder``/project that uses prettyplay, with no feature yet."""
    made = BehaveProject(folder / "project")
    made.write("features/environment.py", ENVIRONMENT)
    made.write("features/steps/prettyplay_steps.py", STEPS)
    return made


@pytest.fixture
def project(tmp_path: Path) -> BehaveProject:
    return new_project(tmp_path)


def copy_examples(destination: Path) -> Path:
    """A copy of the repository's example features and their cache."""
    shutil.copytree(ROOT / "features", destination / "features")
    shutil.copy(ROOT / "setup.cfg", destination / "setup.cfg")
    return destination


@dataclass
class HealedExamples:
    root: Path  # a git repository: the examples as committed, then the run's changes
    result: BehaveResult
    requests: list[RecordedRequest]  # what the scripted server received


@pytest.fixture(scope="session")
def healed_examples(tmp_path_factory: pytest.TempPathFactory) -> HealedExamples:
    """The example features, committed to git, then run against the changed UI with Allure and
    behave's JSON output: the shop heals (its group recovers), the login fails as a product
    defect. Made once per worker: the modules that read it share one xdist group
    (``READS_HEALED_EXAMPLES``)."""
    root = copy_examples(tmp_path_factory.mktemp("healed") / "repo")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the examples")
    with DemoShop(variant="changed-ui") as changed, ScriptedLLMServer() as llm:
        defect = {
            "label": "product_defect",
            "explanation": LOGIN_DEFECT,
            "recommendation": "fix it",
        }
        llm.on("classify", json_answer(defect), step="I log in as", repeat=True)
        script_heals(llm)
        result = BehaveProject(root).run(
            "-o", "-", "-f", "allure_behave.formatter:AllureFormatter", "-o", "allure-results",
            "-f", "json", "-o", "out.json", "-D", f"prettyplay.base_url={changed.url}",
            "-D", "prettyplay.report_dir=reports", *HEALING_OPTIONS, env=llm.env, timeout=400,
        )  # fmt: skip
        requests = list(llm.requests)
    assert result.returncode == 1, result  # the login fails: the product lost its field
    assert "10 scenarios passed, 3 failed" in result.output, result
    return HealedExamples(root, result, requests)


@pytest.fixture
def llm() -> Iterator[ScriptedLLMServer]:
    """The scripted OpenAI-compatible server; every request it receives is recorded."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def module_server() -> Iterator[ScriptedLLMServer]:
    """One scripted server for a module's tests; each test resets it (see ``server`` there)."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def llm_env(llm: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedLLMServer:
    """The scripted server, reachable through OPENAI_BASE_URL/OPENAI_API_KEY of this process."""
    for name, value in llm.env.items():
        monkeypatch.setenv(name, value)
    return llm
