"""Ctrl+C (a real SIGINT to ``python -m behave``) during a step, during an LLM request and during
a cache write: the run ends within seconds, leaves no browser process behind, and every cache
file holds its old or its new content, never a part, with no temporary file left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, file_name, load_file
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import BehaveProject
from tests.faults.support import (
    NEVER,
    PLAYWRIGHT_API_LOG,
    WAITING_ON_NEVER,
    assert_no_processes_left,
    behave_process,
    folder_bytes,
    instrumented_environment,
    plant,
    temp_files,
)
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, delay
from tests.support.processes import wait_for
from tests.support.shop_steps import ACCEPT, HEADING, OPEN_SHOP

pytestmark = pytest.mark.slow

# How long a run may take to end after Ctrl+C; it usually takes well under a second.
EXIT_WITHIN = 10.0

# Tells the test how far the run got: the step that started, then the cache write.
ENVIRONMENT = """\
from pathlib import Path

from prettyplay_behave.behave import use_prettyplay


def before_step(context, step):
    Path("stage").write_text("step: " + step.name)
"""

# Holds a cache write at a chosen point: inside the temp file's fsync (the new bytes are
# written, the rename has not happened) or inside the folder's fsync (after the rename), with a
# plain sleep, which SIGINT interrupts like any other wait; or waiting for its lock, which the
# test holds. The stage file tells when the write is held.
SLOW_WRITE = """\
import logging
import os
import time
import types

import prettyplay_behave.cache.store as cache

HOLD = {hold!r}
fsyncs = []


class _LockWait(logging.Handler):
    def emit(self, record):
        if HOLD == "waiting for the lock" and " not acquired " in record.getMessage():
            Path("stage").write_text("held: " + HOLD)


logging.getLogger("filelock").addHandler(_LockWait())
logging.getLogger("filelock").setLevel(logging.DEBUG)


class _Os(types.ModuleType):
    def __getattr__(self, name):
        return getattr(os, name)


def _fsync(fd):
    fsyncs.append(fd)
    if (HOLD, len(fsyncs)) in (("temp file", 1), ("after the rename", 2)):
        Path("stage").write_text("held: " + HOLD)
        time.sleep(60)
    os.fsync(fd)


cache.os = _Os("os")
cache.os.fsync = _fsync
"""

FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    When {second}
    Then the heading says Demo Shop
"""
TEST = "shop.feature::Visit"


def stage_is(project: BehaveProject, text: str) -> bool:
    stage = project.root / "stage"
    return stage.exists() and stage.read_text() == text


def assert_ended_cleanly(output: str, returncode: int, ended_after: float) -> None:
    assert returncode != 0, output
    assert "ABORTED: By user" in output, output
    assert ended_after < EXIT_WITHIN, f"the run took {ended_after:.1f} s to end"
    # an interrupt is no failure of the page: no picture of it, no noise of what it cut short
    assert "Future exception was never retrieved" not in output, output
    assert "could not be kept" not in output, output


@pytest.mark.parametrize("whole_group", [False, True], ids=["the run", "its process group"])
def test_ctrl_c_during_a_step_ends_the_run_and_its_browser(
    project: BehaveProject, shop, whole_group: bool
) -> None:
    project.write("features/environment.py", instrumented_environment(ENVIRONMENT))
    project.write("features/shop.feature", FEATURE.format(second="I wait for a miracle"))
    plant(
        project.cache_dir,
        TEST,
        ("step", "I open the shop", OPEN_SHOP),
        ("step", "I wait for a miracle", NEVER),
        ("expect", "the heading says Demo Shop", HEADING),
    )
    before = folder_bytes(project.cache_dir)
    env = PLAYWRIGHT_API_LOG
    with behave_process(project, "-D", f"prettyplay.base_url={shop.url}", env=env) as run:
        # the step is waiting on its locator (for 60 s)
        wait_for(lambda: WAITING_ON_NEVER in run.output_so_far(), 60, "the waiting step")
        assert stage_is(project, "step: I wait for a miracle")
        seen = run.browser_processes()
        sent = run.interrupt(whole_group)
        returncode = run.finish(timeout=60)
        ended_after = time.monotonic() - sent
    assert_ended_cleanly(run.output, returncode, ended_after)
    assert "When I wait for a miracle ... error" in run.output
    # the aborted run never reaches the last step: it is counted skipped, never printed
    assert "Then the heading says Demo Shop" not in run.output
    assert "1 step passed, 0 failed, 1 error, 1 skipped" in run.output
    assert folder_bytes(project.cache_dir) == before
    assert temp_files(project.cache_dir) == []
    assert_no_processes_left(run.marker, seen)


def test_ctrl_c_during_an_llm_request_ends_the_run_and_writes_nothing(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", FEATURE.format(second="I accept the cookie banner"))
    llm.on("generate", delay(60, code_answer(OPEN_SHOP)), repeat=True)
    with behave_process(project, "-D", f"prettyplay.base_url={shop.url}", env=llm.env) as run:
        # the client waits for the answer (for 60 s)
        wait_for(lambda: llm.requests, 60, "the generate request")
        seen = run.browser_processes()
        sent = run.interrupt()
        returncode = run.finish(timeout=60)
        ended_after = time.monotonic() - sent
    assert_ended_cleanly(run.output, returncode, ended_after)
    assert [r.purpose for r in llm.requests] == ["generate"]
    assert folder_bytes(project.cache_dir) == {}
    assert_no_processes_left(run.marker, seen)


@pytest.mark.parametrize("hold", ["waiting for the lock", "temp file", "after the rename"])
def test_ctrl_c_during_a_cache_write_leaves_the_old_or_the_new_file(
    project: BehaveProject, shop, llm: ScriptedLLMServer, hold: str
) -> None:
    project.write(
        "features/environment.py",
        instrumented_environment(ENVIRONMENT + "\n\n" + SLOW_WRITE.format(hold=hold)),
    )
    project.write("features/shop.feature", FEATURE.format(second="I accept the cookie banner"))
    plant(project.cache_dir, TEST, ("step", "I open the shop", OPEN_SHOP))
    # the banner's library file holds another scenario's pin: the run's entry goes beside it
    banner = "I accept the cookie banner"
    elsewhere = CacheKey("other.feature::Elsewhere", "step", banner)
    pin = CacheWrite(elsewhere, OPEN_SHOP, "generated", pinned=True)
    CacheStore(project.cache_dir, check_code).write(pin)
    cache_file = project.cache_dir / "steps" / file_name(("action", banner, ""))
    old = cache_file.read_bytes()
    llm.on("generate", code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    # another run holds the library's lock: the write waits for it
    other_run = filelock.FileLock(str(project.cache_dir / ".lock"))
    if hold == "waiting for the lock":
        other_run.acquire()
    try:
        with behave_process(project, "-D", f"prettyplay.base_url={shop.url}", env=llm.env) as run:
            wait_for(lambda: stage_is(project, f"held: {hold}"), 60, f"the write ({hold})")
            seen = run.browser_processes()
            sent = run.interrupt()
            returncode = run.finish(timeout=60)
            ended_after = time.monotonic() - sent
    finally:
        if other_run.is_locked:
            other_run.release()
    assert_ended_cleanly(run.output, returncode, ended_after)
    assert [r.purpose for r in llm.requests] == ["generate", "gate"]
    new = cache_file.read_bytes()
    if hold == "after the rename":
        entries = load_file(cache_file, check_code).entries
        assert sorted(e.scenario or "" for e in entries) == ["", "Elsewhere"]
        assert new.startswith(b"# prettyplay step library (format 3)")
    else:
        assert new == old
    assert temp_files(project.cache_dir) == []
    shop_file = file_name(("action", "I open the shop", ""))
    assert sorted(p.name for p in (project.cache_dir / "steps").iterdir()) == sorted(
        [cache_file.name, shop_file]
    )
    assert_no_processes_left(run.marker, seen)


def test_a_cache_file_is_whole_at_every_moment_of_a_write(tmp_path: Path) -> None:
    """The same promise without the signal: a reader polling during many writes never sees a
    partial file (the write renames a complete temp file into place)."""
    cache_dir = tmp_path / "cache"
    plant(cache_dir, TEST, ("step", "step 0", OPEN_SHOP))
    path = cache_dir / "steps" / file_name(("action", "step {}", ""))  # every write's file
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pathlib import Path\n"
            "from prettyplay_behave.cache import CacheWrite, CacheKey, CacheStore\n"
            "from prettyplay_behave.safety.step_code import check_code\n"
            "store = CacheStore(Path(sys.argv[1]), check_code)\n"
            "code = 'def step(page) -> None:\\n    page.goto(\"/\")\\n'\n"
            "for n in range(60):\n"
            "    key = CacheKey('shop.feature::Visit', 'step', f'step {n}')\n"
            "    store.write(CacheWrite(key, code, 'generated'))\n",
            str(cache_dir),
        ]
    )
    reads = 0
    while writer.poll() is None:
        load_file(path, check_code)  # raises on a partial file
        reads += 1
    assert writer.wait(timeout=60) == 0
    assert reads > 10
    assert len(load_file(path, check_code).entries) == 60  # "step 0" planted, then written again
    assert temp_files(cache_dir) == []
