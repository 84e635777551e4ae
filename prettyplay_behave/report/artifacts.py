"""Artifacts in ``report_dir``: a screenshot, a Playwright trace and a video per test.

Each follows its setting, in pytest-playwright's words. ``screenshot``: ``only-on-failure`` (the
default) takes ``failure.png`` at a test's first failing step, ``on`` also takes ``final.png``
when a passing test ends, ``off`` takes none. ``trace``: ``retain-on-failure`` (the default)
records every test and keeps the traces of failing ones, ``on`` keeps them all, ``off`` records
none; under behave a failing test's trace is kept at its first failing step, which carries it.
``video``: ``off`` (the default), ``on`` keeps every test's video, ``retain-on-failure`` those of
failing tests (``video.webm``; a test that opened tabs has one more per tab).

Pictures of the page cannot be redacted: a test with a step that names a secret keeps a
picture only when that picture's own policy is ``on`` (its trace stops at that step otherwise).

:class:`Artifacts` listens to each test's life, told as it happens: a context of the test
opened (the trace starts), its context is about to close (replaced by a fresh one: the trace so
far is dropped; at the test's end: the last screenshot, the trace kept or dropped), the test
ended (its context closed, Playwright wrote its videos), a step failed it (the screenshot and
the trace up to the failure), a step named a secret. Where the videos and downloads go, and
what each test left, it answers when asked.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..log_events import LogEvent, record

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from ..config import TestConfig
    from ..engine.state import TestState


def folder_name(test_name: str) -> str:
    """A test's artifact folder name: its name with path-hostile characters folded."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", test_name).strip("-") or "test"


@dataclass
class TestArtifacts:
    """What a test left in ``report_dir``: its screenshot, its trace and its videos."""

    __test__ = False  # a product class, not a pytest test class

    screenshot: Path | None = None
    trace_file: Path | None = None
    videos: list[Path] = field(default_factory=list)
    tracing: bool = False  # a Playwright trace is being recorded
    waiting: bool = False  # its trace starts when a context of the test opens


class Artifacts:
    """A run's artifacts, and each test's (a tag may change a test's settings)."""

    def __init__(self, report_dir: Path) -> None:
        self.report_dir = report_dir
        self._of: dict[int, TestArtifacts] = {}

    def of(self, test: TestState) -> TestArtifacts:
        """What ``test`` left so far (nothing, for a test the artifacts never saw)."""
        return self._of.get(id(test), TestArtifacts())

    def folder(self, test: TestState) -> Path:
        folder = self.report_dir / folder_name(test.name)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def video_dir(self, name: str, config: TestConfig) -> Path | None:
        """Where Playwright records the videos of the test called ``name`` (kept or not at
        its end); None under ``video=off``. A path only, made by Playwright when it records."""
        return None if config.video == "off" else self._recorded(name)

    def downloads(self, name: str) -> Path:
        """Where the downloads of the test called ``name`` are saved; made when one is."""
        return self.report_dir / folder_name(name) / "downloads"

    def _recorded(self, name: str) -> Path:
        return self.report_dir / folder_name(name) / "video"

    # -- the test's life, as the runtime tells it ------------------------------------------------

    def context_opened(self, test: TestState) -> None:
        """A context of the test opened, its first or a fresh one in place of the last: the
        trace starts (on a fresh one, where the replaced one's was dropped)."""
        state = self._of.setdefault(id(test), TestArtifacts(waiting=test.config.trace != "off"))
        if state.waiting:
            state.waiting = False
            test.page.context.tracing.start(title=test.name, screenshots=True, snapshots=True)
            state.tracing = True

    def context_closing(self, test: TestState, replaced: bool) -> None:
        """The test's context is about to close: ``replaced`` by a fresh one (a clean page for
        an attempt), or at the test's end."""
        if replaced:
            self._drop_trace(test)
        else:
            self._finish(test)

    def test_ended(self, test: TestState) -> None:
        """The test's context closed (Playwright writes its videos then): keep them as
        ``video.webm``, ``video-2.webm`` … beside its other artifacts, or remove them."""
        recorded = self._recorded(test.name)
        if not recorded.is_dir():
            return
        policy = test.config.video
        keep = policy == "on" or (policy == "retain-on-failure" and test.failed)
        if test.uses_secrets and policy != "on":
            keep = False
        if keep:
            videos = [path for path in map(_video_of, test.tabs.opened) if path and path.exists()]
            for number, video in enumerate(videos):
                name = f"video-{number + 1}.webm" if number else "video.webm"
                self.of(test).videos.append(video.replace(recorded.parent / name))
        shutil.rmtree(recorded, ignore_errors=True)
        folder = recorded.parent
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def step_failed(self, test: TestState) -> None:
        """A step failed the test (behave's after_step), its page still open: its screenshot,
        and its trace up to the failure kept, so the step can carry both."""
        self.screenshot(test)
        if self.of(test).tracing:
            try:
                self._stop(test, keep=True)
            except Exception as exc:  # a crashed page's context has no trace to give
                lost("the trace", test, exc)

    def secret_named(self, test: TestState) -> None:
        """A step names a secret: stop and discard the trace unless ``trace=on`` (a picture of
        the page cannot be redacted; screenshots and videos follow their own policies)."""
        state = self.of(test)
        if state.tracing and test.config.trace != "on":
            self._discard(test)

    # -- what they do ----------------------------------------------------------------------------

    def screenshot(self, test: TestState, name: str = "failure.png") -> Path | None:
        """The test's screenshot, taken once, while its page is still open: at its first
        failing step, or (``screenshot=on``) when a passing test ends. None under
        ``screenshot=off``, and for a test that names a secret unless the policy is ``on``."""
        state = self.of(test)
        if not pictures_allowed(test):
            return None
        if state.screenshot is None and not test.page.is_closed():
            path = self.folder(test) / name
            try:
                test.page.screenshot(path=str(path), full_page=True)
            except Exception as exc:  # a crashed page has no picture to give
                lost("the screenshot", test, exc)
                return None
            state.screenshot = path
        return state.screenshot

    def _drop_trace(self, test: TestState) -> None:
        """Before the test's context is replaced: its trace so far is dropped, for it shows what
        a refused attempt did; it starts again on the fresh context."""
        state = self.of(test)
        if state.tracing:
            self._discard(test)
            state.waiting = True

    def _finish(self, test: TestState) -> None:
        """Keep or discard the test's trace; take its last screenshot (a failing test's, or
        any test's under ``screenshot=on``). Its context is still open: videos come later."""
        if test.failed:
            self.screenshot(test)
        elif test.config.screenshot == "on":
            self.screenshot(test, "final.png")
        if self.of(test).tracing:
            self._stop(test, keep=test.failed or test.config.trace == "on")

    def _discard(self, test: TestState) -> None:
        """Stop the test's trace and keep nothing of it."""
        self.of(test).tracing = False
        try:
            test.page.context.tracing.stop()
        except Exception as exc:
            lost("the trace", test, exc)

    def _stop(self, test: TestState, keep: bool) -> None:
        state = self.of(test)
        state.tracing = False
        tracing = test.page.context.tracing
        if keep:
            path = self.folder(test) / "trace.zip"
            tracing.stop(path=str(path))
            state.trace_file = path
        else:
            tracing.stop()


def pictures_allowed(test: TestState) -> bool:
    """Whether a picture of the test's page may be kept: not under ``screenshot=off``, nor for
    a test that names a secret unless the policy is ``on``."""
    policy = test.config.screenshot
    return policy != "off" and not (test.uses_secrets and policy != "on")


def lost(what: str, test: TestState, exc: Exception) -> None:
    """An artifact that could not be kept is said, never a failure of the test."""
    record(
        LogEvent.ARTIFACT_LOST,
        "%s of %s could not be kept: %s",
        what,
        test.name,
        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
    )


def _video_of(page: Page) -> Path | None:
    """The file Playwright recorded a page's video into; None for a page it did not record."""
    try:
        return Path(page.video.path()) if page.video else None
    except Exception as exc:  # a page whose recording never started (it crashed at once)
        record(LogEvent.ARTIFACT_LOST, "a video could not be found: %s", exc)
        return None
