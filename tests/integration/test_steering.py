"""The steering dialog in a real terminal: whole behave runs in a pseudo-terminal over the demo
shop, with the scripted LLM server; the screen is rebuilt with a terminal emulator."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pexpect
import pyte
import pytest
from pexpect.fdpexpect import fdspawn

from tests.conftest import BehaveProject
from tests.support.behave_runs import start_behave_in_terminal
from tests.support.caches import by_sentence, cache_text, plant, steps
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.shop_steps import ACCEPT, HEADING, OPEN_SHOP, SHOP_FEATURE

BROKEN = (
    'def step(page) -> None:\n    page.get_by_role("button", name="Consent").click(timeout=300)\n'
)
INCURABLE = json_answer(
    {"label": "incurable", "explanation": "no Consent button", "recommendation": "ask a human"}
)
COLUMNS, ROWS = 160, 400


@pytest.fixture
def stuck(project: BehaveProject, llm: ScriptedLLMServer) -> BehaveProject:
    """A run whose second step is stuck for good: red replay, classified incurable."""
    project.write("features/shop.feature", SHOP_FEATURE)
    plant(
        project.cache_dir, "shop.feature::Visit",
        ("step", "I open the shop", OPEN_SHOP),
        ("step", "I accept the cookie banner", BROKEN),
        ("expect", "the heading says Demo Shop", HEADING),
    )  # fmt: skip
    llm.on("classify", INCURABLE)
    return project


@pytest.fixture(autouse=True)
def sessions_end() -> Iterator[None]:
    """A test that fails halfway leaves no run waiting at its prompt."""
    yield
    while Session.started:
        session = Session.started.pop()
        session.terminal.close()
        if session.process.is_alive():
            session.process.kill()
        session.process.join(10)


class Session:
    """behave in a pseudo-terminal; everything it printed is kept for a terminal emulator."""

    started: ClassVar[list[Session]] = []  # the sessions of the test that runs

    def __init__(
        self,
        project: BehaveProject,
        shop,
        llm: ScriptedLLMServer,
        *,
        interactive_define: bool = True,
        **env: str,
    ) -> None:
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith(("PRETTYPLAY_", "OPENAI_"))
        }
        environ.pop("CI", None)
        environ.update(llm.env, TERM="xterm", **env)
        interactive = ["-D", "prettyplay.interactive=true"] if interactive_define else []
        self.process, terminal = start_behave_in_terminal(
            project.root,
            environ,
            ["-D", f"prettyplay.base_url={shop.url}", *interactive,
             "-D", "prettyplay.action_timeout_ms=1000"],
            ROWS,
            COLUMNS,
        )  # fmt: skip
        self.terminal = fdspawn(terminal, encoding="utf-8", timeout=60)
        self.output = ""
        Session.started.append(self)

    def expect(self, pattern: str) -> None:
        self.terminal.expect_exact(pattern)
        self.output += self.terminal.before + self.terminal.after

    def send(self, line: str) -> None:
        self.terminal.sendline(line)

    def press(self, key: str) -> None:
        """A control key, as the terminal's line discipline reads it: ``c`` is Ctrl+C."""
        self.terminal.send(chr(ord(key.upper()) - ord("@")))

    def finish(self) -> int:
        self.terminal.expect(pexpect.EOF)
        self.output += self.terminal.before
        self.terminal.close()
        self.process.join(60)
        return -1 if self.process.exitcode is None else self.process.exitcode

    def screen(self) -> str:
        screen = pyte.Screen(COLUMNS, ROWS)
        pyte.Stream(screen).feed(self.output.replace("\n", "\r\n"))
        return "\n".join(line.rstrip() for line in screen.display)


def cache_entries(project: BehaveProject) -> dict[str, dict]:
    return by_sentence(project.cache_dir, "shop.feature")


def shared(project: BehaveProject) -> list[dict]:
    """The library's entries that serve every scenario (a verdict kept is a pin of its own)."""
    return [e for e in steps(project.cache_dir, "shop.feature") if "scenario" not in e]


def test_guidance_then_yes_heals_the_step_and_the_run_goes_on(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    llm.on("steer", code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.send("the button is called Accept cookies")
    session.expect("run? [y/N] ")
    session.send("y")
    session.expect("step green — healed step written to the cache")
    assert session.finish() == 0
    screen = session.screen()
    # the banner, the code and the outcome survive behave's formatter on the final screen
    for line in [
        '── step "I accept the cookie banner" — about to raise IncurableStepError',
        "code:     def step(page) -> None:",
        "error:    IncurableStepError: the cached step failed and cannot be healed",
        "          explanation: no Consent button",
        f"url:      {shop.url}/",
        "shot:     /tmp/prettyplay-steering-",
        "commands: snapshot | screenshot | error | code | quit",
        "guidance> the button is called Accept cookies",
        "⟳ regenerating with USER GUIDANCE",
        '    page.get_by_role("button", name="Accept cookies").click()',
        "run? [y/N] y",
        "✓ step green — healed step written to the cache",
        "1 scenario passed, 0 failed",
    ]:
        assert line in screen, line
    assert "snapshot" not in screen.split("commands:")[0].split("url:")[1]  # no snapshot fragment
    entry = cache_entries(stuck)["I accept the cookie banner"]
    assert entry["origin"] == "steered" and entry["code"] == ACCEPT.splitlines()
    steer = llm.requests_for("steer")[0].content("user")
    assert "USER GUIDANCE" in steer and "the button is called Accept cookies" in steer
    assert 'name="Consent"' in steer  # record 0: the original failure
    assert "the button is called" not in cache_text(stuck.cache_dir)
    assert [r.purpose for r in llm.requests] == ["classify", "steer", "gate"]


def test_a_rejected_turn_joins_the_history_of_the_next_request(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    llm.on("steer", code_answer(ACCEPT), code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.send("click Accept cookies")
    session.expect("run? [y/N] ")
    session.send("n")
    session.expect("guidance> ")
    session.send("really, click Accept cookies")
    session.expect("run? [y/N] ")
    session.send("")  # Enter: no
    session.expect("guidance> ")
    session.send("quit")
    assert session.finish() == 1
    second = llm.requests_for("steer")[1].content("user")
    assert "rejected by the engineer, not executed" in second
    assert f"URL: {shop.url}/ -> {shop.url}/" in second
    assert "IncurableStepError: the cached step failed and cannot be healed" in session.output
    assert cache_entries(stuck)["I accept the cookie banner"]["code"] == BROKEN.splitlines()


def test_a_red_turn_shows_its_outcome_and_returns_to_the_prompt(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    still_broken = (
        'def step(page) -> None:\n    page.get_by_role("button", name="Agree").click(timeout=300)\n'
    )
    llm.on("steer", code_answer(still_broken))
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.send("try the Agree button")
    session.expect("run? [y/N] ")
    session.send("y")
    session.expect("✗ red")
    session.expect("guidance> ")
    assert 'name="Agree"' in session.output and "Call log:" in session.output
    session.press("d")
    assert session.finish() == 1
    assert llm.requests_for("gate") == []


def test_local_commands_answer_without_the_llm(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.send("snapshot")
    session.expect('button "Accept cookies"')
    session.expect("guidance> ")
    session.send("screenshot")
    session.expect(".png")
    shot = session.output.rsplit("\n", 1)[-1].strip()
    assert Path(shot).read_bytes().startswith(b"\x89PNG")
    session.expect("guidance> ")
    session.send("error")
    session.expect("recommendation: ask a human")
    session.expect("guidance> ")
    session.send("code")
    session.expect('name="Consent"')
    session.expect("guidance> ")
    session.send("quit")
    assert session.finish() == 1
    assert [r.purpose for r in llm.requests] == ["classify"]
    banner_shot = session.output.split("shot:")[1].split()[0]
    assert banner_shot.endswith(".png")
    assert not Path(shot).exists() and not Path(banner_shot).exists()  # gone with the dialog


def test_a_test_that_types_a_secret_gets_no_screenshot_in_the_dialog(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    """A picture of the page cannot be redacted: the artifact rules for secrets hold here too."""
    sentence = "I accept the cookie banner as ${SHOPPER}"
    project.write(
        "features/shop.feature", SHOP_FEATURE.replace("I accept the cookie banner", sentence)
    )
    plant(
        project.cache_dir, "shop.feature::Visit",
        ("step", "I open the shop", OPEN_SHOP), ("step", sentence, BROKEN),
    )  # fmt: skip
    llm.on("classify", INCURABLE)
    session = Session(project, shop, llm, SHOPPER="ann-the-shopper")
    session.expect("guidance> ")
    session.send("screenshot")
    session.expect("guidance> ")
    session.send("quit")
    assert session.finish() == 1
    screen = session.screen()
    assert "shot:     (no screenshot: this test types a secret" in screen
    assert screen.count("(no screenshot: this test types a secret") == 2
    assert "prettyplay-steering-" not in screen


def test_ctrl_c_ends_the_dialog_with_the_original_failure(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.press("c")
    assert session.finish() == 1
    assert "IncurableStepError: the cached step failed and cannot be healed" in session.output


def test_a_high_gate_finding_reopens_the_prompt_and_writes_nothing(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    before = shared(stuck)
    llm.on("steer", code_answer(ACCEPT))
    high = {"dimension": "instructions", "severity": "high", "message": "ignores the guidance"}
    llm.on("gate", json_answer({"findings": [high]}))
    session = Session(stuck, shop, llm)
    session.expect("guidance> ")
    session.send("use the test id")
    session.expect("run? [y/N] ")
    session.send("y")
    session.expect("✗ gate violation")
    session.expect("ignores the guidance")
    session.expect("guidance> ")
    session.send("quit")
    assert session.finish() == 1
    assert shared(stuck) == before  # the candidate was never written


def test_no_dialog_without_a_terminal_or_with_ci(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    started = time.monotonic()
    result = stuck.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.interactive=true",
        env=llm.env,
    )  # fmt: skip
    assert result.returncode == 1 and "guidance>" not in result.output
    session = Session(stuck, shop, llm, CI="true")
    assert session.finish() == 1
    assert "guidance>" not in session.output
    assert "CI is set: interactive steering is off" in session.output
    assert time.monotonic() - started < 120


def test_an_interactive_tag_opens_no_dialog_when_ci_is_set(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    """The tag is the strongest source of settings, and no other layer turns it off: the
    steering rules themselves keep the dialog shut under CI, with a terminal attached."""
    stuck.write(
        "features/shop.feature", SHOP_FEATURE.replace("  Scenario:", "  @interactive\n  Scenario:")
    )
    session = Session(stuck, shop, llm, interactive_define=False, CI="true")
    assert session.finish() == 1
    assert "guidance>" not in session.output
    assert "CI is set: @interactive is ignored" in session.output
    assert "IncurableStepError: the cached step failed and cannot be healed" in session.output
    assert [r.purpose for r in llm.requests] == ["classify"]


def test_stdin_from_dev_null_never_blocks(
    stuck: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ.update(llm.env)
    completed = subprocess.run(
        [sys.executable, "-m", "behave", "-D", f"prettyplay.base_url={shop.url}",
         "-D", "prettyplay.interactive=true"],
        cwd=stuck.root, env=environ, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert completed.returncode == 1
    assert "guidance>" not in completed.stdout
    # and the run says why no dialog opened, once
    said = completed.stdout + completed.stderr
    assert said.count("interactive steering is off: stdin is not a terminal") == 1, said
