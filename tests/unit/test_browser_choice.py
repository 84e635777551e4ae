"""Which system browser a run launches when Playwright's own build is absent: for a headless run
the headless shell first, as Playwright itself runs headless Chromium; the full browser else."""

from __future__ import annotations

from pathlib import Path

import pytest

from prettyplay_behave import PrettyConfig
from prettyplay_behave.browser.session import BrowserSession, find_system_chromium
from prettyplay_behave.errors import ConfigError


def on_path(folder: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> dict[str, str]:
    """Executables of the given names, and nothing else, on ``PATH``."""
    folder.mkdir()
    made = {}
    for name in names:
        made[name] = str(folder / name)
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return made


def session(headless: bool) -> BrowserSession:
    return BrowserSession(PrettyConfig(base_url="http://127.0.0.1:1", headless=headless))


def test_a_headless_run_takes_the_headless_shell_and_a_headed_one_the_full_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = on_path(tmp_path / "bin", monkeypatch, "chromium", "chromium-headless-shell")
    assert find_system_chromium(headless=True) == made["chromium-headless-shell"]
    assert find_system_chromium(headless=False) == made["chromium"]
    absent = str(tmp_path / "no-playwright-build")
    assert session(headless=True)._executable(absent) == made["chromium-headless-shell"]
    assert session(headless=False)._executable(absent) == made["chromium"]


def test_without_a_headless_shell_both_take_the_full_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = on_path(tmp_path / "bin", monkeypatch, "google-chrome")
    assert find_system_chromium(headless=True) == made["google-chrome"]
    assert session(headless=True)._executable(str(tmp_path / "absent")) == made["google-chrome"]


def test_a_headless_shell_alone_never_serves_a_headed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path(tmp_path / "bin", monkeypatch, "chrome-headless-shell")
    assert find_system_chromium(headless=False) is None
    with pytest.raises(ConfigError, match=r"browser_executable.*no system Chromium found"):
        session(headless=False)._executable(str(tmp_path / "absent"))
