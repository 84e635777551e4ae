"""The browser of the exported steps: Chromium launched with Playwright, a fresh context and page
(``context.page``) per scenario.

Settings, each from ``behave -D name=value`` or the environment variable NAME (the names the
project used with prettyplay, ``-D prettyplay.name=...`` and PRETTYPLAY_NAME, are read too):

    base_url             the app under test, e.g. http://localhost:8000 (required)
    headless             true (the default) or false
    browser_executable   the Chromium to launch; by default Playwright's own build, and where
                         that is not installed, a Chromium found on PATH

Scenario tags: ``@prettyplay.device=iPhone_13`` opens the scenario's context as a Playwright
device (``_`` for a space); ``@prettyplay.storage_state=files/ann.json`` starts it with that
storage state (a file relative to this folder).
"""

import os
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
# A headless run prefers Chromium's headless shell: it opens a page in a fraction of the time.
HEADLESS_SHELLS = ("chromium-headless-shell", "chrome-headless-shell")
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = ["--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]


def setting(context, name, default=None):
    userdata = context.config.userdata
    for value in (
        userdata.get(name),
        userdata.get(f"prettyplay.{name}"),
        os.environ.get(name.upper()),
        os.environ.get(f"PRETTYPLAY_{name.upper()}"),
    ):
        if value:
            return value
    return default


def chromium(context, playwright, headless):
    """The Chromium to launch: the configured one, Playwright's build, or one on PATH."""
    configured = setting(context, "browser_executable")
    if configured or Path(playwright.chromium.executable_path).exists():
        return configured
    for name in (HEADLESS_SHELLS if headless else ()) + CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no Chromium: run `playwright install chromium` or set browser_executable")


def before_all(context):
    context.config.setup_logging()  # a before_all of one's own replaces behave's
    context.base_url = setting(context, "base_url")
    if not context.base_url:
        raise RuntimeError("set base_url: behave -D base_url=http://... or BASE_URL=...")
    headless = setting(context, "headless", "true").lower() not in ("false", "no", "0")
    context.playwright = sync_playwright().start()
    context.browser = context.playwright.chromium.launch(
        headless=headless,
        executable_path=chromium(context, context.playwright, headless),
        args=CHROMIUM_ARGS,
    )


def after_all(context):
    if getattr(context, "browser", None):
        context.browser.close()
    if getattr(context, "playwright", None):
        context.playwright.stop()


def before_scenario(context, scenario):
    options = {"base_url": context.base_url, "accept_downloads": True}
    for tag in scenario.effective_tags:
        name, _, value = tag.partition("=")
        if name == "prettyplay.device":
            device = context.playwright.devices.get(value.replace("_", " "))
            if device is None:
                raise ValueError(f"@{tag}: Playwright knows no such device")
            options.update({k: v for k, v in device.items() if k != "default_browser_type"})
        elif name == "prettyplay.storage_state":
            options["storage_state"] = str(HERE / value)
    context.browser_context = context.browser.new_context(**options)
    context.page = context.browser_context.new_page()


def after_scenario(context, scenario):
    context.browser_context.close()
