"""Reporting: the run summary, failure artifacts, the HTML report, JUnit output and cache
housekeeping, over behave runs on the demo shop with the scripted LLM server."""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from prettyplay_behave import PrettyPlay, ProductDefectError
from prettyplay_behave.behave.liveness import obsolete
from prettyplay_behave.browser.tabs import Tabs
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, file_name
from prettyplay_behave.cache import CacheKey as Key
from prettyplay_behave.config import PrettyConfig
from prettyplay_behave.engine import step
from prettyplay_behave.engine.history import Attempt
from prettyplay_behave.engine.state import TestState
from prettyplay_behave.llm.answers import Verdict
from prettyplay_behave.report.history import new_run
from prettyplay_behave.report.html import write_report
from prettyplay_behave.report.summary import RunSummary
from prettyplay_behave.runtime import Runtime
from prettyplay_behave.safety.secrets import Secrets
from prettyplay_behave.safety.step_code import check_code
from prettyplay_behave.vocabulary import FailureKind, Kind, Outcome, StepLabel, StepStatus
from tests.conftest import BehaveProject, copy_examples, new_project
from tests.support.behave_runs import run_prettyplay
from tests.support.caches import cache_bytes, plant
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.outside import Outside
from tests.support.scripted_provider import ScriptedProvider
from tests.support.shop_steps import ACCEPT, HEADING, OPEN_SHOP

FEATURE = """\
Feature: Shop
  Scenario: Replayed
    Given I open the shop
    Then the heading says Demo Shop

  Scenario: Generated
    Given I open the shop
    When I accept the cookie banner

  Scenario: Broken
    Given I open the shop
    Then the heading says Welcome
"""
WELCOME = (
    "def step(page) -> None:\n"
    '    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome", timeout=500)\n'
)
OPENS = ("step", "I open the shop", OPEN_SHOP)
GREETS = ("expect", "the heading says Demo Shop", HEADING)
WELCOMES = ("expect", "the heading says Welcome", WELCOME)
DEFECT = {
    "label": "product_defect",
    "explanation": "the shop greets nobody",
    "recommendation": "add the welcome heading",
}


@dataclass
class Reported:
    project: BehaveProject
    output: str
    requests: dict[str, int]  # by purpose


@pytest.fixture(scope="module")
def reported(
    tmp_path_factory: pytest.TempPathFactory, shop, module_server: ScriptedLLMServer
) -> Reported:
    """One run with a replayed, a generated and a failing scenario, reported into reports/;
    the tests that read it share it (and one worker, in a parallel suite)."""
    llm = module_server
    llm.reset()
    project = new_project(tmp_path_factory.mktemp("reported"))
    project.write("features/shop.feature", FEATURE)
    plant(project.cache_dir, "shop.feature::Replayed", OPENS, GREETS)
    plant(project.cache_dir, "shop.feature::Generated", OPENS)
    plant(project.cache_dir, "shop.feature::Broken", OPENS, WELCOMES)
    llm.on("generate", code_answer(ACCEPT))
    llm.on("gate", CLEAN_GATE)
    llm.on("classify", json_answer(DEFECT))
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.report_dir=reports",
        "--junit", "--junit-directory=junit", env=llm.env,
    )  # fmt: skip
    assert result.returncode == 1, result
    requests = {p: len(llm.requests_for(p)) for p in ("classify", "gate", "generate")}
    llm.reset()
    return Reported(project, result.output, requests)


READ_THE_REPORTED_RUN = pytest.mark.xdist_group("reported run")


@READ_THE_REPORTED_RUN
def test_the_summary_counts_what_happened(reported: Reported) -> None:
    output, requests = reported.output, reported.requests
    assert (
        "prettyplay: 3 tests (1 failed); 6 steps: 4 replayed, 0 reused, 1 generated, 0 healed, "
        "0 recovered, 0 steered; 1 failed (1 product_defect)"
    ) in output
    assert requests == {"classify": 1, "gate": 1, "generate": 1}
    line = next(line for line in output.splitlines() if line.startswith("prettyplay: LLM:"))
    assert line.startswith("prettyplay: LLM: 3 requests,")
    for purpose, count in requests.items():  # the default model is priced: tokens and cost
        assert re.search(rf"{purpose} {count} \([\d,]+ tokens, \$0\.\d{{4}}\)", line), line
    # the generated step, and the product defect kept red
    assert "prettyplay: cache: 2 entries written, 0 obsolete" in output
    assert re.search(r"prettyplay: wall time: \d+\.\d s", output)


@READ_THE_REPORTED_RUN
def test_a_failing_scenario_leaves_a_screenshot_and_a_trace(reported: Reported) -> None:
    project = reported.project
    folders = sorted(p.name for p in (project.root / "reports").iterdir() if p.is_dir())
    assert folders == ["shop.feature-Broken"]  # passing scenarios leave nothing
    folder = project.root / "reports" / "shop.feature-Broken"
    assert (folder / "failure.png").read_bytes().startswith(b"\x89PNG")
    with zipfile.ZipFile(folder / "trace.zip") as trace:
        names = trace.namelist()
        assert "trace.trace" in names and "trace.network" in names
        events = [json.loads(line) for line in trace.read("trace.trace").splitlines() if line]
    assert any(e.get("type") == "context-options" for e in events)
    assert any(e.get("type") == "screencast-frame" for e in events)


@READ_THE_REPORTED_RUN
def test_the_html_report_shows_what_a_person_needs(reported: Reported, browser) -> None:
    project = reported.project
    report = project.root / "reports" / "report.html"
    assert "prettyplay: report: reports/report.html\n" in reported.output  # the run says where
    html = report.read_text()
    assert "http://" not in html.split("<body>")[0]  # no outside assets
    page = browser.new_page()
    page.goto(report.as_uri())
    assert page.locator("h1").inner_text() == "prettyplay report"
    headings = page.locator("h2").all_inner_texts()
    assert headings == [  # the failure first, then the rest as they ran
        "shop.feature::Broken — failed",
        "shop.feature::Replayed — passed",
        "shop.feature::Generated — passed",
    ]
    failures = page.locator("nav.failures li")  # the top links to each failure
    assert failures.all_inner_texts() == [
        "shop.feature::Broken: check: the heading says Welcome (product_defect)"
    ]
    failures.locator("a").click()
    assert page.evaluate("location.hash") == "#test-1"
    assert page.locator("#test-1 h2").inner_text() == "shop.feature::Broken — failed"
    generated = page.locator("section", has=page.locator("h2", has_text="Generated"))
    # a passed test is closed: its steps show once it is opened
    row = generated.locator("tr", has_text="I accept the cookie banner")
    assert not row.is_visible()
    generated.locator("summary").first.click()
    assert "generated" in row.inner_text()
    assert 'name="Accept cookies"' in generated.locator("pre").last.inner_text()
    broken = page.locator("section", has=page.locator("h2", has_text="Broken"))
    assert "verdict: product_defect" in broken.inner_text()
    # the failed step's error is in sight, not inside the collapsed attempt history
    error = broken.locator(".error")
    assert error.is_visible()
    assert "ProductDefectError: the product does not do what the step says" in error.inner_text()
    assert "Locator expected to have text 'Welcome'" in error.inner_text()
    assert broken.locator("details.attempts").first.get_attribute("open") is None
    assert page.locator(".error").count() == 1  # passing steps show none
    assert "explanation: the shop greets nobody" in broken.inner_text()
    image = broken.locator("img.screenshot")
    assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    replayed = page.locator("section", has=page.locator("h2", has_text="Replayed"))
    assert replayed.locator("span.badge.replayed").count() == 2
    page.close()


@READ_THE_REPORTED_RUN
def test_junit_output_carries_the_terminal_render(reported: Reported) -> None:
    project = reported.project
    xml = "".join(p.read_text() for p in (project.root / "junit").glob("*.xml"))
    assert "ProductDefectError: the product does not do what the step says" in xml
    assert "explanation: the shop greets nobody" in xml


@pytest.mark.slow
def test_prune_removes_exactly_the_obsolete_entries(tmp_path: Path) -> None:
    """Liveness comes from the feature files: any run, whole or partial, counts the same
    obsolete entries, and prune deletes exactly those."""
    root = copy_examples(tmp_path)
    # two of the features, with their library's entries (the whole run is then a short one)
    (root / "features" / "real_pages.feature").unlink()
    (root / "features" / "shop" / "checkout.feature").unlink()
    cache_dir = root / "features" / ".prettyplay"
    store = CacheStore(cache_dir, validate=check_code)
    store.drop(dead.entry for dead in obsolete(store, root / "features"))
    gone = CacheKey("shop/cart.feature::A scenario that was deleted", "action", "I open the shop")
    unused = CacheKey("shop/cart.feature::Add a product to the cart", "action", "I dance")
    cart = 'def step(page) -> None:\n    page.goto("/cart")\n'
    store.write(CacheWrite(gone, cart, "healed", pinned=True))
    store.write(CacheWrite(unused, OPEN_SHOP, "generated"))
    before = cache_bytes(cache_dir)
    project = BehaveProject(root)
    partial = project.run("features/login.feature")
    assert partial.returncode == 0, partial
    assert "prettyplay: cache: 0 entries written, 2 obsolete" in partial.output
    full = project.run()
    assert full.returncode == 0, full
    assert "prettyplay: cache: 0 entries written, 2 obsolete" in full.output
    shown = run_prettyplay(root, ["cache", "prune", "--dry-run"])
    assert "I dance" in shown.stdout and "A scenario that was deleted" in shown.stdout
    assert cache_bytes(cache_dir) == before
    pruned = run_prettyplay(root, ["cache", "prune"])
    assert pruned.returncode == 0 and "2 obsolete entries deleted" in pruned.stdout, pruned
    after = CacheStore(cache_dir, validate=check_code)
    assert after.lookup(unused) is None
    found = after.lookup(gone)  # the pin is gone: the library's own entry serves the name now
    assert found is not None and found.scenario is None
    # the files of the other steps are as they were: only the two entries' steps changed
    after_bytes = cache_bytes(cache_dir)
    changed = {name for name, raw in before.items() if after_bytes.get(name) != raw}
    assert changed == {
        f"steps/{file_name(('action', 'I open the shop', ''))}",  # its pin went
        f"steps/{file_name(('action', 'I dance', ''))}",  # went, empty
    }
    assert set(after_bytes) == set(before) - {f"steps/{file_name(('action', 'I dance', ''))}"}
    again = project.run("features/login.feature")  # a partial run counts as a whole one
    assert "prettyplay: cache: 0 entries written, 0 obsolete" in again.output


def test_the_entries_of_steps_a_failed_run_never_reached_stay_live(
    project: BehaveProject, shop
) -> None:
    """A test that fails never reaches its later steps: their entries are live all the same,
    for the feature file still has the steps. A pin of a scenario that no longer exists is
    obsolete."""
    project.write(
        "features/shop.feature",
        """\
        Feature: Shop
          Scenario: Stops early
            Given I open the shop
            Then the heading says Welcome
            And the heading says Demo Shop
        """,
    )
    store = CacheStore(project.cache_dir, validate=check_code)
    deleted = CacheKey("shop.feature::Deleted", "action", "I open the shop")
    for key, code in [
        (CacheKey("shop.feature::Stops early", "action", "I open the shop"), OPEN_SHOP),
        (CacheKey("shop.feature::Stops early", "check", "the heading says Welcome"), WELCOME),
        (CacheKey("shop.feature::Stops early", "check", "the heading says Demo Shop"), HEADING),
    ]:
        store.write(CacheWrite(key, code, "generated"))
    store.write(CacheWrite(deleted, HEADING.replace("heading", "banner"), "healed", pinned=True))
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert "1 step passed, 1 failed, 1 skipped" in result.output  # a red check: a failure
    assert "prettyplay: cache: 0 entries written, 1 obsolete" in result.output
    assert not (project.cache_dir / ".obsolete-entries").exists()  # no listing to go stale


ARTIFACT_FEATURE = """\
Feature: Shop
  Scenario: Passes
    Given I open the shop
    Then the heading says Demo Shop

  Scenario: Fails
    Given I open the shop
    Then the heading says Welcome
"""


def run_for_artifacts(project: BehaveProject, shop, env: dict[str, str], *settings: str):
    """A passing and a failing scenario replayed from the cache (no LLM), into reports/."""
    project.write("features/shop.feature", ARTIFACT_FEATURE)
    plant(project.cache_dir, "shop.feature::Passes", OPENS, GREETS)
    plant(project.cache_dir, "shop.feature::Fails", OPENS, WELCOMES)
    options = [arg for setting in settings for arg in ("-D", f"prettyplay.{setting}")]
    return project.run(
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.report_dir=reports",
        "-D", "prettyplay.trace=off", *options, env=env, timeout=120,
    )  # fmt: skip


def kept(reports: Path) -> dict[str, list[str]]:
    return {
        folder.name: sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*"))
        for folder in sorted(reports.iterdir())
        if folder.is_dir()
    }


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (("screenshot=on", "video=retain-on-failure"),
         {"shop.feature-Passes": ["final.png"],
          "shop.feature-Fails": ["failure.png", "video.webm"]}),
        (("screenshot=off", "video=on"),
         {"shop.feature-Passes": ["video.webm"], "shop.feature-Fails": ["video.webm"]}),
    ],
)  # fmt: skip
def test_screenshots_and_videos_follow_their_settings(
    project: BehaveProject, shop, video_env: dict[str, str], browser, settings, expected
) -> None:
    result = run_for_artifacts(project, shop, video_env, *settings)
    assert result.returncode == 1, result
    reports = project.root / "reports"
    assert kept(reports) == expected
    for video in reports.rglob("*.webm"):
        assert video.read_bytes()[:4] == b"\x1a\x45\xdf\xa3"  # a WebM (Matroska) file
    page = browser.new_page()
    page.goto((reports / "report.html").as_uri())
    page.evaluate("document.querySelectorAll('details.test').forEach(d => d.open = true)")
    for name, files in expected.items():
        scenario = name.removeprefix("shop.feature-")
        section = page.locator("section", has=page.locator("h2", has_text=scenario))
        text = section.inner_text()
        for picture, caption in (("final.png", "when it ended"), ("failure.png", "when it failed")):
            assert (f"The page {caption}" in text) == (picture in files), (name, text)
        links = section.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
        assert links == [f"{name}/video.webm" for file in files if file == "video.webm"]
    page.close()


def test_video_without_playwrights_ffmpeg_is_a_setup_error_that_names_the_setting(
    project: BehaveProject, shop, tmp_path: Path
) -> None:
    """Playwright records video with its own ffmpeg: where there is none, the run says so."""
    empty = tmp_path / "no-browsers"
    empty.mkdir()
    result = run_for_artifacts(project, shop, {"PLAYWRIGHT_BROWSERS_PATH": str(empty)}, "video=on")
    assert result.returncode != 0, result
    assert "video" in result.output and "playwright install ffmpeg" in result.output, result
    assert str(empty / "ffmpeg-") in result.output, result  # where Playwright looked
    assert "Traceback" not in result.output, result
    assert "HOOK-ERROR in after_scenario" not in result.output, result  # said once, at the start
    leftovers = [p for p in (project.root / "reports").rglob("*") if p.suffix == ".webm"]
    assert leftovers == []
    # the scenarios never ran: their entries are unused, not obsolete, and stay
    assert "prettyplay: cache: 0 entries written, 0 obsolete" in result.output, result
    assert not (project.cache_dir / ".obsolete-entries").exists()


def test_the_html_report_redacts_every_text_it_shows(browser, tmp_path: Path) -> None:
    """Whatever reaches the report (an answer echoing a value, a URL that carries one) is shown
    with the secret's placeholder, never its value."""
    canary = "canary-R3p0rt-9x"
    secrets = Secrets({"TOKEN": canary})
    secrets.require(["TOKEN"], "log in with ${TOKEN}")
    page = browser.new_page()
    try:
        test = TestState(f"login {canary}", PrettyConfig().for_test(), Tabs(page))
        url = f"http://127.0.0.1:8000/welcome?token={canary}"
        attempt = Attempt(Outcome.RED, url, url, f"# {canary}\n", f"Actual value: {canary}")
        spec = step.StepSpec(Kind.ACTION, f"log in as {canary}")
        run = step.StepRun(
            spec, Key(test.name, spec.kind, spec.sentence), group=f"the {canary} group",
            outcome=StepStatus.FAILED, code=f"# {canary}\n", history=[attempt],
            failure=FailureKind.INCURABLE,
        )  # fmt: skip
        run.verdicts.append(Verdict(StepLabel.INCURABLE, f"it shows {canary}", f"type {canary}"))
        test.add_step(run)
        summary = RunSummary.of([test], {}, 0, None, 1.0)
        html = write_report(tmp_path, [test], summary, secrets.redact).read_text()
    finally:
        page.close()
    assert canary not in html
    for shown in ["login ${TOKEN}", "Actual value: ${TOKEN}", "welcome?token=${TOKEN}",
                  "it shows ${TOKEN}", "type ${TOKEN}", "log in as ${TOKEN}"]:  # fmt: skip
        assert shown in html, shown


# -- the reports a report_dir keeps ----------------------------------------------------------------

# what makes a file a kept report of the series "report" (an old run: the first to go)
MARKED = (
    '<meta name="prettyplay-run" data-series="report" data-ended="2000-01-01T00:00:00+00:00" '
    'data-tests="1" data-failed="0">\n'
)


def test_each_run_keeps_its_report_and_the_newest_links_the_last_ones(
    shop, browser, tmp_path: Path
) -> None:
    """Two runs into one report_dir, in process: the newest report.html puts the failure of
    its run first and links to the earlier run, whose own file still shows its verdict; nine
    runs more leave ten (the default), and nothing but prettyplay's own reports is deleted,
    nor anything read through a link."""
    reports = tmp_path / "reports"
    reports.mkdir()
    cache = plant(tmp_path / "cache", "Passes", OPENS, GREETS)
    plant(cache, "Fails", OPENS, WELCOMES)
    # named as a kept report is: a user's file, a link out and a hard link to marked files
    users = reports / "report-20000101-000000-00000000.html"
    users.write_text("<p>my notes</p>\n")
    outside = Outside.made(tmp_path, content=MARKED)
    linked = reports / "report-20000101-000000-0badc0de.html"
    linked.symlink_to(outside.file)
    shared = tmp_path / "shared.html"
    shared.write_text(MARKED)
    hard = reports / "report-20000101-000000-0badf00d.html"
    hard.hardlink_to(shared)
    provider = ScriptedProvider()
    provider.on("classify", json_answer(DEFECT))
    settings = PrettyConfig(
        base_url=shop.url, cache_dir=str(cache), report_dir=str(reports), trace="off",
        action_timeout_ms=2_000,
    )  # fmt: skip

    first = Runtime(settings, browser=browser, provider=provider)
    with PrettyPlay("Passes", runtime=first) as t:
        t.step("I open the shop")
        t.expect("the heading says Demo Shop")
    with PrettyPlay("Fails", runtime=first) as t:
        t.step("I open the shop")
        with pytest.raises(ProductDefectError):
            t.expect("the heading says Welcome")
    first.close()
    planted = {users, linked, hard}
    (first_file,) = set(reports.glob("report-*-*-*.html")) - planted
    second = Runtime(settings, browser=browser, provider=provider)
    with PrettyPlay("Passes", runtime=second) as t:
        t.step("I open the shop")
    second.close()

    (second_file,) = set(reports.glob("report-*-*-*.html")) - planted - {first_file}
    assert (reports / "report.html").read_bytes() == second_file.read_bytes()
    page = browser.new_page()
    try:
        page.goto((reports / "report.html").as_uri())
        runs = page.locator("#earlier-runs tr").all_inner_texts()[1:]  # after the head
        assert len(runs) == 1 and runs[0].split("\t")[1:] == ["2", "1", "1", first_file.name]
        page.locator("#earlier-runs a").click()  # the earlier run's own report
        assert page.url == first_file.as_uri()
        assert page.locator("h2").all_inner_texts()[:2] == [
            "Fails — failed",
            "Passes — passed",
        ]
        failed = page.locator("#test-1")
        assert failed.locator(".error").is_visible()  # open, its verdict in sight
        assert "explanation: the shop greets nobody" in failed.inner_text()
        assert not page.locator("#test-2 table").is_visible()  # the passed test closed
    finally:
        page.close()

    for _ in range(9):  # eleven runs in all
        Runtime(settings, provider=provider).close()
    kept = set(reports.glob("report-*-*-*.html")) - planted
    assert len(kept) == 10 and first_file not in kept and second_file in kept
    newest = (reports / "report.html").read_text()
    assert newest.count("<tr><td>") == 9 and second_file.name in newest
    assert linked.name not in newest and hard.name not in newest and users.name not in newest
    # what is not prettyplay's own report stays as it was
    assert users.read_text() == "<p>my notes</p>\n"
    assert linked.is_symlink() and hard.read_text() == MARKED and shared.read_text() == MARKED
    outside.untouched()


def test_two_runs_in_one_second_take_names_of_their_own() -> None:
    names = {new_run("report", 1, 0).name for _ in range(1_000)}
    assert len(names) == 1_000
