"""One browser per run; a fresh context and page per test.

The browser is launched (a system Chromium, for a headless run its headless shell, is found
when Playwright's own build is absent),
connected through ``browser_endpoint`` (a Playwright server, ``ws://``, or a CDP endpoint,
``http://``), or handed in by the caller (a pytest-playwright ``browser``), who keeps it: the
session then only opens and closes its contexts. A caller's Playwright (pytest-playwright's
``playwright``) may be handed in instead: the session launches its configured browser there and
closes only that browser, leaving the Playwright running.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import origin_of
from ..context_args import ORIGIN_BOUND
from ..errors import ConfigError, PrettyPlayError
from ..log_events import LogEvent, record

if TYPE_CHECKING:
    from collections.abc import Mapping

    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

    from ..config import RunConfig, TestConfig


# Without the networking flags Chromium keeps dialling hosts a closed network cannot reach.
# Chromium's sandbox is on unless it cannot run (see ``sandbox_problem``); Playwright passes
# ``--no-sandbox`` itself when it is off.
CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Playwright runs headless Chromium as its headless shell, which opens a page in a quarter of
# the time the full browser takes; Debian and Google ship it under these names.
SYSTEM_HEADLESS_SHELLS = ("chromium-headless-shell", "chrome-headless-shell")
# Channels of Chromium itself, served by a system Chromium when Playwright's build is absent;
# the others (chrome, msedge, their betas) are branded browsers Playwright finds installed.
OPEN_CHANNELS = ("chromium", "chromium-headless-shell")


def find_system_chromium(headless: bool = True) -> str | None:
    """A Chromium on ``PATH``: for a headless run its headless shell where there is one."""
    for name in (SYSTEM_HEADLESS_SHELLS if headless else ()) + SYSTEM_CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    return None


def sandbox_problem() -> str | None:
    """Why Chromium's sandbox cannot run for this process, or None when it can."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "the run is root, and Chromium's sandbox does not start as root"
    return None


def _refused_sandbox(exc: Exception) -> bool:
    """Whether a failed launch was Chromium refusing to start its sandbox."""
    text = str(exc).lower()
    return "sandbox" in text or "zygote" in text or "namespace" in text


def _sandbox_line(exc: Exception) -> str:
    """The line of a failed launch's log that says what the sandbox met."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if _refused_sandbox(Exception(line))), lines[0])


def _context_error(config: TestConfig, exc: Exception) -> Exception:
    """A context setting the browser refused (a time zone, a locale) as the ConfigError it is."""
    text = str(exc)
    for key in ("timezone_id", "locale"):
        value = getattr(config, key)
        if value and (f"Invalid {key}" in text or (key == "timezone_id" and "timezone" in text)):
            return config.error(key, f"the browser refused it ({text.splitlines()[0]})")
    return exc


def _video_error(config: TestConfig, exc: Exception) -> ConfigError:
    """Playwright records video with its own ffmpeg build; a missing one is a setup problem."""
    where = re.search(r"Executable doesn't exist at (\S+)", str(exc))
    return config.error(
        "video",
        "Playwright records video with its own ffmpeg, which is not installed: run "
        "`playwright install ffmpeg`"
        + (f", or link an ffmpeg that encodes VP8 at {where.group(1)}" if where else ""),
    )


def bound_to(args: Mapping[str, Any], config: TestConfig) -> dict[str, Any]:
    """``args`` with credentials and client certificates sent to the test's origins only: an
    entry that names no origin goes to the first of them (base_url's), one that names another
    is a ConfigError."""
    origins = config.origins
    bound = dict(args)
    for key in ORIGIN_BOUND:
        if key not in bound:
            continue
        many = isinstance(bound[key], list)
        entries = []
        for entry in bound[key] if many else [bound[key]]:
            entry = dict(entry)
            if "origin" not in entry and origins:
                entry["origin"] = origins[0]
            if origin_of(str(entry.get("origin", ""))) not in origins:
                raise config.error(
                    "context_args",
                    f"{key} may go only to the test's origins "
                    f"({', '.join(origins) or 'none: set base_url'}), not to "
                    f"{entry.get('origin', 'every origin')}",
                )
            entries.append(entry)
        bound[key] = entries if many else entries[0]
    return bound


class BrowserSession:
    """Owns the browser of a run (unless one is handed in) and Playwright (unless one is handed
    in); hands out a context and page per test."""

    def __init__(
        self,
        config: RunConfig,
        browser: Browser | None = None,
        playwright: Playwright | None = None,
    ) -> None:
        self.config = config
        self._playwright: Playwright | None = playwright
        self._owns_playwright = playwright is None
        self._browser: Browser | None = browser
        self._handed_in = browser is not None

    @property
    def browser(self) -> Browser:
        if self._browser is None or not self._browser.is_connected():
            if self._handed_in:  # not ours to launch again
                raise PrettyPlayError("the browser handed to prettyplay is closed")
            self._browser = self._start()
        return self._browser

    def _start(self) -> Browser:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        if self._playwright is None:
            self._playwright = sync_playwright().start()
        # what get_by_test_id looks for, and the snapshot shows (see snapshot.py)
        self._playwright.selectors.set_test_id_attribute(self.config.test_id_attribute)
        browser_type = getattr(self._playwright, self.config.browser)
        endpoint = self.config.browser_endpoint
        if endpoint:
            record(LogEvent.BROWSER, "connecting to the browser at %s", endpoint)
            if endpoint.startswith(("ws://", "wss://")):
                return browser_type.connect(
                    endpoint, slow_mo=self.config.slow_mo_ms, headers=self._server_launch_options()
                )
            return browser_type.connect_over_cdp(endpoint, slow_mo=self.config.slow_mo_ms)
        executable = self._executable(browser_type.executable_path)
        record(
            LogEvent.BROWSER,
            "launching %s (%s)",
            self.config.browser,
            executable or "Playwright's build",
        )
        options: dict[str, Any] = {
            "headless": self.config.headless,
            "slow_mo": self.config.slow_mo_ms,
            "executable_path": executable,
            "channel": self.config.browser_channel,
        }
        if self.config.browser != "chromium":
            return browser_type.launch(**options)
        try:
            return self._launch_chromium(browser_type, options)
        except PlaywrightError as exc:
            if self.config.browser_channel and "distribution" in str(exc).lower():
                first = str(exc).strip().splitlines()[0]
                raise self.config.error(
                    "browser_channel", f"Playwright finds no such browser here ({first})"
                ) from exc
            raise

    def _launch_chromium(self, browser_type: Any, options: dict[str, Any]) -> Browser:
        """Chromium with its own sandbox where it can run; else without it, and a warning that
        says why."""
        from playwright.sync_api import Error as PlaywrightError

        problem = sandbox_problem()
        if problem is None:
            try:
                return browser_type.launch(
                    **options, args=list(CHROMIUM_ARGS), chromium_sandbox=True
                )
            except PlaywrightError as exc:
                if not _refused_sandbox(exc):
                    raise
                problem = f"it cannot start here ({_sandbox_line(exc)})"
        record(
            LogEvent.BROWSER_SANDBOX_OFF,
            "Chromium runs without its sandbox: %s; the bounds of step code hold all the same",
            problem,
        )
        return browser_type.launch(**options, args=list(CHROMIUM_ARGS), chromium_sandbox=False)

    def _server_launch_options(self) -> dict[str, str]:
        """A Playwright server launches the browser; a configured executable is passed on
        (the server accepts it when started with ``--unsafe``; a grid uses its own)."""
        if not self.config.browser_executable:
            return {}
        options = {
            "executablePath": self.config.browser_executable,
            "args": list(CHROMIUM_ARGS) if self.config.browser == "chromium" else [],
            "headless": self.config.headless,
        }
        return {"x-playwright-launch-options": json.dumps(options)}

    def _executable(self, bundled: str) -> str | None:
        configured = self.config.browser_executable
        if configured:
            if not os.access(configured, os.X_OK):
                raise self.config.error("browser_executable", "no executable file there")
            return configured
        channel = self.config.browser_channel
        if channel and self.config.browser != "chromium":
            raise self.config.error("browser_channel", "a channel is one of Chromium's")
        if channel not in (None, *OPEN_CHANNELS):  # Playwright finds a branded browser itself
            return None
        if self.config.browser != "chromium" or Path(bundled).exists():
            return None
        # the "chromium" channel is the full browser's own headless mode, not the headless shell
        system = find_system_chromium(self.config.headless and channel != "chromium")
        if system is None:
            raise self.config.error(
                "browser_executable",
                "no Playwright Chromium and no system Chromium found; install one "
                "(apt-get install chromium, or playwright install chromium) or set "
                "prettyplay.browser_executable",
            )
        return system

    def new_page(
        self,
        config: TestConfig,
        video_dir: Path | None = None,
        context_args: Mapping[str, Any] | None = None,
    ) -> tuple[BrowserContext, Page]:
        """A fresh context (with ``base_url`` and the test's context settings) and page.
        ``context_args`` stands for the test's own, its secrets filled in.

        A browser that died since the last test (killed, crashed) is launched again: its
        death may only come to light with this first request to it.
        """
        from playwright.sync_api import Error as PlaywrightError

        options = self.context_options(config, video_dir, context_args)
        try:
            context = self.browser.new_context(**options)
        except PlaywrightError as exc:
            if self._browser is None or self._browser.is_connected():
                raise _context_error(config, exc) from exc
            if not self._handed_in:  # else ``browser`` says it is closed
                record(LogEvent.BROWSER_RELAUNCHED, "the browser was gone; launching it again")
            context = self.browser.new_context(**options)
        context.set_default_timeout(config.action_timeout_ms)
        try:
            page = context.new_page()
        except PlaywrightError as exc:
            context.close()
            if video_dir is None or "ffmpeg" not in str(exc):
                raise
            raise _video_error(config, exc) from exc
        return context, page

    def context_options(
        self,
        config: TestConfig,
        video_dir: Path | None,
        context_args: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The browser context of one test, in Playwright's own terms (as pytest-playwright's
        ``browser_context_args``): the device first, the single settings over it, then
        ``context_args`` (the test's own unless given)."""
        options: dict[str, Any] = {"base_url": config.base_url, "accept_downloads": True}
        if config.device and self._handed_in:
            raise config.error(
                "device",
                "a device needs prettyplay's own browser: hand in your Playwright instead of "
                "the browser, or open a context with playwright.devices[...] yourself and "
                "hand in its page",
            )
        if config.device:
            devices = self.playwright.devices
            # a scenario tag cannot hold a space: @prettyplay.device=iPhone_13
            name = config.device if config.device in devices else config.device.replace("_", " ")
            if name not in devices:
                near = ", ".join(sorted(n for n in devices if config.device.lower() in n.lower()))
                raise config.error(
                    "device",
                    f"Playwright knows no such device{'; did you mean ' + near if near else ''}",
                )
            options.update(devices[name])
            options.pop("default_browser_type", None)
        settings = {
            "storage_state": config.storage_state,
            "locale": config.locale,
            "timezone_id": config.timezone_id,
            "color_scheme": config.color_scheme,
        }
        options.update({key: value for key, value in settings.items() if value is not None})
        if config.viewport:
            options["viewport"] = {"width": config.viewport[0], "height": config.viewport[1]}
        if config.ignore_https_errors:
            options["ignore_https_errors"] = True
        if video_dir is not None:
            options["record_video_dir"] = str(video_dir)
        given = config.context_args if context_args is None else context_args
        options.update(bound_to(given, config))
        return options

    @property
    def playwright(self) -> Playwright:
        if self._playwright is None:
            self.browser  # noqa: B018 (starting the browser starts Playwright)
        assert self._playwright is not None
        return self._playwright

    def close(self) -> None:
        try:
            if self._browser is not None and not self._handed_in:
                self._browser.close()
        finally:
            self._browser = None
            if self._playwright is not None and self._owns_playwright:
                self._playwright.stop()
                self._playwright = None
