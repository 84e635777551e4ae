"""Cache files planted by an attacker (a pull request, an unpacked archive): whatever they hold,
no output shows a control character raw, any structure gives a CacheError naming the file (and a
run still ends with its summary), and a link in the cache (a lock file, the library folder, the
cache folder itself) never reaches what it points to: no command or run reads, writes, lists or
deletes anything there.

Each hostile text is tried as a planted entry replayed strictly with no API key and, where the
LLM could say it, as the LLM's answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from prettyplay_behave.cache import (
    CacheKey,
    CacheStore,
    CacheWrite,
    Found,
    GreenRecord,
    RedVerdict,
    StepEntry,
    file_name,
)
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import ROOT, BehaveProject
from tests.support.attacks import MODES
from tests.support.behave_runs import run_prettyplay
from tests.support.caches import plant, steps
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer, json_answer
from tests.support.outside import Outside
from tests.support.pages import PageServer
from tests.support.shop_steps import OPEN_SHOP

# A terminal's clear-screen, title and bell, a C1 CSI, a NUL, a bidirectional override and a
# lone surrogate (which no UTF-8 output can encode): each breaks a terminal, XML or the encoder.
HOSTILE = "shop\x1b[2J\x1b]0;owned\x07 gone\x9b31m \x00 \u202e \ud800 end"
# what each output shows instead: the same characters escaped
SHOWN = "shop\\x1b[2J\\x1b]0;owned\\x07 gone\\x9b31m \\x00 \\u202e \\ud800 end"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
RAW_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]")

FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
    Then the shop is open
"""
TEST = "shop.feature::Visit"
# its failure's text holds control characters too, as a page's text could
RED_CHECK = "def step(page) -> None:\n    assert False, 'the shop is closed\\x1b[2J\\x07'\n"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``prettyplay ARGS`` in a process of its own (prettyplay from this checkout), its output as
    the bytes it wrote."""
    return subprocess.run(
        [sys.executable, "-m", "prettyplay_behave.cli", *args],
        cwd=cwd, capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def library_file(cache_dir: Path, kind: str, sentence: str) -> Path:
    return cache_dir / "steps" / file_name((kind, sentence, ""))


def strings(value: object) -> Iterator[str]:
    """Every string a decoded JSON document holds."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


def plant_red(cache_dir: Path) -> Path:
    """The shop's steps, the check kept red with a hostile verdict."""
    store = CacheStore(cache_dir, validate=check_code)
    store.write(CacheWrite(CacheKey(TEST, "step", "I open the shop"), OPEN_SHOP, "generated"))
    verdict = RedVerdict("product_defect", "placeholder", "placeholder")
    key = CacheKey(TEST, "expect", "the shop is open")
    store.write(CacheWrite(key, RED_CHECK, "generated", verdict=verdict))
    path = library_file(cache_dir, "check", "the shop is open")
    # rewritten as an attacker would (Python's escapes: any character fits)
    path.write_text(path.read_text().replace('"placeholder"', repr(HOSTILE)), encoding="utf-8")
    assert "\\x1b" in path.read_text()  # the file holds the escape only as Python spells it
    return path


# -- 1: control characters in stored text reach no output raw -----------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_hostile_verdict_reaches_no_output_raw(
    mode: str, project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    project.write("features/shop.feature", FEATURE)
    if mode == "planted":
        plant_red(project.cache_dir)
        env: dict[str, str] = {}
        strict: tuple[str, ...] = ("-D", "prettyplay.strict=true")
    else:
        store = CacheStore(project.cache_dir, validate=check_code)
        store.write(CacheWrite(CacheKey(TEST, "step", "I open the shop"), OPEN_SHOP, "generated"))
        llm.on("generate", code_answer(RED_CHECK))
        llm.on("gate", CLEAN_GATE, repeat=True)
        verdict = {"label": "product_defect", "explanation": HOSTILE, "recommendation": HOSTILE}
        llm.on("classify", json_answer(verdict), repeat=True)
        env, strict = llm.env, ()
    result = project.run(
        "-o", "-", "-f", "json", "-o", "behave.json", "--junit", "--junit-directory=junit",
        "-f", "allure_behave.formatter:AllureFormatter", "-o", "allure",
        "-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.report_dir=report",
        "-D", "prettyplay.generation_attempts=1", *strict, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result
    if mode == "planted":
        assert not llm.requests  # replayed red from the file, with no request
    # the terminal: the verdict is there, escaped, and the run's summary follows it
    assert "ProductDefectError" in result.output and SHOWN in result.output, result
    assert "AssertionError: the shop is closed\\x1b[2J\\x07\n" in result.output, result
    assert "prettyplay: 1 test (1 failed)" in result.output, result
    assert not RAW.search(result.output), repr(RAW.search(result.output))
    # JUnit is well-formed XML and carries the escaped verdict
    junit = list((project.root / "junit").glob("*.xml"))
    assert junit
    for path in junit:
        ET.parse(path)  # raises on ill-formed XML
    assert any(SHOWN in ET.tostring(ET.parse(p).getroot(), "unicode") for p in junit)
    # behave's JSON: its error message decodes to the escaped text
    texts = list(strings(json.loads((project.root / "behave.json").read_text(encoding="utf-8"))))
    assert any(SHOWN in text for text in texts) and not any(RAW.search(t) for t in texts)
    # every file the run wrote outside the cache holds no control character
    files = [p for p in project.root.rglob("*") if p.is_file() and p.suffix in (".xml", ".json")]
    files += [project.root / "report" / "report.html", *(project.root / "allure").glob("*.txt")]
    for path in files:
        assert not RAW_BYTES.search(path.read_bytes()), path
    # Allure's attachment of the verdicts shows it too
    allure_texts = [p.read_text() for p in (project.root / "allure").glob("*-attachment.txt")]
    assert any(SHOWN in text for text in allure_texts), allure_texts
    assert SHOWN in (project.root / "report" / "report.html").read_text(encoding="utf-8")
    if mode == "planted":
        return
    # the cache keeps the LLM's verdict, its control characters escaped
    stored = steps(project.cache_dir)
    assert [e["verdict"]["explanation"] for e in stored if "verdict" in e] == [SHOWN]
    assert not RAW.search(library_file(project.cache_dir, "check", "the shop is open").read_text())


def test_cache_list_check_plan_and_diff_show_planted_text_escaped(
    project: BehaveProject,
) -> None:
    project.write(
        "features/shop.feature", FEATURE.replace("    Then", "    And I look around\n    Then")
    )
    plant_red(project.cache_dir)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=project.root, check=True)
    subprocess.run([*git, "add", "features/shop.feature"], cwd=project.root, check=True)
    subprocess.run([*git, "commit", "-qm", "features"], cwd=project.root, check=True)
    # an entry named and worded by the attacker: another feature's own, that serves a step of
    # the feature as code to reuse
    CacheStore(project.cache_dir, validate=check_code).keep([
        StepEntry("action", "I look around", 'def step(page) -> None:\n    page.goto("/\x1b[2J")\n',
                  "generated", feature="x\x1b[2J\x07.feature")
    ])  # fmt: skip
    outputs = {
        "cache list": cli(project.root, "cache", "list"),
        "check": cli(project.root, "check"),
        "plan": cli(project.root, "plan"),
        "cache diff": cli(project.root, "cache", "diff"),
    }
    for name, done in outputs.items():
        assert done.returncode in (0, 1), (name, done)
        assert not RAW_BYTES.search(done.stdout + done.stderr), (name, done.stdout)
    listed = outputs["cache list"].stdout.decode()
    assert f"RED: product_defect: {SHOWN}" in listed, listed
    assert "only x\\x1b[2J\\x07.feature" in listed, listed
    assert "3 cache files, 3 entries checked, 0 files refused" in outputs["check"].stdout.decode()
    planned = outputs["plan"].stdout.decode()
    assert "reuse       And I look around  (the entry of x\\x1b[2J\\x07.feature in " in planned
    diffed = outputs["cache diff"].stdout.decode()
    assert 'page.goto("/\\x1b[2J")' in diffed, diffed


# -- 2: any structure gives a CacheError naming the file ----------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_deeply_nested_file_is_a_cache_error_and_the_run_keeps_its_summary(
    project: BehaveProject, shop
) -> None:
    project.write("features/shop.feature", FEATURE)
    path = project.cache_dir / "shop.feature.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(DEEP)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", timeout=120)
    assert result.returncode == 1, result
    message = f"CacheError: {path.resolve()}: the JSON nests too deeply to be a cache file"
    assert message in result.output, result
    assert "RecursionError" not in result.output, result  # behave's traceback is of the CacheError
    # after_all ran to its end: the summary, and why the obsolete entries are unknown
    assert "prettyplay: 1 test (1 failed)" in result.output, result
    assert "obsolete entries unknown: " in result.output, result
    assert path.read_bytes() == DEEP
    for args in (("check",), ("cache", "list"), ("plan",)):
        done = cli(project.root, *args)
        out = (done.stdout + done.stderr).decode()
        assert done.returncode == 1, (args, out)
        assert "the JSON nests too deeply to be a cache file" in out, (args, out)
        assert "shop.feature.json" in out and "Traceback" not in out, (args, out)


# -- 3: a lock file is never followed through a link --------------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    outside = tmp_path / "outside" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("the user's own file\n")
    return outside


def test_a_planted_lock_link_leaves_its_target_untouched_on_prune(
    project: BehaveProject, victim: Path
) -> None:
    project.write("features/shop.feature", FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    store.write(CacheWrite(CacheKey(TEST, "step", "I open the shop"), OPEN_SHOP, "generated"))
    store.write(CacheWrite(CacheKey(TEST, "step", "I left long ago"), OPEN_SHOP, "generated"))
    obsolete = library_file(project.cache_dir, "action", "I left long ago")
    lock = project.cache_dir / ".lock"  # the library's one lock
    lock.unlink()
    lock.symlink_to(victim)
    before = obsolete.read_bytes()
    done = cli(project.root, "cache", "prune")
    err = done.stderr.decode()
    assert done.returncode == 1, err
    shown = Path("features/.prettyplay", lock.name)
    assert f"{shown}: the lock file is a " in err
    assert f"symbolic link (to {victim}); prettyplay never follows one: delete the link" in err
    assert victim.read_text() == "the user's own file\n"
    assert obsolete.read_bytes() == before
    assert lock.is_symlink()


def test_a_planted_lock_link_leaves_its_target_untouched_on_generation(
    project: BehaveProject, shop, llm: ScriptedLLMServer, victim: Path
) -> None:
    project.write("features/shop.feature", FEATURE.replace("    Then the shop is open\n", ""))
    written = library_file(project.cache_dir, "action", "I open the shop")
    written.parent.mkdir(parents=True)
    lock = project.cache_dir / ".lock"
    lock.symlink_to(victim)
    llm.on("generate", code_answer(OPEN_SHOP))
    llm.on("gate", CLEAN_GATE, repeat=True)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env, timeout=120)
    assert result.returncode == 1, result
    assert "the lock file is a symbolic link" in result.output, result
    assert victim.read_text() == "the user's own file\n"
    assert not written.exists()
    assert "prettyplay: 1 test (1 failed)" in result.output, result


@pytest.mark.skipif(os.name == "nt", reason="hard links of a test's own files: POSIX")
def test_a_lock_file_hard_linked_to_another_file_is_refused(tmp_path: Path, victim: Path) -> None:
    cache = tmp_path / "cache"
    lock = cache / ".lock"
    lock.parent.mkdir(parents=True)
    os.link(victim, lock)
    store = CacheStore(cache, validate=check_code)
    with pytest.raises(Exception, match="the lock file is not a file of its own"):
        store.write(
            CacheWrite(CacheKey("bounds", "step", "I open the shop"), OPEN_SHOP, "generated")
        )
    assert victim.read_text() == "the user's own file\n"


def test_the_run_keeps_its_summary_when_the_obsolete_entries_cannot_be_known(
    project: BehaveProject, shop
) -> None:
    """A feature file outside the run that behave cannot parse: the obsolete entries are
    unknown, the summary is printed all the same."""
    project.write("features/shop.feature", FEATURE.replace("    Then the shop is open\n", ""))
    project.write("features/broken.feature", "Feature: Broken\n  Examples:\n")
    CacheStore(project.cache_dir, validate=check_code).write(
        CacheWrite(CacheKey(TEST, "step", "I open the shop"), OPEN_SHOP, "generated")
    )
    result = project.run(
        "-D", f"prettyplay.base_url={shop.url}", "features/shop.feature", timeout=120
    )
    assert "prettyplay: 1 test (0 failed)" in result.output, result
    unknown = "obsolete entries unknown: features/broken.feature: behave cannot read it ("
    assert unknown in result.output, result
    assert result.returncode == 0, result


# -- 4: nothing is listed, read, written or deleted through a link that leaves the project ------


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    """A folder of the user's outside the project that looks like a cache: another program's
    step file, its lock, an old per-feature file and lock files of other programs (each of which
    prettyplay's sweep of stale locks would take for its own)."""
    made = Outside.made(tmp_path)
    plant(made.folder, TEST, ("action", "I open the shop", OPEN_SHOP))
    (made.folder / "shop.feature.json").write_text('{"format": 2, "steps": []}\n')
    for lock in ("app.lock", "steps/gone.py.lock", "deep/db.lock"):
        (made.folder / lock).parent.mkdir(exist_ok=True)
        (made.folder / lock).write_text("")
    made.settle()
    return made


def planted_link(project: BehaveProject, planted: str, outside: Outside) -> Path:
    link = project.root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside.folder)
    outside.settle()
    return link


# what each command is asked, and its exit status when it refuses
COMMANDS = {
    "cache prune": (["cache", "prune"], 1),
    "check": (["check"], 1),
    "cache list": (["cache", "list"], 1),
    "cache drop": (["cache", "drop", "I open the shop"], 1),
    "cache migrate": (["cache", "migrate"], 1),
    "cache diff": (["cache", "diff"], 2),
    "plan": (["plan"], 1),
    "export": (["export", "../exported"], 1),
}


@pytest.mark.parametrize(
    ("planted", "what"),
    [
        ("features/.prettyplay", "the cache folder"),
        ("features/.prettyplay/steps", "the library folder"),
    ],
)
def test_no_command_goes_through_a_planted_cache_or_library_folder_link(
    project: BehaveProject, outside: Outside, planted: str, what: str
) -> None:
    """The link is committed, as a pull request would add it: every command that reads,
    writes or deletes in the cache refuses it by name, and what it points to is neither read
    nor listed (``prune`` deleted other programs' lock files through it, ``migrate`` wrote step
    files there, ``check`` and ``list`` read whatever it held)."""
    project.write("features/shop.feature", FEATURE)
    project.write("features/old.feature", FEATURE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=project.root, check=True)
    subprocess.run([*git, "add", "."], cwd=project.root, check=True)
    subprocess.run([*git, "commit", "-qm", "features"], cwd=project.root, check=True)
    if planted.endswith("steps"):  # an old file of the project's own, for migrate to move
        project.write("features/.prettyplay/old.feature.json", '{"format": 2, "steps": []}\n')
    link = planted_link(project, planted, outside)
    subprocess.run([*git, "add", "."], cwd=project.root, check=True)
    subprocess.run([*git, "commit", "-qm", "the link"], cwd=project.root, check=True)
    outside.settle()
    refusal = (
        f"{planted}: {what} is a symbolic link (to {outside.folder}); prettyplay never follows "
        "one: delete the link"
    )
    for name, (args, status) in COMMANDS.items():
        done = run_prettyplay(project.root, args)
        assert done.returncode == status, (name, done)
        assert refusal in done.stderr, (name, done)
        assert "Traceback" not in done.stderr, (name, done)
        try:  # after each command: nothing written, deleted, read or listed
            outside.untouched(listed_by_behave=name == "plan")
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    assert link.is_symlink() and not (project.root.parent / "exported").exists()


def test_prune_deletes_a_stale_lock_link_in_the_library_never_what_it_points_to(
    project: BehaveProject, outside: Outside
) -> None:
    """A lock file of a step file that is gone is swept, also when it is a link (the name is
    deleted, in the library folder); a lock of a live file stays; nothing outside is touched.
    The sweep still works on an ordinary library: it is the positive control."""
    project.write("features/shop.feature", FEATURE.replace("    Then the shop is open\n", ""))
    library = plant(project.cache_dir, TEST, ("action", "I open the shop", OPEN_SHOP)) / "steps"
    stale = library / "action-i-left-0123456789.py.lock"
    stale.symlink_to(outside.folder / "app.lock")
    gone = library / "action-i-went-0123456789.py.lock"
    gone.write_text("")
    live = [p.name for p in library.glob("*.lock")]
    outside.settle()
    done = run_prettyplay(project.root, ["cache", "prune"])
    assert done.returncode == 0, done
    assert "0 obsolete entries deleted" in done.stdout, done
    left = sorted(p.name for p in library.glob("*.lock"))
    assert left == sorted(set(live) - {stale.name, gone.name})
    assert not os.path.lexists(stale) and not gone.exists()
    outside.untouched()


def test_a_generating_run_writes_nothing_through_a_planted_library_folder_link(
    project: BehaveProject, shop, llm: ScriptedLLMServer, outside: Outside
) -> None:
    """The run that would have generated the step and written its file (and a temporary file,
    and a lock) into the folder the link points to fails the step at its lookup, naming the
    link, before any request; the summary follows."""
    project.write("features/shop.feature", FEATURE.replace("    Then the shop is open\n", ""))
    link = planted_link(project, "features/.prettyplay/steps", outside)
    llm.on("generate", code_answer(OPEN_SHOP))
    llm.on("gate", CLEAN_GATE, repeat=True)
    result = project.run("-D", f"prettyplay.base_url={shop.url}", env=llm.env, timeout=120)
    assert result.returncode == 1, result
    refusal = f"the library folder is a symbolic link (to {outside.folder}); prettyplay never"
    assert f"CacheError: {link}: {refusal}" in result.output, result
    assert not llm.requests  # refused before the step asked for code
    assert "prettyplay: 1 test (1 failed)" in result.output, result
    outside.untouched(listed_by_behave=True)
    assert link.is_symlink()


# -- 5: a green record is data from the file: what evidence does with it is bounded -------------

# V8 backtracks on this pattern for hours before it finds that the page's run of "a"s is not
# at the end of its text
BACKTRACKING = Found('get_by_text(re.compile("(a+)+$"))', "paragraph", text="a" * 34, tag="p")
WORK_PAGE = "<title>Work</title><h1>Work</h1><p>" + "a" * 34 + "b</p><button>Start</button>"
PLANTED_FEATURE = """\
Feature: Planted
  Scenario: Go
    Given I open the work page
    When I press go
"""
AFTER_FEATURE = """\
Feature: After
  Scenario: Look
    Given I open the work page
    Then the work page shows
"""
PLANTED_RECORD = {
    ("a_planted.feature::Go", "step", "I open the work page"): ('page.goto("/")', None),
    ("a_planted.feature::Go", "step", "I press go"): (
        'page.get_by_role("button", name="Go").click()',
        GreenRecord("2026-12-01", "/", (BACKTRACKING,)),
    ),
    ("b_after.feature::Look", "expect", "the work page shows"): (
        'expect(page.get_by_role("heading")).to_have_text("Work")',
        None,
    ),
}
INCURABLE = json_answer({"label": "incurable", "explanation": "gone", "recommendation": "-"})


@pytest.mark.parametrize("mode", ["strict, no key", "strict", "healing"])
def test_a_planted_record_whose_pattern_backtracks_ends_in_time_and_the_run_goes_on(
    mode: str, project: BehaveProject, llm: ScriptedLLMServer
) -> None:
    """The planted step goes red; a strict run never reads its record (no key: no request; with
    one, its classification is told nothing of it), and a healing run reads it within
    action_timeout_ms, then the page's script is stopped and the step is judged without it, on
    the page as it was. Either way the step fails with its own error and the next feature
    runs. (A bound that breaks fails the run's timeout, not the suite's.)"""
    project.write("features/a_planted.feature", PLANTED_FEATURE)
    project.write("features/b_after.feature", AFTER_FEATURE)
    store = CacheStore(project.cache_dir, validate=check_code)
    for (test, kind, sentence), (body, green) in PLANTED_RECORD.items():
        code = f"def step(page) -> None:\n    {body}\n"
        store.write(CacheWrite(CacheKey(test, kind, sentence), code, "generated", green=green))
    llm.on("classify", INCURABLE, repeat=True)
    with PageServer({"/": WORK_PAGE}) as app:
        started = time.monotonic()
        result = project.run(
            "--no-logcapture", "-D", f"prettyplay.base_url={app.url}",
            "-D", "prettyplay.action_timeout_ms=1000",
            *(("-D", "prettyplay.strict=true") if mode.startswith("strict") else ()),
            env=llm.env if mode != "strict, no key" else {}, timeout=120,
        )  # fmt: skip
        seconds = time.monotonic() - started
    assert result.returncode == 1, result
    assert seconds < 60, (seconds, result)
    failure = (
        "RedStepError: the cached step failed (strict: replay only)"
        if mode.startswith("strict")
        else "IncurableStepError: the cached step failed and cannot be healed"
    )
    assert failure in result.output, result
    assert "Locator.click: Timeout 1000ms exceeded" in result.output, result  # its own error
    assert 'waiting for get_by_role("button", name="Go")' in result.output, result
    assert "Then the work page shows ... passed" in result.output, result  # the next feature
    assert "prettyplay: 2 tests (1 failed)" in result.output, result
    stopped = "the green record of the failing step was still being read on the page"
    assert (stopped in result.output) is (mode == "healing"), result
    if mode == "strict, no key":
        assert llm.requests == []
        return
    assert [r.purpose for r in llm.requests] == ["classify"]
    classify = llm.requests[0].text
    assert "this is the cached code: it passed on" not in classify  # judged without the record
    assert 'button "Start"' in classify  # on the page as it was: stopped, not closed
