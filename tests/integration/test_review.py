"""Reviewing what a run changed: the heal diffs of the HTML report, the rewritten entries of the
summary, and ``prettyplay cache diff`` against a git ref, over a changed-UI run of the examples
that heals, in a git repository."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from prettyplay_behave.browser.tabs import Tabs
from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, file_name
from prettyplay_behave.config import PrettyConfig
from prettyplay_behave.engine import step
from prettyplay_behave.engine.state import TestState
from prettyplay_behave.llm.answers import Verdict
from prettyplay_behave.parameters import parameterize
from prettyplay_behave.report.html import write_report
from prettyplay_behave.report.summary import RunSummary
from prettyplay_behave.safety.secrets import Secrets
from prettyplay_behave.safety.step_code import check_code
from prettyplay_behave.vocabulary import GroupLabel, Kind, Origin, StepStatus
from tests.conftest import HealedExamples
from tests.support.behave_runs import run_prettyplay
from tests.support.caches import by_sentence, plant
from tests.support.changed_ui import CART, CHECKOUT
from tests.support.healing_run import READS_HEALED_EXAMPLES, RECOVERABLE, ROT, git
from tests.support.shop_steps import ACCEPT, OPEN_SHOP

# the module's tests read one shared run: in a parallel suite they stay on one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(READS_HEALED_EXAMPLES)]

CART_TESTS = {
    "Add a product to the cart": [
        "I accept the cookie banner",
        'I add the "Blue Mug" to the cart',
        "the cart link shows 1 item",
    ],
    # the Background's banner is one entry of the library, healed in the first scenario
    "An empty cart says so": ["I open the cart", "the cart says that it is empty"],
}
# every step the changed UI broke, by feature and scenario, with its new origin: the checkout's
# banner replays the entry the cart's heal rewrote (one library: one place); the rest of its
# group is recovered
REWRITTEN = {
    ("shop/cart.feature", test, sentence, "healed")
    for test, sentences in CART_TESTS.items()
    for sentence in sentences
} | {
    ("shop/checkout.feature", "Order a product", sentence, "recovered")
    for sentence in CHECKOUT
    if sentence != "I accept the cookie banner"
}
# the same, as the entries of the library that changed: (template, values, origin)
ENTRIES = {
    (parameterize(sentence).template, parameterize(sentence).values, origin)
    for _, _, sentence, origin in REWRITTEN
}
FILES = {file_name(("check" if t.startswith("the ") else "action", t, "")) for t, _, _ in ENTRIES}

# the login the changed UI broke for good: a red entry pinned to each scenario that logs in
LOGIN = 'I log in as "{}" with the password "{}"'
RED_LOGINS = (
    "A shopper logs in -- @1.1",
    "A shopper logs in -- @1.2",
    "A wrong password is refused",
)


def cache_diff(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    return run_prettyplay(cwd, ["cache", "diff", *args], env)


@dataclass
class Listed:
    feature: str
    test: str
    what: str
    kind: str
    sentence: str
    origin: str
    diff: list[str]


HEADLINE = re.compile(
    r"^    (added|removed|changed)\s+(action|check) ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"(?: for .+?)?(?: in '.+?'(?: #\d+)?)?(?: of '.+?')?( \(with its data\))?, (.+)$"
)


def listed(output: str) -> list[Listed]:
    """The entries ``cache diff`` printed, with their diff lines."""
    found: list[Listed] = []
    feature = test = ""
    for line in output.splitlines():
        if not line.startswith(" ") and line.endswith(")") and " (" in line:
            feature = line.split(" (")[0]
        elif line.startswith("  ") and not line.startswith("   "):
            test = line.strip()
        elif match := HEADLINE.match(line):
            what, kind, sentence, _, origin = match.groups()
            found.append(Listed(feature, test, what, kind, ast.literal_eval(sentence), origin, []))
        elif line.startswith("      ") and found:
            found[-1].diff.append(line[6:])
    return found


@pytest.fixture
def healed(healed_examples: HealedExamples) -> HealedExamples:
    """The example features, committed to git, then healed against the changed UI (the login
    fails there as a product defect)."""
    return healed_examples


def test_the_summary_lists_each_rewritten_entry_after_its_lines(healed: HealedExamples) -> None:
    lines = [line for line in healed.result.output.splitlines() if line.startswith("prettyplay:")]
    assert lines[-1] == "prettyplay: report: reports/report.html"  # last: where to look next
    lines = lines[:-1]
    rewritten = [line for line in lines if line.startswith("prettyplay: rewritten")]
    assert lines[-len(rewritten) :] == rewritten  # after the existing lines
    assert lines[3].startswith("prettyplay: wall time:")
    expected = {
        f"prettyplay: rewritten ({origin}) {feature}::{test}: {sentence}"
        for feature, test, sentence, origin in REWRITTEN
    }
    assert sorted(rewritten) == sorted(expected)


def test_the_report_shows_the_diff_of_each_rewritten_entry_beside_its_cause(
    healed: HealedExamples, browser
) -> None:
    report = healed.root / "reports" / "report.html"
    page = browser.new_page()
    try:
        page.goto(report.as_uri())
        page.evaluate("document.querySelectorAll('details.test').forEach(d => d.open = true)")
        changes = page.evaluate(
            """() => [...document.querySelectorAll("section.test")].flatMap(section =>
                [...section.querySelectorAll("tr")].filter(row => row.querySelector(".change"))
                .map(row => ({
                    test: section.querySelector("h2").innerText.split(" — ")[0],
                    sentence: row.querySelector("td strong").nextSibling.textContent.trim(),
                    title: row.querySelector(".change h3").innerText,
                    removed: [...row.querySelectorAll(".change .removed")].map(e => e.innerText),
                    added: [...row.querySelectorAll(".change .added")].map(e => e.innerText),
                    diff: row.querySelector(".change pre.diff").innerText,
                    cause: row.querySelector(".change .cause").innerText,
                })))"""
        )
        rows = page.locator("tr", has=page.locator("td strong")).count()
    finally:
        page.close()
    shown = {(c["test"].split("::")[0], c["test"].split("::")[1], c["sentence"]) for c in changes}
    assert len(changes) == len(REWRITTEN) < rows  # replayed steps show no change
    assert shown == {(feature, test, sentence) for feature, test, sentence, _ in REWRITTEN}
    cached = by_sentence(healed.root / "features/.prettyplay", "shop/cart.feature")
    for change in changes:
        feature = change["test"].split("::")[0]
        new = {**CART, **CHECKOUT}[change["sentence"]]
        assert change["added"] == [f"+{line}" for line in new.splitlines()[1:]], change
        assert change["removed"], change  # the code the changed UI broke
        renamed = (
            feature != "shop/cart.feature" and change["sentence"] == "I accept the cookie banner"
        )
        healed = feature == "shop/cart.feature" or renamed
        assert change["diff"].splitlines()[:2] == [
            "--- cached",
            f"+++ {'healed' if healed else 'recovered'}",
        ]
        if renamed:
            assert change["title"] == "healed: what changed"
            assert change["cause"] == (
                "why\nhealed with the rename that healed 'I accept the cookie banner' in this run"
            )
        elif healed:
            assert change["title"] == "healed: what changed"
            assert change["cause"] == f"why\nrot: {ROT}"
        else:
            assert change["title"] == "recovered: what changed"
            assert change["cause"].startswith(f"why\nrecoverable: {RECOVERABLE} (root: ")
    banner = next(c for c in changes if c["sentence"] == "I accept the cookie banner")
    assert '-    page.get_by_role("button", name="Accept cookies").click()' in banner["removed"]
    assert cached["I accept the cookie banner"]["origin"] == "healed"
    html = report.read_text()  # escaped: the code's quotes are entities, not markup
    assert (
        '<span class="added">+    page.get_by_role(&#34;button&#34;, name=&#34;Allow all&#34;)'
        ".click()</span>"
    ) in html


def test_cache_diff_lists_exactly_the_rewritten_entries_against_a_ref(
    healed: HealedExamples,
) -> None:
    changed = cache_diff(healed.root)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    everything = listed(changed.stdout)
    red = [e for e in everything if e.sentence == LOGIN]
    assert len(red) == len(RED_LOGINS) and {e.what for e in red} == {"added"}, red
    assert all("red (product_defect)" in e.origin for e in red), red
    assert all(any(test in e.origin for e in red) for test in RED_LOGINS), red
    entries = [e for e in everything if e not in red]
    assert sorted((e.sentence, e.origin) for e in entries) == sorted(
        (template, f"generated -> {origin}") for template, _, origin in ENTRIES
    )
    assert len(entries) == len(ENTRIES) and {e.what for e in entries} == {"changed"}
    assert {e.test for e in entries} == {"library"}
    banner = next(e for e in entries if e.sentence == "I accept the cookie banner")
    # the heal stopped checking that the banner went: cache diff says so above the diff
    assert banner.diff[:3] == ["assertions dropped: to_be_hidden()", "--- HEAD", "+++ working tree"]
    assert '-    page.get_by_role("button", name="Accept cookies").click()' in banner.diff
    assert '+    page.get_by_role("button", name="Allow all").click()' in banner.diff
    banner_file = file_name(("action", "I accept the cookie banner", ""))
    assert (
        f"action 'I accept the cookie banner' (features/.prettyplay/steps/{banner_file})"
    ) in changed.stdout
    assert "    changed  action 'I fill the order form:' (with its data), " in changed.stdout
    assert changed.stdout.splitlines()[-1] == (
        f"{len(ENTRIES) + len(red)} entries differ from HEAD in {len(FILES) + 1} files "
        f"({len(red)} added, 0 removed, {len(ENTRIES)} changed)"
    )

    git(healed.root, "commit", "-q", "-am", "healed against the changed UI")
    clean = cache_diff(healed.root)
    assert (clean.returncode, clean.stdout) == (
        0, "0 entries differ from HEAD in 0 files (0 added, 0 removed, 0 changed)\n"
    )  # fmt: skip
    before = cache_diff(healed.root, "HEAD~1")
    assert before.returncode == 1
    assert sorted(e.sentence for e in listed(before.stdout)) == sorted(
        [t for t, _, _ in ENTRIES] + [LOGIN] * len(RED_LOGINS)
    )
    unknown = cache_diff(healed.root, "no-such-branch")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "unknown git ref 'no-such-branch'" in unknown.stderr


def test_cache_diff_refuses_what_it_cannot_compare(tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repo"
    store = CacheStore(outside / "features" / ".prettyplay", validate=check_code)
    store.write(
        CacheWrite(CacheKey("shop.feature::A", "step", "I open the shop"), OPEN_SHOP, "generated")
    )
    done = cache_diff(outside)
    assert done.returncode == 2 and done.stdout == ""
    assert "features/.prettyplay: not inside a git repository" in done.stderr
    git(outside, "init", "-q")
    empty = cache_diff(outside)  # a repository without any commit has no HEAD
    assert empty.returncode == 2 and "unknown git ref" not in empty.stderr
    assert "has no commit yet, so there is nothing to compare the cache with" in empty.stderr
    git(outside, "add", "-A")
    git(outside, "commit", "-q", "-m", "cache")
    missing = cache_diff(outside, "--cache-dir", "features/nope")
    assert missing.returncode == 2
    assert "features/nope: no such folder, neither in the working tree nor at HEAD" in (
        missing.stderr
    )


def test_cache_diff_lists_added_removed_and_changed_entries_in_new_and_deleted_files(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    cache_dir = root / "tests-cache"
    plant(
        cache_dir,
        "a.feature::One",
        ("action", "I open the shop", OPEN_SHOP),
        ("action", "I accept the cookie banner", ACCEPT),
        ("action", "I keep this", OPEN_SHOP),
    )
    plant(cache_dir, "old.feature::Gone", ("action", "I open the shop", OPEN_SHOP))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "cache")
    kept = cache_dir / "steps" / file_name(("action", "I keep this", ""))
    untouched = kept.read_bytes()

    moved = OPEN_SHOP.replace('"/"', '"/shop"')
    plant(cache_dir, "a.feature::One", ("action", "I open the shop", moved), origin="healed")
    plant(cache_dir, "a.feature::Two", ("action", "I open the shop", OPEN_SHOP), pinned=True)
    plant(cache_dir, "new.feature::Fresh", ("action", "I open the cart", OPEN_SHOP))
    store = CacheStore(cache_dir, validate=check_code)
    store.drop([e for e in store.library().entries if "cookie" in e.sentence])
    assert kept.read_bytes() == untouched

    done = cache_diff(root, "--cache-dir", "tests-cache")
    assert done.returncode == 1, done.stderr
    entries = {(e.test, e.what, e.sentence, e.origin) for e in listed(done.stdout)}
    assert entries == {
        ("library", "changed", "I open the shop", "generated -> healed"),
        ("library", "removed", "I accept the cookie banner", "generated"),
        ("pinned to Two of a.feature", "added", "I open the shop", "generated"),
        ("library", "added", "I open the cart", "generated"),
    }
    cart, banner = (
        file_name(("action", s, "")) for s in ("I open the cart", "I accept the cookie banner")
    )
    assert f"action 'I open the cart' (tests-cache/steps/{cart}, new file)" in done.stdout
    assert (
        f"action 'I accept the cookie banner' (tests-cache/steps/{banner}, deleted)" in done.stdout
    )
    added = next(e for e in listed(done.stdout) if e.sentence == "I open the cart")
    assert added.diff[2:] == ["@@ -0,0 +1,2 @@", "+def step(page) -> None:", '+    page.goto("/")']
    removed = next(e for e in listed(done.stdout) if e.what == "removed" and "cookie" in e.sentence)
    assert [line for line in removed.diff if line.startswith("-") and "---" not in line] == [
        f"-{line}" for line in ACCEPT.splitlines()
    ]
    assert done.stdout.splitlines()[-1] == (
        "4 entries differ from HEAD in 3 files (2 added, 1 removed, 1 changed)"
    )


def test_cache_diff_shows_nothing_for_a_migration_alone(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    cache_dir = root / "features" / ".prettyplay"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "format2", cache_dir)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "format 2")
    assert CacheStore(cache_dir, validate=check_code).migrate()
    assert list((cache_dir / "steps").glob("*.py")) and not list(cache_dir.rglob("*.json"))
    done = cache_diff(root)
    assert (done.returncode, done.stdout) == (
        0, "0 entries differ from HEAD in 0 files (0 added, 0 removed, 0 changed)\n"
    )  # fmt: skip


def test_cache_diff_reports_a_refused_entry_by_file_and_entry(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    cache_dir = root / "features" / ".prettyplay"
    plant(cache_dir, "a.feature::One", ("action", "I open it", OPEN_SHOP))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "cache")
    path = cache_dir / "steps" / file_name(("action", "I open it", ""))
    path.write_text(path.read_text() + "    page.evaluate('1')\n")
    refused = cache_diff(root)
    assert refused.returncode == 2 and refused.stdout == ""
    assert (
        f"working tree: features/.prettyplay/steps/{path.name}: line 10 "
        "(action 'I open it'): the code is refused: line 3: attribute 'evaluate'"
    ) in refused.stderr
    path.write_text("<<<<<<< HEAD\n" + path.read_text())
    conflicted = cache_diff(root)
    assert conflicted.returncode == 2
    assert "merge conflict markers at line 1" in conflicted.stderr


def test_the_report_shows_a_steered_change_and_a_row_recovered_without_its_own_verdict(
    browser, tmp_path: Path
) -> None:
    """A steered entry's diff sits beside the guidance; a row step recovered before the failed
    group step shows the diagnosis booked on that later step; code is escaped, not markup."""
    page = browser.new_page()
    try:
        test = TestState("shop.feature::Order", PrettyConfig().for_test(), Tabs(page))

        def step_run(sentence: str, old: str, new: str, origin: Origin, group: str | None = None):
            spec = step.StepSpec(Kind.ACTION, sentence)
            made = step.StepRun(
                spec, CacheKey(test.name, spec.kind, sentence), group=group,
                outcome=StepStatus.PASSED, origin=origin, code=new, replaced=old,
            )  # fmt: skip
            test.add_step(made)
            return made

        hostile = (
            "def step(page) -> None:\n"
            '    page.get_by_text("</code></pre><script>x()</script>").click()\n'
        )
        steered = step_run("I accept the cookie banner", ACCEPT, hostile, Origin.STEERED)
        steered.guidance = "the banner's button is <b>Allow all</b>"
        step_run("I open the shop", OPEN_SHOP, OPEN_SHOP.replace('"/"', '"/shop"'),
              Origin.RECOVERED, "buy")  # fmt: skip
        failed = step_run("I buy", OPEN_SHOP, ACCEPT, Origin.RECOVERED, "buy")
        failed.verdicts.append(
            Verdict(GroupLabel.RECOVERABLE, "the shop moved", "heal", "I open the shop")
        )
        step_run("I look", OPEN_SHOP, OPEN_SHOP, Origin.REPLAYED).replaced = None
        report = write_report(tmp_path, [test], RunSummary.of([test], {}, 0, None, 1.0), str)
        page.goto(report.as_uri())
        page.evaluate("document.querySelectorAll('details.test').forEach(d => d.open = true)")
        assert page.locator("script").count() == 0
        changes = page.locator(".change")
        assert changes.count() == 3
        steered_box = page.locator("tr", has_text="I accept the cookie banner").locator(".change")
        assert steered_box.locator(".cause").inner_text() == (
            "why\nguidance: the banner's button is <b>Allow all</b>"
        )
        assert steered_box.locator(".added").inner_text() == (
            '+    page.get_by_text("</code></pre><script>x()</script>").click()'
        )
        row = page.locator("tr").nth(2).locator(".change .cause")  # after the head and steered
        assert row.inner_text() == "why\nrecoverable: the shop moved (root: I open the shop)"
        summary = page.locator("ul.summary li").all_inner_texts()
        assert summary[-3:] == [
            "rewritten (steered) shop.feature::Order: I accept the cookie banner",
            "rewritten (recovered) shop.feature::Order: I open the shop",
            "rewritten (recovered) shop.feature::Order: I buy",
        ]
    finally:
        page.close()


def test_the_diff_of_a_rewrite_is_redacted(browser, tmp_path: Path) -> None:
    """Code that a step once typed a secret with, and its replacement, show the placeholder."""
    canary = "canary-D1ff-7q"
    secrets = Secrets({"TOKEN": canary})
    secrets.require(["TOKEN"], "log in with ${TOKEN}")
    page = browser.new_page()
    try:
        test = TestState("login.feature::In", PrettyConfig().for_test(), Tabs(page))
        spec = step.StepSpec(Kind.ACTION, "log in with ${TOKEN}")
        test.add_step(
            step.StepRun(
                spec, CacheKey(test.name, spec.kind, spec.sentence), outcome=StepStatus.PASSED,
                origin=Origin.HEALED, replaced=f'def step(page) -> None:\n    x = "{canary}"\n',
                code=f'def step(page) -> None:\n    y = "{canary}"\n',
            )
        )  # fmt: skip
        summary = RunSummary.of([test], {}, 0, None, 1.0)
        html = write_report(tmp_path, [test], summary, secrets.redact).read_text()
    finally:
        page.close()
    assert canary not in html
    assert '<span class="removed">-    x = &#34;${TOKEN}&#34;</span>' in html
    assert '<span class="added">+    y = &#34;${TOKEN}&#34;</span>' in html
