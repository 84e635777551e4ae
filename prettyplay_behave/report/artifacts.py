"""Failure artifacts in ``report_dir``: a screenshot and a Playwright trace per failing test.

The trace policy (``trace``): ``off`` records none; ``retain-on-failure`` (the default) records
every test and keeps the traces of failing ones; ``on`` keeps them all. Under behave, a failing
test's trace is kept at its first failing step, which then carries it. Screenshots and traces
are pictures of the page and cannot be redacted: a test stops tracing at its first step that
names a secret and takes no failure screenshot, unless the policy is ``on``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.step import TestRun


def folder_name(test_name: str) -> str:
    """A test's artifact folder name: its name with path-hostile characters folded."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", test_name).strip("-") or "test"


class Artifacts:
    """A run's artifacts; each test follows its own ``trace`` setting (a tag may change it)."""

    def __init__(self, report_dir: Path) -> None:
        self.report_dir = report_dir

    def folder(self, test: TestRun) -> Path:
        folder = self.report_dir / folder_name(test.name)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def start(self, test: TestRun) -> None:
        if test.config.trace == "off":
            return
        test.page.context.tracing.start(title=test.name, screenshots=True, snapshots=True)
        test.tracing = True

    def screenshot(self, test: TestRun) -> Path | None:
        """The failure screenshot of a test, taken once, while its page is still open.

        A test whose steps type secrets gets none unless the trace policy is ``on``: a picture
        of the page cannot be redacted.
        """
        if test.uses_secrets and test.config.trace != "on":
            return None
        if test.screenshot is None and not test.page.is_closed():
            path = self.folder(test) / "failure.png"
            try:
                test.page.screenshot(path=str(path), full_page=True)
            except Exception:  # a crashed page has no picture to give
                return None
            test.screenshot = path
        return test.screenshot

    def keep_trace(self, test: TestRun) -> Path | None:
        """Stop the test's trace and keep it, at its first failing step (behave's after_step),
        so the step can carry it; None when the test records none."""
        if test.tracing:
            try:
                self._stop(test, keep=True)
            except Exception:  # a crashed page's context has no trace to give
                return None
        return test.trace_file

    def finish(self, test: TestRun) -> None:
        """Keep or discard the test's trace; a failing test keeps its screenshot too."""
        if test.failed:
            self.screenshot(test)
        if test.tracing:
            self._stop(test, keep=test.failed or test.config.trace == "on")

    def _stop(self, test: TestRun, keep: bool) -> None:
        test.tracing = False
        tracing = test.page.context.tracing
        if keep:
            path = self.folder(test) / "trace.zip"
            tracing.stop(path=str(path))
            test.trace_file = path
        else:
            tracing.stop()
