"""The scripted answers of a changed-UI run of the example features that heals: every broken
ordinary step classified ``rot`` and healed, every broken step of the ``@group`` checkout
recovered in a cycle of its own (the diagnosis names the failed step as its root); and that run,
made once per worker for the modules that read it (``healed_examples`` in tests/conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.changed_ui import CART, CHECKOUT
from tests.support.llm_server import (
    CLEAN_GATE,
    RecordedRequest,
    ScriptedLLMServer,
    code_answer,
    json_answer,
)

ROT = "the controls were relabelled"
LOGIN_DEFECT = "the sign-in form lost its Email field"
# the modules that read the shared run stay on one worker, which makes it once
READS_HEALED_EXAMPLES = "healed examples"
RECOVERABLE = "the checkout controls were renamed"
HEALED = {**CART, **CHECKOUT}


def rot(request: RecordedRequest) -> str:
    return json_answer({"label": "rot", "explanation": ROT, "recommendation": "heal the step"})


def root_is_the_failed_step(request: RecordedRequest) -> str:
    return json_answer(
        {
            "label": "recoverable",
            "root_step": request.step,
            "explanation": RECOVERABLE,
            "recommendation": "regenerate the step",
        }
    )


def script_heals(llm: ScriptedLLMServer) -> None:
    """Answers for the classifications, diagnoses, heals and gates of the changed UI; rules
    added before this one take precedence."""
    llm.on("classify", rot, repeat=True)
    llm.on("diagnose", root_is_the_failed_step, repeat=True)
    for sentence, code in HEALED.items():
        llm.on("heal", code_answer(code), step=sentence, repeat=True)
    llm.on("gate", CLEAN_GATE, repeat=True)


# A broken step waits out its action or expect timeout before it is red, so both are short, yet
# long enough for the steps that pass on a loaded machine; they are as long as the settle window
# (2 s), so that the red replay counts as the step's one try
QUICK_REDS = (
    "-D", "prettyplay.action_timeout_ms=2000",
    "-D", "prettyplay.expect_timeout_ms=2000",
    "-D", "prettyplay.settle_ms=2000",
)  # fmt: skip
# the options a healing run of the examples needs: one recovery cycle per broken group step
HEALING_OPTIONS = ("-D", f"prettyplay.healing_attempts={len(CHECKOUT)}", *QUICK_REDS)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Ann", "-c", "user.email=ann@example.com", *args],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout
