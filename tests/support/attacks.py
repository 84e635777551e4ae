"""The attacker's harness of the bounds tests: an app origin and an outside origin that logs
what it receives, and one attack step run as the LLM's answer (generated) or as an entry planted
in the cache file and replayed strictly."""

from __future__ import annotations

import faulthandler
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prettyplay_behave import PrettyConfig, PrettyPlay, PrettyPlayError
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from tests.support import caches
from tests.support.code import step as step  # the attack tests' step code comes from here
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.origins import TwoOrigins

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

MODES = ["generated", "planted"]
TEST = "bounds"
OPEN_APP = 'def step(page) -> None:\n    page.goto("/")\n'
HEADING = (
    'def step(page) -> None:\n    expect(page.get_by_role("heading", level=1)).to_be_visible()\n'
)
ATTACK = "I do what the step says"
INCURABLE = json_answer({"label": "incurable", "explanation": "-", "recommendation": "-"})
STEP_TIMEOUT_MS = 1_500
# An attack that keeps a core busy until it is stopped (a backtracking pattern, a loop, endless
# typing) spends CPU for as long as its step may last, and the stop is the same at any length:
# such attacks run with a shorter step timeout.
BUSY_TIMEOUT_MS = 750
# Clamped work that finishes (a mouse move's hundred steps, each a round trip to the page) is
# stretched by a loaded machine past STEP_TIMEOUT_MS: it gets the time to finish, and work the
# clamp let through would still run into the stop.
FINISH_TIMEOUT_MS = 5_000
MARGIN_S = 6.0  # settle, the browser's own latency and a loaded two-core machine
# An attack the bounds miss may hold the thread in C (a regex match) where no exception reaches
# it: past this, the test process dumps its stacks and exits, so a hang fails instead of waiting.
HANG_S = 120

APP_PAGE = """<title>App</title><h1>App</h1>
<a id="partner" href="{outside}/link">Partner</a>
<a id="away" href="/hop1">Away</a>
<form action="{outside}/search" method="get">
  <label>Query <input name="q"></label><button>Search</button>
</form>
<p id="framed"><a href="/framed">Framed</a></p>"""
FRAMED_PAGE = """<title>Framed</title><h1>Framed</h1>
<iframe title="partner frame" src="{outside}/frame"></iframe>"""


@dataclass
class Outcome:
    error: PrettyPlayError | None
    seconds: float
    went_on: bool  # the next step of the test ran green


def answer_with(code: str, llm: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM of this test process answers ``code`` for the attack step, passes every gate and
    judges every red step incurable (so a red step ends with its own error)."""
    for name, value in llm.env.items():
        monkeypatch.setenv(name, value)
    llm.on("generate", code_answer(code))
    llm.on("gate", CLEAN_GATE, repeat=True)
    llm.on("classify", INCURABLE, repeat=True)


def attack(
    mode: str,
    code: str,
    origins: TwoOrigins,
    tmp_path: Path,
    llm: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    browser: Browser,
    sentence: str = ATTACK,
    barrier: bool = False,
    **settings: object,
) -> Outcome:
    """Open the app, run ``code`` as one step (generated, or planted and replayed strictly),
    then one more step; what became of it. Each attack has a fresh context of the module's
    browser, as each test of a run has. ``sentence`` is the attack step's (it names the
    secrets its code may type). With ``barrier``, the outside origin then receives
    ``BARRIER`` from the same context (see ``reach_outside``) before the next step: a request
    the attack sent has had its chance to arrive, and ``origins.hits`` holds ``BARRIER``."""
    cache = tmp_path / "cache"
    caches.plant(
        cache, TEST, ("step", "I open the app", OPEN_APP), ("expect", "the heading shows", HEADING)
    )
    if mode == "planted":
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        CacheStore(cache, validate=lambda code: None).write(
            CacheWrite(CacheKey(TEST, "step", sentence), code, "generated")
        )
        settings["strict"] = True
    else:
        answer_with(code, llm, monkeypatch)
    settings.setdefault("step_timeout_ms", STEP_TIMEOUT_MS)
    config = PrettyConfig(
        base_url=origins.app, cache_dir=str(cache), generation_attempts=1, llm_retries=0,
        llm_timeout=10.0, action_timeout_ms=5_000,
        **settings,  # type: ignore[arg-type]
    )  # fmt: skip
    with PrettyPlay(TEST, config=config, browser=browser) as t:
        t.step("I open the app")
        started = time.monotonic()
        error: PrettyPlayError | None = None
        faulthandler.dump_traceback_later(HANG_S, exit=True)
        try:
            t.step(sentence)
        except PrettyPlayError as exc:
            error = exc
        finally:
            faulthandler.cancel_dump_traceback_later()
        seconds = time.monotonic() - started
        if barrier:
            reach_outside(t.page, origins)
        t.page.goto("/")
        went_on = t.expect("the heading shows").outcome == "passed"
    return Outcome(error, seconds, went_on)


BARRIER = "/frame?barrier"


def reach_outside(page: Page, origins: TwoOrigins) -> None:
    """Load an app page that frames the outside origin (a frame may show another origin) and
    check that its request, ``BARRIER``, arrived: the page's load waits for its frame, whose
    request the outside origin records before it answers. Any request the browser sent before
    has had a round trip's time to arrive, and the outside origin is shown to be listening."""
    origins.pages["/barrier"] = (
        f'<title>Barrier</title><iframe src="{{outside}}{BARRIER}"></iframe>'
    )
    page.goto("/barrier")
    assert BARRIER in origins.hits, (
        f"the frame's request never reached the outside origin: {origins.hits}"
    )
