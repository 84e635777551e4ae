"""A cache write that the disk refuses (full, read-only, a file where a folder should be): the
step fails with a CacheError naming the file, the old cache is intact, no temp file is left."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave import CacheError, PrettyPlay
from prettyplay_behave.cache import file_name
from prettyplay_behave.cache import store as cache_module
from tests.faults.support import api_config, folder_bytes, plant, temp_files
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.shop_steps import ACCEPT, OPEN_SHOP


class FaultyOs(types.ModuleType):
    """The os module as the cache module sees it, with some calls failing."""

    def __init__(self, **failing: Callable[..., Any]) -> None:
        super().__init__("os")
        self.__dict__.update(failing)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def fail(code: int) -> Callable[..., Any]:
    def failing(*args: Any) -> Any:
        names = [str(a) for a in args if isinstance(a, (str, Path))]
        raise OSError(code, os.strerror(code), *names[:1])

    return failing


def fail_creating(code: int) -> Callable[..., Any]:
    def open_(path: Any, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_CREAT:
            raise OSError(code, os.strerror(code), str(path))
        return os.open(path, flags, mode)

    return open_


FAULTS = {
    "disk full (fsync)": (FaultyOs(fsync=fail(errno.ENOSPC)), "[Errno 28] No space left on device"),
    "read-only (create)": (
        FaultyOs(open=fail_creating(errno.EROFS)),
        "[Errno 30] Read-only file system: '",
    ),
    "read-only (rename)": (FaultyOs(replace=fail(errno.EROFS)), "[Errno 30] Read-only file system"),
}


def banner_file(cache_dir: Path) -> Path:
    """The library file the generated step is written to."""
    return cache_dir / "steps" / file_name(("action", "accept the cookie banner", ""))


def generate_into(
    page, shop, cache_dir: Path, llm: ScriptedLLMServer, test: str = "visit"
) -> CacheError:
    """Replay one cached step, then generate a second one whose write fails; the error."""
    llm.on("generate", code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    with PrettyPlay(test, config=api_config(shop.url, cache_dir), page=page) as t:
        assert t.step("open the shop").origin == "replayed"
        with pytest.raises(CacheError) as caught:
            t.step("accept the cookie banner")
        assert t.state.scenario[-1].outcome == "failed"
        assert t.state.scenario[-1].failure == "cache"
    assert [r.purpose for r in llm.requests] == ["generate", "gate"]
    return caught.value


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_refused_write_names_the_file_and_keeps_the_old_cache(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer, monkeypatch, fault: str
) -> None:
    cache_dir = tmp_path / "cache"
    plant(cache_dir, "visit", ("step", "open the shop", OPEN_SHOP))
    before = folder_bytes(cache_dir)
    faulty_os, says = FAULTS[fault]
    monkeypatch.setattr(cache_module, "os", faulty_os)
    error = generate_into(page, shop, cache_dir, llm_env)
    assert str(error).startswith(f"{banner_file(cache_dir)}: cannot write: {says}")
    assert folder_bytes(cache_dir) == before
    assert temp_files(cache_dir) == []


def test_a_file_where_the_cache_folder_should_be_names_it(
    page, shop, tmp_path: Path, llm_env: ScriptedLLMServer
) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "steps").write_text("not a folder\n")
    before = folder_bytes(cache_dir)
    # the step's library file would live in cache/steps/, but cache/steps is a file
    llm_env.on("generate", code_answer(OPEN_SHOP), code_answer(ACCEPT))
    llm_env.on("gate", CLEAN_GATE, repeat=True)
    config = api_config(shop.url, cache_dir)
    with PrettyPlay("shop/visit.feature::Visit", config=config, page=page) as t:
        with pytest.raises(CacheError) as caught:
            t.step("open the shop")
    written = cache_dir / "steps" / file_name(("action", "open the shop", ""))
    assert str(caught.value) == (
        f"{written}: cannot write: [Errno 17] File exists: '{cache_dir / 'steps'}'"
    )
    assert folder_bytes(cache_dir) == before
    assert temp_files(cache_dir) == []


# -- a real small file system -----------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs; skipped where mounting is not allowed."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        unmounted = subprocess.run(["umount", str(mount_point)], capture_output=True)
        if unmounted.returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def fill(disk: Path) -> None:
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_a_real_full_or_read_only_disk_names_the_file_and_keeps_the_old_cache(
    page, shop, small_disk: Path, llm_env: ScriptedLLMServer, fault: str
) -> None:
    cache_dir = small_disk / "cache"
    plant(cache_dir, "visit", ("step", "open the shop", OPEN_SHOP))
    before = folder_bytes(cache_dir)
    if fault == "full":
        fill(small_disk)
        says = "[Errno 28] No space left on device"
    else:
        subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
        # the lock file is the first thing the write creates
        says = f"[Errno 30] Read-only file system: '{cache_dir / '.lock'}'"
    error = generate_into(page, shop, cache_dir, llm_env)
    assert str(error) == f"{banner_file(cache_dir)}: cannot write: {says}"
    assert folder_bytes(cache_dir) == before
    assert temp_files(cache_dir) == []
