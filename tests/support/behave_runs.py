"""behave runs as processes forked from a server that has imported behave, Playwright, prettyplay
and the OpenAI client once: each run is still a process of its own, as from the shell (its own
folder, environment, output streams and exit code), without paying those imports again.

The run's process ends as the interpreter would: it waits for its threads, then runs its exit
handlers. No module may import pytest: the server imports this one.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# prettyplay imports openai (most of a second) and jinja2 only at a run's first LLM request
PRELOADED = [
    "behave.__main__",
    "prettyplay_behave.behave",
    "prettyplay_behave.runtime",
    "prettyplay_behave.llm.client",
    "openai",
    "jinja2",
    __name__,
]
_forks = multiprocessing.get_context("forkserver")
_forks.set_forkserver_preload(PRELOADED)


def _behave(cwd: str, environ: dict[str, str], args: list[str], out: str, err: str) -> None:
    """The run's own process: what ``python -m behave ARGS`` does in ``cwd``."""
    os.chdir(cwd)
    sys.path.insert(0, cwd)
    sys.argv = [sys.executable, *args]
    os.environ.clear()
    os.environ.update(environ)
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    from behave.__main__ import main

    try:
        code = main(args)
    finally:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
    sys.exit(code)


def run_behave(
    cwd: Path, environ: dict[str, str], args: list[str], timeout: float
) -> tuple[int, str]:
    """Run behave with ``args`` in ``cwd``: its exit code, and its stdout then its stderr."""
    with tempfile.TemporaryDirectory(prefix="behave-run-") as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        process = _forks.Process(target=_behave, args=(str(cwd), environ, args, str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["behave", *args], timeout, output=_read(out))
        return process.exitcode, _read(out) + _read(err)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
