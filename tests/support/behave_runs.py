"""behave runs and prettyplay commands as processes forked from a server that has imported
behave, Playwright, prettyplay and the OpenAI client once: each run is still a process of its
own, as from the shell (its own folder, environment, output streams or terminal, and exit code),
without paying those imports again.

The run's process ends as the interpreter would: it waits for its threads, then runs its exit
handlers. No module may import pytest: the server imports this one.
"""

from __future__ import annotations

import atexit
import fcntl
import gc
import importlib
import io
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

# prettyplay imports openai (most of a second) and jinja2 only at a run's first LLM request
PRELOADED = [
    "behave.__main__",
    "prettyplay_behave.behave",
    "prettyplay_behave.cli",
    "prettyplay_behave.runtime",
    "prettyplay_behave.llm.client",
    "openai",
    "jinja2",
    __name__,
]
_forks = multiprocessing.get_context("forkserver")
_forks.set_forkserver_preload(PRELOADED)


PROGRAMS = {"behave": "behave.__main__", "prettyplay": "prettyplay_behave.cli"}


def _into_files(
    program: str, cwd: str, environ: dict[str, str], args: list[str], out: str, err: str
) -> None:
    """The run's own process: what ``python -m behave ARGS`` (or ``prettyplay ARGS``) does in
    ``cwd``, its stdout and stderr written to the files ``out`` and ``err``."""
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    _main(program, cwd, environ, args)


def _behave_in_terminal(
    terminal: str, opened: Event, cwd: str, environ: dict[str, str], args: list[str]
) -> None:
    """The run's own process in a terminal, as a shell starts it there: a session of its own
    whose controlling terminal is ``terminal`` (a pseudo-terminal's other end), which is its
    stdin, stdout and stderr; Ctrl+C there interrupts it. ``opened`` is set once it is."""
    os.setsid()
    tty = os.open(terminal, os.O_RDWR)  # a session's first terminal becomes its own
    for fd in (0, 1, 2):
        os.dup2(tty, fd)
    os.close(tty)
    opened.set()
    # the streams, and the original ones the dialog talks to, as the interpreter makes them for
    # a terminal (the server's were made for pipes)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        stream = io.TextIOWrapper(
            io.FileIO(fd, "r" if fd == 0 else "w", closefd=False),
            encoding="utf-8",
            errors="backslashreplace" if name == "stderr" else "strict",
            line_buffering=True,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _main("behave", cwd, environ, args)


def _main(program: str, cwd: str, environ: dict[str, str], args: list[str]) -> None:
    """``program``'s main function with ``args``, in ``cwd`` and ``environ``; then exit."""
    # what the server imported is shared with it until written to; a collection walks every
    # object it tracks, copying their pages (about a tenth of a CPU-second a run): frozen, those
    # objects are left out of every collection
    gc.freeze()
    os.chdir(cwd)
    sys.path.insert(0, cwd)
    sys.argv = [sys.executable, *args]
    os.environ.clear()
    os.environ.update(environ)
    main = importlib.import_module(PROGRAMS[program]).main
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
    returncode, out, err = _run("behave", cwd, environ, args, timeout)
    return returncode, out + err


def run_prettyplay(
    cwd: Path, args: list[str], environ: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``prettyplay ARGS`` in ``cwd`` (in this process's environment unless ``environ``)."""
    environ = dict(os.environ if environ is None else environ)
    returncode, out, err = _run("prettyplay", cwd, environ, args, timeout)
    return subprocess.CompletedProcess(["prettyplay", *args], returncode, out, err)


def _run(
    program: str, cwd: Path, environ: dict[str, str], args: list[str], timeout: float
) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory(prefix="forked-run-") as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        process = _forks.Process(
            target=_into_files, args=(program, str(cwd), environ, args, str(out), str(err))
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired([program, *args], timeout, output=_read(out))
        return process.exitcode, _read(out), _read(err)


def start_behave_in_terminal(
    cwd: Path, environ: dict[str, str], args: list[str], rows: int, columns: int
) -> tuple[multiprocessing.process.BaseProcess, int]:
    """Start behave with ``args`` in a new pseudo-terminal of ``rows`` by ``columns``: the run's
    process and the terminal's end the test reads and types at."""
    typing_end, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    opened = _forks.Event()
    process = _forks.Process(
        target=_behave_in_terminal, args=(os.ttyname(terminal), opened, str(cwd), environ, args)
    )
    process.start()
    # the run holds the terminal now: once the run ends, reading at the typing end meets the end
    started = opened.wait(60)
    os.close(terminal)
    if not started:
        process.kill()
        raise RuntimeError(f"the run never opened its terminal (exit code {process.exitcode})")
    return process, typing_end


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
