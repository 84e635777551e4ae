"""What prettyplay's steps carry into Allure (allure-behave) and into behave's JSON output, over
a changed-UI run of the examples that heals the shop and fails the login as a product defect;
and that a run without allure-behave is the same as before."""

from __future__ import annotations

import base64
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prettyplay_behave.browser.tabs import Tabs
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from prettyplay_behave.config import PrettyConfig
from prettyplay_behave.engine import step as engine_step
from prettyplay_behave.engine.history import Attempt
from prettyplay_behave.engine.state import TestState
from prettyplay_behave.llm.answers import Verdict
from prettyplay_behave.report.attachments import allure_listening, step_texts
from prettyplay_behave.safety.secrets import Secrets
from prettyplay_behave.safety.step_code import check_code
from prettyplay_behave.vocabulary import FailureKind, Kind, Origin, Outcome, StepLabel, StepStatus
from tests.conftest import BehaveProject, BehaveResult, HealedExamples
from tests.support.caches import steps
from tests.support.changed_ui import CART, CHECKOUT
from tests.support.healing_run import LOGIN_DEFECT, READS_HEALED_EXAMPLES, RECOVERABLE, ROT
from tests.support.shop_steps import BROKEN_ACCEPT, OPEN_SHOP

# the module's tests read one shared run: in a parallel suite they stay on one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(READS_HEALED_EXAMPLES)]

ALLURE = ("-f", "allure_behave.formatter:AllureFormatter", "-o", "allure-results")
JSON = ("-f", "json", "-o", "out.json")
TRACE = "trace (playwright show-trace)"


@dataclass
class Run:
    root: Path
    result: BehaveResult
    requests: int  # what the scripted server received

    @property
    def results(self) -> list[dict[str, Any]]:
        files = sorted((self.root / "allure-results").glob("*-result.json"))
        return [json.loads(path.read_text()) for path in files]

    def result_of(self, name: str) -> dict[str, Any]:
        return next(r for r in self.results if r["name"].startswith(name))

    def attachments(self, step: dict[str, Any]) -> dict[str, Path]:
        return {a["name"]: self.root / "allure-results" / a["source"] for a in step["attachments"]}

    def step_of(self, test: str, sentence: str) -> dict[str, Any]:
        return next(s for s in self.result_of(test)["steps"] if s["name"].endswith(sentence))

    def text(self, test: str, sentence: str, name: str) -> str:
        return self.attachments(self.step_of(test, sentence))[name].read_text()


@pytest.fixture
def run(healed_examples: HealedExamples) -> Run:
    """The changed-UI run of the examples, with Allure and behave's JSON output."""
    return Run(healed_examples.root, healed_examples.result, len(healed_examples.requests))


def test_every_step_carries_its_code_and_how_it_ran(run: Run) -> None:
    results = run.results
    assert len(results) == 13
    stored = ["\n".join(e["code"]) + "\n" for e in steps(run.root / "features" / ".prettyplay")]
    ran = 0
    for result in results:
        for step in result["steps"]:
            if step["status"] == "skipped":
                assert "attachments" not in step or not step["attachments"], step
                continue
            ran += 1
            shown = run.attachments(step)
            assert {"how it ran", "code"} <= set(shown), step["name"]
            code = shown["code"].read_text()
            assert code.startswith("def step(page) -> None:\n"), code
            how = shown["how it ran"].read_text()
            assert re.search(r"^origin: (replayed|healed|recovered)$", how, re.MULTILINE), how
            assert f"outcome: {'failed' if step['status'] == 'failed' else 'passed'}" in how
            if "origin: replayed" in how:  # the code as the cache holds it
                assert code in stored
    assert ran >= 20


def test_a_healed_step_carries_its_diff_history_and_verdict(run: Run) -> None:
    test, sentence = "Add a product to the cart", "I accept the cookie banner"
    assert run.text(test, sentence, "code") == CART[sentence]
    diff = run.text(test, sentence, "code diff").splitlines()
    assert diff[:2] == ["--- cached", "+++ healed"]
    assert '-    page.get_by_role("button", name="Accept cookies").click()' in diff
    assert '+    page.get_by_role("button", name="Allow all").click()' in diff
    assert run.text(test, sentence, "verdicts").startswith(
        f"verdict: rot\nexplanation: {ROT}\nrecommendation: heal the step\n"
    )
    history = run.text(test, sentence, "attempt history")
    assert history.startswith("attempt 0\noutcome: red\n")
    assert 'name="Accept cookies"' in history
    how = run.text(test, sentence, "how it ran")
    assert how.startswith("action: I accept the cookie banner\norigin: healed\noutcome: passed\n")
    # classify, heal and gate: the banner is one entry of the library, and no other entry names
    # the locator its heal renamed, so no batch of the rename is gated
    assert re.search(r"^LLM: 3 requests, [\d,]+ tokens$", how, re.MULTILINE), how


def test_a_recovered_group_step_carries_its_diagnosis(run: Run) -> None:
    test, sentence = "Order a product", "I place the order"
    assert run.text(test, sentence, "code") == CHECKOUT[sentence]
    how = run.text(test, sentence, "how it ran")
    assert "origin: recovered\n" in how and "group: Order a product\n" in how
    verdicts = run.text(test, sentence, "verdicts")
    assert verdicts.startswith(f"verdict: recoverable\nroot step: {sentence}\n")
    assert f"explanation: {RECOVERABLE}" in verdicts
    assert "+++ recovered" in run.text(test, sentence, "code diff")


def test_a_failing_step_carries_its_verdict_screenshot_and_trace(run: Run) -> None:
    test = "A wrong password is refused"
    step = run.step_of(test, 'I log in as "ann@example.com" with the password "wrong"')
    assert step["status"] == "failed"
    shown = run.attachments(step)
    verdicts = shown["verdicts"].read_text()
    # the verdict of the same failure of an earlier scenario, taken with no request, says so
    assert verdicts.startswith("verdict: product_defect\nexplanation: the verdict given to 'I log")
    assert "earlier in this run " in verdicts and f": {LOGIN_DEFECT}\n" in verdicts
    assert "outcome: failed (product_defect)" in shown["how it ran"].read_text()
    picture = shown["failure"].read_bytes()
    assert picture.startswith(b"\x89PNG")
    folder = run.root / "reports" / "login.feature-A-wrong-password-is-refused"
    assert picture == (folder / "failure.png").read_bytes()
    assert shown[TRACE].suffix == ".zip"
    assert shown[TRACE].read_bytes() == (folder / "trace.zip").read_bytes()
    with zipfile.ZipFile(shown[TRACE]) as trace:
        assert "trace.trace" in trace.namelist()
    steps = run.result_of(test)["steps"]
    assert [s["status"] for s in steps] == ["passed", "failed", "skipped"]
    assert run.result_of(test)["status"] == "failed"


def test_each_test_carries_its_llm_cost_as_a_parameter(run: Run) -> None:
    costs = {}
    for result in run.results:
        parameters = {p["name"]: p for p in result.get("parameters") or []}
        cost = parameters["LLM cost"]
        assert cost["excluded"] is True  # not part of the test's history id
        match = re.fullmatch(r"(\d+) requests?, ([\d,]+) tokens?", cost["value"])
        assert match, cost
        costs[result["name"]] = (int(match[1]), int(match[2].replace(",", "")))
    assert sum(requests for requests, _ in costs.values()) == run.requests
    assert all(tokens > 0 for requests, tokens in costs.values() if requests)
    outline = run.result_of("A shopper logs in -- @1.1")
    assert {p["name"] for p in outline["parameters"]} == {"email", "name", "LLM cost"}


def test_behaves_json_output_embeds_the_failure_screenshot(run: Run) -> None:
    features = json.loads((run.root / "out.json").read_text())
    steps = [
        (element["name"], step)
        for feature in features for element in feature["elements"] for step in element["steps"]
    ]  # fmt: skip
    embedded = [(name, step) for name, step in steps if step.get("embeddings")]
    assert sorted(name.strip() for name, _ in embedded) == [
        "A shopper logs in -- @1.1", "A shopper logs in -- @1.2", "A wrong password is refused"
    ]  # fmt: skip
    pictures = {p.read_bytes() for p in (run.root / "reports").glob("*/failure.png")}
    for _, step in embedded:
        assert step["result"]["status"] == "failed"
        (embedding,) = step["embeddings"]
        assert embedding["mime_type"] == "image/png"
        assert base64.b64decode(embedding["data"]) in pictures


def test_no_allure_formatter_no_allure(run: Run) -> None:
    """Installed but not in the run: nothing listens, so nothing is rendered for it."""
    assert allure_listening() is None


def test_without_allure_behave_a_run_is_as_before(project: BehaveProject, shop) -> None:
    """With allure and allure_commons unimportable, a failing run still reports as usual and
    behave's JSON output still embeds the screenshot."""
    blocker = project.root.parent / "no-allure"
    for name in ("allure", "allure_commons", "allure_behave"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    project.write(
        "features/shop.feature",
        """\
        Feature: Shop
          Scenario: Broken
            Given I open the shop
            When I accept the cookie banner
        """,
    )
    store = CacheStore(project.cache_dir, validate=check_code)
    for sentence, code in (
        ("I open the shop", OPEN_SHOP),
        ("I accept the cookie banner", BROKEN_ACCEPT),
    ):
        store.write(
            CacheWrite(CacheKey("shop.feature::Broken", "step", sentence), code, "generated")
        )
    result = project.run(
        "-o", "-", *JSON, "-D", f"prettyplay.base_url={shop.url}",
        "-D", "prettyplay.report_dir=reports", env={"PYTHONPATH": str(blocker)},
    )  # fmt: skip
    assert result.returncode == 1, result
    assert "1 step passed, 0 failed, 1 error" in result.output, result
    assert "ImportError" not in result.output and "attachment" not in result.output
    (feature,) = json.loads((project.root / "out.json").read_text())
    broken = feature["elements"][0]["steps"][1]
    (embedding,) = broken["embeddings"]
    picture = project.root / "reports" / "shop.feature-Broken" / "failure.png"
    assert base64.b64decode(embedding["data"]) == picture.read_bytes()


def test_every_attachment_text_is_redacted(browser) -> None:
    canary = "canary-A11ure-5k"
    secrets = Secrets({"TOKEN": canary})
    secrets.require(["TOKEN"], "log in with ${TOKEN}")
    page = browser.new_page()
    try:
        test = TestState("login.feature::In", PrettyConfig().for_test(), Tabs(page))
        spec = engine_step.StepSpec(Kind.ACTION, f"log in as {canary}")
        step_run = engine_step.StepRun(
            spec, CacheKey(test.name, spec.kind, spec.sentence), group=f"the {canary} group",
            outcome=StepStatus.FAILED, origin=Origin.STEERED, code=f"# {canary}\n",
            replaced=f"# was {canary}\n", guidance=f"type {canary}",
            history=[Attempt(Outcome.RED, f"/?t={canary}", "/", f"# {canary}\n", canary)],
            failure=FailureKind.INCURABLE,
        )  # fmt: skip
        step_run.verdicts.append(Verdict(StepLabel.INCURABLE, f"it shows {canary}", canary, canary))
        test.add_step(step_run)
        texts = dict(step_texts(test, step_run, secrets.redact))
    finally:
        page.close()
    assert set(texts) == {"how it ran", "code", "code diff", "attempt history", "verdicts"}
    for name, text in texts.items():
        assert canary not in text, name
        assert "${TOKEN}" in text, name
