"""Running at scale: parallel BehaveX workers sharing one cache file, and browsers reached
through browser_endpoint (a Playwright server, a CDP endpoint)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave.browser.session import CHROMIUM_ARGS, find_system_chromium
from tests.conftest import BehaveProject
from tests.support.caches import by_sentence
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
)
from tests.support.processes import alive, descendants, kill_all

SCENARIOS = 4
WORKERS = 2  # two writers to one cache file, each with scenarios of its own


def feature() -> str:
    lines = ["Feature: Many", ""]
    for n in range(1, SCENARIOS + 1):
        lines += [
            f"  Scenario: Visit {n}",
            "    Given I open the shop",
            f"    Then the page shows visit {n}",
            "",
        ]
    return "\n".join(lines)


def answer(request: RecordedRequest) -> str:
    if request.step == "I open the shop":
        return code_answer('def step(page) -> None:\n    page.goto("/")\n')
    return code_answer(
        "def step(page) -> None:\n"
        '    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Shop")\n'
    )


@pytest.mark.slow
def test_parallel_workers_merge_their_cache_writes(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/many.feature", feature())
    llm.on("generate", answer, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))}
    environ.update(llm.env)
    behavex = Path(sys.executable).with_name("behavex")
    # BehaveX keeps sockets in its output folder: a long tmp path overflows AF_UNIX's limit
    output = tempfile.mkdtemp(prefix="bx-", dir="/tmp")
    try:
        completed = subprocess.run(
            [str(behavex), "--parallel-processes", str(WORKERS), "--parallel-scheme", "scenario",
             "-o", output, "-D", f"prettyplay.base_url={shop.url}"],
            cwd=project.root, env=environ, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        shutil.rmtree(output, ignore_errors=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # every visit's check is its own; the shared first step is generated once per worker at most
    # (a worker that has not seen another's write yet generates it too), and kept once
    generated = len(llm.requests_for("generate"))
    assert SCENARIOS + 1 <= generated <= SCENARIOS + WORKERS, generated
    library = by_sentence(project.cache_dir, "many.feature")
    expected = ["I open the shop", *(f"the page shows visit {n}" for n in range(1, SCENARIOS + 1))]
    assert sorted(library) == sorted(expected)
    llm.reset()
    again = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.strict=true", env=llm.env
    )
    assert again.returncode == 0, again
    assert f"{SCENARIOS} scenarios passed" in again.output
    assert llm.requests == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")


@pytest.fixture
def playwright_server() -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "playwright", "run-server", "--port", str(port),
         "--host", "127.0.0.1", "--unsafe"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, server)
        yield f"ws://127.0.0.1:{port}/"
    finally:
        stop_group(server)


@pytest.fixture
def cdp_browser(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    browser = subprocess.Popen(
        [str(find_system_chromium()), "--headless", f"--remote-debugging-port={port}",
         f"--user-data-dir={tmp_path / 'profile'}", "--no-sandbox", *CHROMIUM_ARGS, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, browser)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_group(browser)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a process and everything it started (``playwright run-server`` starts node): asked
    first, killed when any of them still runs 5 s later (node, now and then, stays)."""
    started = descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=10)
    deadline = time.monotonic() + 5
    while alive(started) and time.monotonic() < deadline:
        time.sleep(0.05)
    kill_all(alive(started))


REPLAY = """\
Feature: Remote
  Scenario: Visit
    Given I open the shop
    Then the heading says Demo Shop
"""


@pytest.mark.parametrize("kind", ["playwright server", "cdp"])
def test_a_run_against_a_remote_browser(
    project: BehaveProject, shop, llm: ScriptedLLMServer, request: pytest.FixtureRequest, kind: str
) -> None:
    endpoint = request.getfixturevalue(
        "playwright_server" if kind == "playwright server" else "cdp_browser"
    )
    project.write("features/remote.feature", REPLAY)
    llm.on("generate", answer, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", f"prettyplay.browser_endpoint={endpoint}",
        "-D", f"prettyplay.browser_executable={find_system_chromium()}",
        "--logging-level=INFO", "--no-logcapture", env=llm.env,
    )  # fmt: skip
    assert result.returncode == 0, result
    assert f"connecting to the browser at {endpoint}" in result.output
    assert "launching chromium" not in result.output
