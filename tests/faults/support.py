"""Helpers of the fault tests: the processes of a run, cache folders and behave runs that get
signals."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import BehaveProject
from tests.support import settings
from tests.support.caches import plant as plant  # the fault tests plant from here
from tests.support.processes import (
    alive,
    all_pids,
    command_name,
    descendants,
    kill_all,
    process_state,
    wait_for,
)
from tests.support.signals import default_interrupt

# Every process a behave run starts (the Playwright driver, every Chromium process) inherits
# this variable, so a run's processes are found even after their parent is gone.
MARKER_VARIABLE = "FAULT_TEST_RUN"

# Waits far longer than any test does: the step is still running when the fault strikes.
NEVER = 'def step(page) -> None:\n    page.locator("#never").wait_for(timeout=60000)\n'

# With DEBUG=pw:api the Playwright driver logs every API call to its stderr; it logs this line
# once a NEVER step waits on its locator.
PLAYWRIGHT_API_LOG = {"DEBUG": "pw:api"}
WAITING_ON_NEVER = 'waiting for locator("#never") to be visible'


def marked_processes(marker: str) -> dict[int, str]:
    """The living processes that inherited ``MARKER_VARIABLE=marker``: pid -> command name."""
    wanted = f"{MARKER_VARIABLE}={marker}".encode()
    found = {}
    for pid in all_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0") and process_state(pid) != "Z":
            found[pid] = command_name(pid)
    return found


def assert_no_processes_left(marker: str, seen: Iterable[int] = (), timeout: float = 10.0) -> None:
    """Every process of the run is gone within ``timeout`` seconds (else they are killed): the
    ones that inherited its marker, and ``seen``, the ones found below it while it ran."""
    seen = set(seen)

    def left() -> dict[int, str]:
        return {**marked_processes(marker), **alive(seen)}

    try:
        wait_for(lambda: not left(), timeout, "the run's processes to end")
    except AssertionError:
        remaining = left()
        kill_all(remaining)
        raise AssertionError(f"processes left running after the run: {remaining}") from None


# -- cache folders ------------------------------------------------------------------------------


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` with its bytes; lock files are left out."""
    if not folder.exists():
        return {}
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def temp_files(folder: Path) -> list[str]:
    """Temporary files an interrupted write would have left behind."""
    if not folder.exists():
        return []
    return [str(p) for p in folder.rglob("*") if p.name.endswith(".tmp") or ".tmp" in p.suffixes]


# -- behave runs that receive signals -----------------------------------------------------------


@contextmanager
def playwright_api_log(path: Path) -> Iterator[Path]:
    """A Playwright driver started inside the block logs its API calls to ``path`` for the rest
    of its life: it writes them to its stderr, which is this process's ``sys.stderr`` at its
    start."""
    with path.open("w") as log, pytest.MonkeyPatch.context() as patch:
        for name, value in PLAYWRIGHT_API_LOG.items():
            patch.setenv(name, value)
        patch.setattr(sys, "stderr", log)
        yield path


@dataclass
class BehaveProcess:
    """``python -m behave`` in a session of its own, so a signal reaches it alone; its output
    (stdout and stderr, and those of the Playwright driver) goes to ``output_file``."""

    project: BehaveProject
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        environ = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PRETTYPLAY_", "OPENAI_")) and key != "CI"
        }
        environ.update(self.env)
        environ[MARKER_VARIABLE] = self.marker
        self.output_file = self.project.root / f"behave-{self.marker}.out"
        with self.output_file.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "behave", "--no-color", "-f", "plain", *self.args],
                cwd=self.project.root,
                env=environ,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=default_interrupt,
            )
        self.output = ""

    def output_so_far(self) -> str:
        """What the run has written until now (behave's own output may still be buffered)."""
        return self.output_file.read_text(errors="replace")

    def browser_processes(self) -> set[int]:
        """The processes below the run now: the Playwright driver and every Chromium process."""
        found = descendants(self.process.pid)
        assert any("chrom" in command_name(pid) for pid in found), "no browser is running"
        return found

    def interrupt(self, whole_group: bool = False) -> float:
        """Send SIGINT (to the run, or to its whole process group as a terminal's Ctrl+C does);
        the moment it was sent."""
        if whole_group:
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(signal.SIGINT)
        return time.monotonic()

    def finish(self, timeout: float) -> int:
        """The exit code; the run is killed (and the test fails) when it outlives ``timeout``."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the run did not end within {timeout} s:\n{self.output}"
            ) from None
        self.output = self.output_so_far()
        return self.process.returncode

    def kill(self) -> None:
        with suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.output = self.output_so_far()
        kill_all(marked_processes(self.marker))


@contextmanager
def behave_process(
    project: BehaveProject, *args: str, env: dict[str, str]
) -> Iterator[BehaveProcess]:
    run = BehaveProcess(project, args, env)
    try:
        yield run
    finally:
        if run.process.poll() is None:
            run.kill()


def instrumented_environment(body: str) -> str:
    """environment.py with test instrumentation ahead of prettyplay's hooks."""
    return textwrap.dedent(body) + "\nuse_prettyplay(globals())\n"


# Settings for the Python API: an LLM that does not answer is given up on after 5 s.
api_config = functools.partial(settings.api_config, llm_timeout=5.0)
