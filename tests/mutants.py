"""Targeted mutations: break one behaviour, run the tests that claim to cover it, expect red.

Where a silent regression is a security hole or lost data (the code policy, the proxies, the
sandbox, secrets and their redaction, the cache files, failure artifacts), a green suite must
mean the behaviour is there. Each mutant below is one such behaviour broken by a small edit;
the tests named beside it must fail. Run::

    ./dev.sh mutate            # every mutant
    ./dev.sh mutate policy     # the mutants whose name contains "policy"

Each mutant is applied in place, its tests run with ``pytest -x``, and the file is restored
(also on Ctrl+C); the working tree must be clean of changes to the mutated files. A mutant
whose ``before`` text is no longer found fails loudly, so the list keeps up with the code.
Survivors are printed and make the command exit 1. Mutants that cannot be told apart from the
real code by any behaviour (equivalent mutants) are left out; docs/contributing.md names them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "prettyplay_behave"

POLICY_TESTS = ("tests/unit/test_policy.py",)
SANDBOX_TESTS = ("tests/unit/test_policy.py", "tests/integration/test_sandbox.py")
SECRET_TESTS = ("tests/unit/test_secrets.py", "tests/integration/test_security.py")
CACHE_TESTS = ("tests/unit/test_cache.py", "tests/faults/test_cache_corruption.py")
BOUNDS_TESTS = ("tests/integration/test_bounds.py",)
IN_PAGE_TESTS = ("tests/integration/test_bounds_in_the_page.py",)
LIBRARY_TESTS = ("tests/integration/test_step_library.py",)
JUDGMENT_TESTS = ("tests/integration/test_judgments.py",)
ANSWER_TESTS = ("tests/unit/test_answers.py", "tests/unit/test_answers_tolerant.py")
APP_NEEDS_TESTS = ("tests/integration/test_app_needs.py",)
EXPORT_TESTS = ("tests/unit/test_export.py",)
ADDRESS_TESTS = ("tests/unit/test_cache.py", "tests/unit/test_address.py")
LINK_TESTS = ("tests/unit/test_cache.py", "tests/integration/test_planted_files.py")
IN_PROCESS_TESTS = ("tests/integration/test_engine_in_process.py",)
GREEN_TESTS = ("tests/integration/test_green_evidence.py",)
TRUST_TESTS = ("tests/integration/test_green_trust.py",)
OUTCOME_TESTS = ("tests/integration/test_outcomes.py",)
CUT_SECRET_TEST = (
    "tests/integration/test_bounds_spelled.py::"
    "test_a_secret_shown_past_a_cut_is_redacted_before_it_in_the_library_healed_code_and_requests"
)
PLANTED_RECORD_TEST = (
    "tests/integration/test_planted_files.py::"
    "test_a_planted_record_whose_pattern_backtracks_ends_in_time_and_the_run_goes_on"
)


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to the repository root
    before: str  # found exactly once in the file
    after: str
    tests: tuple[str, ...]

    def places(self) -> int:
        """How many times ``before`` is found in the file now (1 when the mutant matches)."""
        return (ROOT / self.file).read_text(encoding="utf-8").count(self.before)


MUTANTS = (
    # -- the code policy ------------------------------------------------------------------------
    Mutant("policy: while loops pass", f"{PACKAGE}/safety/policy.py",
           "    ast.With,\n)", "    ast.With,\n    ast.While,\n)",
           POLICY_TESTS),
    Mutant("policy: underscore names pass", f"{PACKAGE}/safety/policy.py",
           "-> None:\n        if name.startswith(\"_\"):", "-> None:\n        if False:",
           POLICY_TESTS),
    Mutant("policy: underscore attributes pass", f"{PACKAGE}/safety/policy.py",
           "        if attr.startswith(\"_\"):", "        if False:", POLICY_TESTS),
    Mutant("policy: refused builtins pass", f"{PACKAGE}/safety/policy.py",
           "        if name in REFUSED_NAMES:", "        if False:", POLICY_TESTS),
    Mutant("policy: any attribute passes", f"{PACKAGE}/safety/policy.py",
           "        if attr not in ALLOWED_ATTRIBUTES:", "        if False:", POLICY_TESTS),
    Mutant("policy: unknown names pass", f"{PACKAGE}/safety/policy.py",
           "        if name not in PROVIDED_NAMES | BUILTIN_NAMES and name not in self.locals:",
           "        if False:", POLICY_TESTS),
    Mutant("policy: secret() anywhere", f"{PACKAGE}/safety/policy.py",
           "            if id(node) not in self.secret_calls or not valid:",
           "            if not valid:", POLICY_TESTS),
    Mutant("policy: loops nest deeper", f"{PACKAGE}/safety/policy.py",
           "        if loop_depth >= MAX_LOOP_DEPTH:", "        if loop_depth > MAX_LOOP_DEPTH:",
           POLICY_TESTS),
    Mutant("policy: any loop iterable", f"{PACKAGE}/safety/policy.py",
           "        if not self._bounded(stmt.iter):", "        if False:", POLICY_TESTS),
    Mutant("policy: goto any scheme", f"{PACKAGE}/safety/policy.py",
           "            problem = navigation_problem(url.value)\n            if problem:",
           "            problem = navigation_problem(url.value)\n            if False:",
           POLICY_TESTS),
    Mutant("policy: ** passes", f"{PACKAGE}/safety/policy.py",
           '    ast.Pow: "the ** operator",\n', "", POLICY_TESTS),
    Mutant("policy: scheme tricks pass", f"{PACKAGE}/safety/policy.py",
           "    cleaned = _URL_IGNORED.sub(\"\", url).lstrip(_URL_LEADING)",
           "    cleaned = url", POLICY_TESTS),
    Mutant("policy: no size limit", f"{PACKAGE}/safety/step_code.py",
           "    if len(text) > MAX_CODE_CHARS:", "    if False:", POLICY_TESTS),
    Mutant("policy: decorators pass", f"{PACKAGE}/safety/policy.py",
           "        if fn.decorator_list:", "        if False:", POLICY_TESTS),
    Mutant("policy: provided names rebound", f"{PACKAGE}/safety/policy.py",
           "            if node.id in PROVIDED_NAMES | BUILTIN_NAMES:", "            if False:",
           POLICY_TESTS),
    # -- the capability proxies and the sandbox ---------------------------------------------------
    Mutant("proxy: any attribute forwarded", f"{PACKAGE}/safety/proxy.py",
           "        if name not in self._ALLOWED:", "        if False:", SANDBOX_TESTS),
    Mutant("proxy: raw Playwright objects returned", f"{PACKAGE}/safety/proxy.py",
           "        return {key: _wrap(item, budget, services) for key, item in value.items()}\n"
           "    return None",
           "        return {key: _wrap(item, budget, services) for key, item in value.items()}\n"
           "    return value",
           SANDBOX_TESTS),
    Mutant("proxy: goto any scheme", f"{PACKAGE}/safety/proxy.py",
           "        problem = navigation_problem(url)\n        if problem:",
           "        problem = navigation_problem(url)\n        if False:", SANDBOX_TESTS),
    Mutant("proxy: attributes assignable", f"{PACKAGE}/safety/proxy.py",
           '        raise CodePolicyError(f"{self._LABEL}.{name} cannot be assigned by step code")',
           "        object.__setattr__(self, name, value)", SANDBOX_TESTS),
    Mutant("sandbox: loops unbounded", f"{PACKAGE}/safety/limits.py",
           "        if len(snapshot) > limit:", "        if False:", SANDBOX_TESTS),
    Mutant("sandbox: range unbounded", f"{PACKAGE}/safety/sandbox.py",
           "    if len(numbers) > MAX_LOOP_ITEMS:", "    if False:", SANDBOX_TESTS),
    Mutant("sandbox: every builtin", f"{PACKAGE}/safety/sandbox.py",
           '        "__builtins__": dict(_BUILTINS),', '        "__builtins__": builtins.__dict__,',
           SANDBOX_TESTS),
    Mutant("sandbox: the whole re module", f"{PACKAGE}/safety/sandbox.py",
           '        "re": StepRegex(budget),', '        "re": __import__("re"),', SANDBOX_TESTS),
    # -- secrets --------------------------------------------------------------------------------
    Mutant("secrets: redaction off", f"{PACKAGE}/safety/secrets.py",
           '            text = pattern.sub(f"${{{name}}}", text)', "            pass",
           SECRET_TESTS),
    Mutant("secrets: another step's secret", f"{PACKAGE}/safety/secrets.py",
           "            if name not in own:", "            if False:", SECRET_TESTS),
    Mutant("secrets: typed on any origin", f"{PACKAGE}/safety/secrets.py",
           "            if not origin_allowed():", "            if False:", SECRET_TESTS),
    Mutant("secrets: literal values pass", f"{PACKAGE}/safety/secrets.py",
           "                if redacted.count(placeholder) > literal.count(placeholder):",
           "                if False:", SECRET_TESTS),
    Mutant("secrets: log records unredacted", f"{PACKAGE}/safety/secrets.py",
           "        if redacted != message:", "        if False:", SECRET_TESTS),
    Mutant("secrets: requests unredacted", f"{PACKAGE}/engine/advisor.py",
           '[{**m, "content": self.secrets.redact(m["content"])} for m in (system, user)]',
           "[system, user]",
           SECRET_TESTS),
    # -- failure artifacts and the report ---------------------------------------------------------
    Mutant("report: redaction off", f"{PACKAGE}/report/html.py",
           '    environment.filters["redact"] = redact',
           '    environment.filters["redact"] = lambda text: text',
           ("tests/integration/test_reporting.py",)),
    Mutant("report: URLs unredacted", "templates/report.html.j2",
           "{{ attempt.url_before | redact }} → {{ attempt.url_after | redact }}",
           "{{ attempt.url_before }} → {{ attempt.url_after }}",
           ("tests/integration/test_reporting.py",)),
    Mutant("report: failures not first", f"{PACKAGE}/report/html.py",
           "tests=failures + [test for test in tests if not test.failed],", "tests=tests,",
           ("tests/integration/test_reporting.py",)),
    Mutant("report: a failed test closed", "templates/report.html.j2",
           '<details class="test"{% if test.failed %} open{% endif %}>', '<details class="test">',
           ("tests/integration/test_reporting.py",)),
    Mutant("report history: unbounded", f"{PACKAGE}/report/html.py",
           "forget(report_dir, earlier[keep - 1 :])", "forget(report_dir, [])",
           ("tests/integration/test_reporting.py",)),
    Mutant("report history: a symbolic link is read and deleted", f"{PACKAGE}/report/history.py",
           "os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK", "os.O_RDONLY | os.O_NONBLOCK",
           ("tests/integration/test_reporting.py",)),
    Mutant("report history: a hard link is read and deleted", f"{PACKAGE}/report/history.py",
           "if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:",
           "if not stat.S_ISREG(found.st_mode):", ("tests/integration/test_reporting.py",)),
    Mutant("artifacts: screenshot of a secret test", f"{PACKAGE}/report/artifacts.py",
           '    return policy != "off" and not (test.uses_secrets and policy != "on")',
           '    return policy != "off"', ("tests/integration/test_security.py",)),
    Mutant("artifacts: video of a secret test kept", f"{PACKAGE}/report/artifacts.py",
           '        if test.uses_secrets and policy != "on":\n            keep = False\n', "",
           ("tests/integration/test_security.py",)),
    Mutant("artifacts: no final screenshot", f"{PACKAGE}/report/artifacts.py",
           '            self.screenshot(test, "final.png")', "            pass",
           ("tests/integration/test_reporting.py",)),
    Mutant("artifacts: trace of a secret test kept", f"{PACKAGE}/report/artifacts.py",
           'if state.tracing and test.config.trace != "on":', "if False:",
           ("tests/integration/test_security.py",)),
    Mutant("artifacts: passing tests keep traces", f"{PACKAGE}/report/artifacts.py",
           'keep=test.failed or test.config.trace == "on"', "keep=True",
           ("tests/integration/test_reporting.py",)),
    Mutant("report: diffs unredacted", f"{PACKAGE}/report/diffs.py",
           "unified_diff(redact(run.replaced), redact(run.code),",
           "unified_diff(run.replaced, run.code,", ("tests/integration/test_review.py",)),
    Mutant("allure: attachments unredacted", f"{PACKAGE}/report/attachments.py",
           "return [(name, escape_controls(redact(text))) for name, text in texts]",
           "return texts",
           ("tests/integration/test_allure.py",)),
    Mutant("cache diff: refused entries compared", f"{PACKAGE}/cache_diff.py",
           "parse(Path(path), raw, check_code)", "parse(Path(path), raw, lambda code: None)",
           ("tests/integration/test_review.py",)),
    Mutant("init: overwrites what exists", f"{PACKAGE}/scaffold.py",
           '        if path.exists():\n            self.note("kept"',
           '        if False:\n            self.note("kept"', ("tests/integration/test_init.py",)),
    # -- the cache ------------------------------------------------------------------------------
    Mutant("cache: entries unchecked on load", f"{PACKAGE}/cache/schema.py",
           "    try:\n        validate(entry.code)\n", "    try:\n        pass\n", CACHE_TESTS),
    Mutant("cache: conflict markers pass", f"{PACKAGE}/cache/legacy.py",
           "        if line_text.startswith(CONFLICT_MARKERS):", "        if False:", CACHE_TESTS),
    Mutant("cache: conflict markers in a library file pass", f"{PACKAGE}/cache/source.py",
           "        if line_text.startswith(CONFLICT_MARKERS):\n            raise CacheError(\n"
           '                f"{path}: merge conflict markers at line {number}; resolve',
           "        if False:\n            raise CacheError(\n"
           '                f"{path}: merge conflict markers at line {number}; resolve',
           CACHE_TESTS),
    Mutant("cache: duplicate keys pass", f"{PACKAGE}/cache/legacy.py",
           "        if key in result:\n            raise _DuplicateKeyError(key)",
           "        if False:\n            raise _DuplicateKeyError(key)", CACHE_TESTS),
    Mutant("cache: a write forgets the other writers", f"{PACKAGE}/cache/store.py",
           "parse(path, old, validate) if old is not None else Library()",
           "Library()",
           ("tests/unit/test_cache.py", "tests/integration/test_cache_processes.py")),
    Mutant("cache: unchanged files rewritten", f"{PACKAGE}/cache/store.py",
           "            if new == old:\n                return False, library",
           "            if False:\n                return False, library", CACHE_TESTS),
    Mutant("cache: a broken file is overwritten", f"{PACKAGE}/cache/store.py",
           "            if path in self._broken:\n                raise CacheError(\n"
           '                    f"refusing to overwrite',
           "            if False:\n                raise CacheError(\n"
           '                    f"refusing to overwrite', CACHE_TESTS),
    Mutant("cache: paths leave the cache folder", f"{PACKAGE}/cache/library.py",
           '    if ".." in parts:', "    if False:", CACHE_TESTS),
    Mutant("cache: not atomic", f"{PACKAGE}/cache/store.py",
           "            _replace(path, new)", "            path.write_bytes(new)",
           ("tests/faults/test_disk_faults.py", "tests/faults/test_signals.py")),
    Mutant("cache: live entries pruned", f"{PACKAGE}/behave/liveness.py",
           "            if found is not None:", "            if False:", LIBRARY_TESTS),
    Mutant("cache: prune passes over a feature it cannot read", f"{PACKAGE}/behave/liveness.py",
           "        raise UnreadableFeature.parsing(exc, path) from None", "        return []",
           ("tests/unit/test_cli.py",)),
    Mutant("cache: an outline row's placeholders forgotten", f"{PACKAGE}/behave/mapping.py",
           "                return str(written[index].name)", '                return ""',
           LIBRARY_TESTS),
    Mutant("cache: a shared step kept per feature", f"{PACKAGE}/cache/library.py",
           'feature=key.feature if self.pinned or self.verdict or key.api else "",',
           "feature=key.feature,", ("tests/unit/test_cache.py", *LIBRARY_TESTS)),
    Mutant("cache: anything stands at the top of a library file", f"{PACKAGE}/cache/source.py",
           '    if not (isinstance(node, ast.FunctionDef) and node.name == "step"):',
           "    if False:", ("tests/unit/test_cache.py",)),
    Mutant("cache: a keyword given twice passes", f"{PACKAGE}/cache/source.py",
           "        if name in given:", "        if False:", ("tests/unit/test_cache.py",)),
    Mutant("cache: red entries replayed as any other", f"{PACKAGE}/engine/cycle.py",
           "        if cached is not None and cached.red:", "        if False:", LIBRARY_TESTS),
    Mutant("cache: verdicts forgotten", f"{PACKAGE}/engine/keeper.py",
           "            or failure.label not in RED_LABELS", "            or True", LIBRARY_TESTS),
    Mutant("cache: a rename healed once per sentence", f"{PACKAGE}/engine/keeper.py",
           "        changes = locator_changes(old, new)", "        changes = []", LIBRARY_TESTS),
    # -- the step address and the order of lookup (the library's and the export's) ------------
    Mutant("address: a pin of one feature serves a namesake scenario of another",
           f"{PACKAGE}/address.py",
           "return (self.feature, self.scenario, self.occurrence) == (",
           "return (position.feature, self.scenario, self.occurrence) == (",
           ADDRESS_TESTS),
    Mutant("address: a pin serves every scenario", f"{PACKAGE}/address.py",
           "return (self.feature, self.scenario, self.occurrence) == (",
           "return True or (self.feature, self.scenario, self.occurrence) == (", ADDRESS_TESTS),
    Mutant("address: code spelling its values out serves every value", f"{PACKAGE}/address.py",
           "            return self.values == values", "            return True",
           (*ADDRESS_TESTS, *LIBRARY_TESTS)),
    Mutant("address: one occurrence for all", f"{PACKAGE}/address.py",
           "        return self._seen[step]", "        return 1",
           ("tests/unit/test_address.py", "tests/integration/test_generation.py")),
    Mutant("address: a scenario's pin is not preferred", f"{PACKAGE}/address.py",
           "            if pins and scope.pins(position) and scope.fits(values):",
           "            if False:", (*EXPORT_TESTS, *ADDRESS_TESTS)),
    Mutant("address: the entries every feature shares before the feature's own",
           f"{PACKAGE}/address.py", "        for feature in (position.feature, \"\"):",
           "        for feature in (\"\", position.feature):", (*EXPORT_TESTS, *ADDRESS_TESTS)),
    # -- the bounds of step code -----------------------------------------------------------------
    Mutant("bounds: windows routed, not intercepted", f"{PACKAGE}/browser/guard.py",
           "            self.watch(browser, context, page, fresh)",
           "            self.route(context)", BOUNDS_TESTS),
    Mutant("bounds: a fresh page taken for the first blank page", f"{PACKAGE}/browser/guard.py",
           "return found[0] if len(found) == 1 else None", "return found[0] if found else None",
           ("tests/integration/test_security.py",)),
    Mutant("bounds: frames bound like pages", f"{PACKAGE}/browser/guard.py",
           "        if context is None:\n            return None\n"
           "        guard = self.guards.get(context)",
           "        guard = self.guards.get(context) if context else "
           "next(iter(self.guards.values()), None)", BOUNDS_TESTS),
    Mutant("bounds: timeouts unclamped", f"{PACKAGE}/safety/limits.py",
           "        if wanted > remaining:", "        if False:", BOUNDS_TESTS),
    Mutant("bounds: loops unchecked", f"{PACKAGE}/safety/limits.py",
           "            budget.check()\n            yield item", "            yield item",
           BOUNDS_TESTS),
    Mutant("bounds: growth unchecked", f"{PACKAGE}/safety/limits.py",
           "    _size_after(op, left, right)\n", "", BOUNDS_TESTS),
    Mutant("bounds: no memory headroom", f"{PACKAGE}/safety/sandbox.py",
           "    with memory_headroom():", "    if True:", BOUNDS_TESTS),
    Mutant("bounds: regex without timeout", f"{PACKAGE}/safety/regex.py",
           "timeout=self._budget.remaining_ms() / 1000, ", "", BOUNDS_TESTS),
    Mutant("bounds: annotated names unchecked", f"{PACKAGE}/safety/policy.py",
           "            self.target(stmt.target)\n            self.expr(stmt.annotation)",
           "            self.expr(stmt.annotation)", BOUNDS_TESTS),
    Mutant("bounds: typing into any frame", f"{PACKAGE}/safety/proxy.py",
           "        if not outside_frames(page, allowed):\n            if name in POINTER:",
           "        if True:\n            if name in POINTER:", IN_PAGE_TESTS),
    Mutant("bounds: the focus followed into no frame", f"{PACKAGE}/safety/frames.py",
           "        frame = child\n", "        return frame\n", IN_PAGE_TESTS),
    Mutant("bounds: no stop of a wait in the page", f"{PACKAGE}/browser/stop.py",
           "self._handle = loop.call_later(seconds + GRACE_S, self._fire)", "pass",
           IN_PAGE_TESTS),
    Mutant("bounds: downloads saved without the stop", f"{PACKAGE}/engine/execute.py",
           "with stop.saving(download):", "if True:", IN_PAGE_TESTS),
    Mutant("bounds: typing past the key cap", f"{PACKAGE}/safety/proxy.py",
           "len(text) > MAX_TYPED_KEYS", "False", IN_PAGE_TESTS),
    Mutant("secrets: values read from the page unredacted", f"{PACKAGE}/safety/proxy.py",
           "    if isinstance(value, str):\n        return services.redact(value)\n",
           "    if isinstance(value, str):\n        return value\n", IN_PAGE_TESTS),
    Mutant("bounds: a redirect that cannot be checked goes through",
           f"{PACKAGE}/browser/guard.py", 'route.abort("failed")', "route.continue_()",
           BOUNDS_TESTS),
    Mutant("bounds: secret steps read back", f"{PACKAGE}/safety/policy.py",
           "        if self.types_secrets and attr in READ_BACK:", "        if False:",
           BOUNDS_TESTS),
    Mutant("secrets: spellings unredacted", f"{PACKAGE}/safety/secrets.py",
           "(encodings(value), spellings(value), cut_start(value))",
           "(encodings(value), None, cut_start(value))", BOUNDS_TESTS),
    Mutant("secrets: encodings unredacted", f"{PACKAGE}/safety/secrets.py",
           "                for kind in range(3)\n", "                for kind in range(1, 3)\n",
           ("tests/unit/test_secrets.py", *IN_PAGE_TESTS)),
    Mutant("secrets: forged markers pass", f"{PACKAGE}/engine/advisor.py",
           '_neutralised(user["content"], page)', 'user["content"]', BOUNDS_TESTS),
    Mutant("bounds: a clicked window that shows blank first is not waited for",
           f"{PACKAGE}/browser/guard.py", 'if info.get("openerId"):', "if True:",
           ("tests/unit/test_page_targets.py",)),
    Mutant("bounds: a refused window counted while it closes", f"{PACKAGE}/browser/guard.py",
           "if of == context and target not in self._closing", "if of == context",
           ("tests/unit/test_page_targets.py",)),
    Mutant("bounds: a new tab still blank is followed at once", f"{PACKAGE}/browser/tabs.py",
           "blank_s: float = BLANK_GRACE_S", "blank_s: float = 0.0",
           ("tests/integration/test_bounds.py",)),
    Mutant("bounds: only the current tab checked after a step", f"{PACKAGE}/engine/execute.py",
           "next((url for url in urls if not guard.allows(url)), test.page.url)", "test.page.url",
           ("tests/integration/test_bounds.py",)),
    Mutant("bounds: a printed container built before its size is known",
           f"{PACKAGE}/safety/sandbox.py",
           '            node.args = [ast.Call(_helper("printable"), node.args, [])]\n', "",
           ("tests/integration/test_bounds.py",)),
    Mutant("bounds: an earlier block blamed on the next step", f"{PACKAGE}/engine/execute.py",
           "        _earlier_blocks(test, spec, secrets, Reach.ACTS if attempt_no else test.reach)"
           "\n", "",
           ("tests/integration/test_bounds.py",)),
    # -- judgments ------------------------------------------------------------------------------
    Mutant("judgments: no reuse", f"{PACKAGE}/engine/cycle.py",
           "        elif not self.first_kept(self.proven()):", "        elif True:",
           JUDGMENT_TESTS),
    Mutant("judgments: earlier roots ignored", f"{PACKAGE}/engine/cycle.py",
           "        if blames_earlier and verdict.label != StepLabel.PRODUCT_DEFECT:",
           "        if False:", JUDGMENT_TESTS),
    Mutant("judgments: a gate blind to the page", f"{PACKAGE}/engine/advisor.py",
           "page_change(before, after, CHANGE_TOKENS)", "page_change(after, after, CHANGE_TOKENS)",
           JUDGMENT_TESTS),
    Mutant("judgments: a heal's gate without its verdict", f"{PACKAGE}/engine/advisor.py",
           '"verdict": verdict,\n', '"verdict": None,\n', JUDGMENT_TESTS),
    Mutant("judgments: a page judged before it settled", f"{PACKAGE}/engine/page_state.py",
           "        test.settler.settle(test.config.settle_ms)\n        self.hide_cookies(test)\n",
           "        self.hide_cookies(test)\n", JUDGMENT_TESTS),
    Mutant("judgments: a failure classified again", f"{PACKAGE}/engine/cycle.py",
           "        if judged is not None and same_step:", "        if False:",
           ("tests/integration/test_one_verdict.py",)),
    Mutant("memory: a red try's values kept", f"{PACKAGE}/engine/execute.py",
           "        memory.forget()  # what a red try remembered is gone with it\n", "",
           ("tests/unit/test_scenario_memory.py", "tests/integration/test_memory.py")),
    Mutant("memory: a secret remembered", f"{PACKAGE}/safety/scenario_memory.py",
           "        if self._holds_secret(text):", "        if False:",
           ("tests/unit/test_scenario_memory.py", "tests/integration/test_memory.py")),
    Mutant("memory: a placeholder is matched as written only",
           f"{PACKAGE}/safety/scenario_memory.py", '    joined = _NO_LETTER.sub("", plain)',
           "    joined = plain", ("tests/unit/test_scenario_memory.py",)),
    Mutant("memory: a reversed placeholder is remembered", f"{PACKAGE}/safety/scenario_memory.py",
           " or _JOINED.search(joined[::-1]))", ")", ("tests/unit/test_scenario_memory.py",)),
    Mutant("memory: an escaped placeholder is remembered", f"{PACKAGE}/safety/scenario_memory.py",
           "        plain = _ESCAPED.sub(_unescaped, html.unescape(plain))", "        pass",
           ("tests/unit/test_scenario_memory.py",)),
    Mutant("memory: each value is checked alone", f"{PACKAGE}/safety/scenario_memory.py",
           "        if kept and any(", "        if False and any(",
           ("tests/unit/test_scenario_memory.py",)),
    Mutant("judgments: heals not reused", f"{PACKAGE}/engine/cycle.py",
           "if healing and self.first_kept(self.heal_reused(cached)):", "if False:",
           ("tests/integration/test_healing.py",)),
    # -- one entry per meaning -----------------------------------------------------------------
    Mutant("wordings: added to an entry another run changed", f"{PACKAGE}/cache/store.py",
           "            if now is not None and (now.code, now.kind, now.data) == unchanged:",
           "            if now is not None:", ("tests/unit/test_cache.py",)),
    Mutant("wordings: new code through a wording splits it off its entry",
           f"{PACKAGE}/cache/store.py",
           "written.scenario is None and written.sentence in old.wordings:",
           "written.scenario is None and False:", ("tests/unit/test_cache.py", *IN_PROCESS_TESTS)),
    Mutant("wordings: another feature's entry not reused by a wording",
           f"{PACKAGE}/engine/keeper.py",
           "or not other.says(template):", "or other.sentence != template:", IN_PROCESS_TESTS),
    Mutant("wordings: the plan reuses by the sentence only", f"{PACKAGE}/behave/plan.py",
           "or not other.says(str(template)):", "or other.sentence != template:",
           ("tests/integration/test_plan.py",)),
    Mutant("wordings: no closest steps listed", f"{PACKAGE}/engine/cycle.py",
           "listed = self.closest_steps if purpose.lists_closest else []", "listed = []",
           IN_PROCESS_TESTS),
    Mutant("wordings: the closest steps listed whatever their size", f"{PACKAGE}/engine/cycle.py",
           "            if tokens + cost <= CLOSEST_TOKENS:", "            if True:",
           IN_PROCESS_TESTS),
    Mutant("wordings: a listed step whose parameters do not fit is run",
           f"{PACKAGE}/engine/advisor.py",
           "    if listed.takes(values):\n        return listed",
           "    if True:\n        return listed", IN_PROCESS_TESTS),
    Mutant("answers: a SAME AS beside unfenced code drops the code", f"{PACKAGE}/llm/answers.py",
           "        if _DEFINES_STEP.search(answer):",
           "        if any(_read(b.body).step is not None for b in blocks):", ANSWER_TESTS),
    Mutant("answers: SAME AS past the listed steps", f"{PACKAGE}/llm/answers.py",
           "    if not 1 <= number <= listed:", "    if False:", ANSWER_TESTS),
    Mutant("green: no record kept with written code", f"{PACKAGE}/engine/keeper.py",
           "        green = green_record(ran, today(), self.secrets.redact, test.config.base_url)"
           "\n",
           "        green = None\n", GREEN_TESTS),
    Mutant("green: a shown secret kept in the record", f"{PACKAGE}/engine/evidence.py",
           "    text = escape_controls(redact(text))\n", "    text = escape_controls(text)\n",
           GREEN_TESTS),
    Mutant("green: a page text cut before it is redacted", f"{PACKAGE}/engine/evidence.py",
           "    text = escape_controls(redact(text))\n",
           "    text = escape_controls(redact(text[:FIELD_CHARS]))\n",
           ("tests/unit/test_repair.py", CUT_SECRET_TEST)),
    Mutant("green: a repaired name spells a secret's placeholder",
           f"{PACKAGE}/engine/evidence.py",
           "if element.role != first.value or PLACEHOLDER.search(element.name):",
           "if element.role != first.value:", ("tests/unit/test_repair.py", CUT_SECRET_TEST)),
    Mutant("green: a record's reads on the page unbounded", f"{PACKAGE}/browser/stop.py",
           "            timers.append(loop.call_later(seconds, self._terminate, session))\n"
           "            timers.append(loop.call_later(seconds + GRACE_S, self._close))\n",
           "            pass\n", (PLANTED_RECORD_TEST + "[healing]",)),
    Mutant("green: a record's read stopped by closing the page", f"{PACKAGE}/browser/stop.py",
           '        _schedule(session, lambda impl: impl.send("Runtime.terminateExecution", '
           "None, None))",
           "        self._close()", (PLANTED_RECORD_TEST + "[healing]",)),
    Mutant("green: a strict run reads the record", f"{PACKAGE}/engine/cycle.py",
           "if cached.green is None or test.config.strict or test.page.is_closed():",
           "if cached.green is None or test.page.is_closed():",
           (*GREEN_TESTS, PLANTED_RECORD_TEST + "[strict]")),
    Mutant("cache: a green record of any size loads", f"{PACKAGE}/cache/library.py",
           "    if len(green.found) > MAX_FOUND:", "    if False:", CACHE_TESTS),
    Mutant("cache: a green record's texts of any length load", f"{PACKAGE}/cache/library.py",
           "        if len(text) > most:", "        if False:", CACHE_TESTS),
    Mutant("cache: a green record's locator of any length loads", f"{PACKAGE}/cache/library.py",
           "    if len(locator) > LOCATOR_CHARS:", "    if False:", CACHE_TESTS),
    Mutant("cache: a green record's pattern with any flags loads", f"{PACKAGE}/cache/library.py",
           "        if flags & ~PATTERN_FLAGS:", "        if False:", CACHE_TESTS),
    Mutant("snapshot: a text beyond the tree cut before it is redacted",
           f"{PACKAGE}/browser/snapshot.py", "    read = _BEYOND_CHARS + _REDACTION_MARGIN\n",
           "    read = _BEYOND_CHARS\n",
           ("tests/integration/test_snapshot_pages.py::"
            "test_a_secret_past_a_texts_cut_is_redacted_before_the_cut",)),
    Mutant("secrets: a start of a secret before another's ellipsis shown",
           f"{PACKAGE}/safety/secrets.py",
           "made = (encodings(value), spellings(value), cut_start(value))",
           "made = (encodings(value), spellings(value), None)",
           ("tests/unit/test_secrets.py", CUT_SECRET_TEST)),
    Mutant("green: a check's lost locator rewritten without the model",
           f"{PACKAGE}/engine/cycle.py",
           "or self.config.strict or self.spec.meaning is not Meaning.ACTION:",
           "or self.config.strict:", GREEN_TESTS),
    Mutant("green: a group's diagnosis without the record", f"{PACKAGE}/engine/cycle.py",
           "self.run.evidence = self.evidence(cached)  # for the group's",
           "self.run.evidence = None  # for the group's", GREEN_TESTS),
    Mutant("green: a close second candidate tried", f"{PACKAGE}/engine/repair.py",
           "candidates[0].score - candidates[1].score < MARGIN", "False",
           ("tests/unit/test_repair.py",)),
    Mutant("green: a rewrite tried without the gate", f"{PACKAGE}/engine/cycle.py",
           "            before=self.page.get(),\n            verdict=verdict,",
           "            verdict=verdict,", GREEN_TESTS),
    # -- a verdict stays with its step; a heal keeps what it served ---------------------------
    Mutant("green: a rename's locators counted with no bound", f"{PACKAGE}/engine/renames.py",
           "        with stop.armed(within_ms / 1000):\n            shown =",
           "        with stop.armed(within_ms):\n            shown =",
           ("tests/integration/test_green_evidence.py::"
            "test_a_planted_locator_that_backtracks_ends_a_renames_check_within_its_bound",)),
    Mutant("trust: a red pin serves every value", f"{PACKAGE}/cache/library.py",
           "general = not self.verdict and bool(names) and uses_all",
           "general = bool(names) and uses_all", TRUST_TESTS),
    Mutant("trust: another wording of the entry asks again", f"{PACKAGE}/engine/cycle.py",
           "judged.template == template or (entry is not None and judged.entry == entry)",
           "judged.template == template", TRUST_TESTS),
    Mutant("trust: a heal drops the entry's wordings", f"{PACKAGE}/cache/store.py",
           "        if wordings != written.wordings and written.scenario is None:",
           "        if False:", TRUST_TESTS),
    Mutant("trust: the gate is not shown the assertions dropped", f"{PACKAGE}/engine/advisor.py",
           '"dropped_assertions": dropped_assertions(run.code, green.code) if run.code else (),',
           '"dropped_assertions": (),', TRUST_TESTS),
    Mutant("trust: cache diff names no dropped assertion", f"{PACKAGE}/cache_diff.py",
           "        dropped = change.dropped()\n", "        dropped = ()\n", TRUST_TESTS),
    Mutant("trust: an error page is green", f"{PACKAGE}/engine/execute.py",
           "if status is not None and not expects_error_page(spec.sentence):", "if False:",
           OUTCOME_TESTS),
    Mutant("trust: a CANNOT replays as red code", f"{PACKAGE}/engine/cycle.py",
           "        if cached.origin == Origin.CANNOT:", "        if False:", OUTCOME_TESTS),
    # -- reading answers ------------------------------------------------------------------------
    Mutant("answers: reasoning read as the answer", f"{PACKAGE}/llm/answers.py",
           "    final = text.rfind(_FINAL_CHANNEL)\n", "    return text\n", ANSWER_TESTS),
    Mutant("answers: a repair may lose findings", f"{PACKAGE}/llm/verdicts.py",
           "    _gate_verdict,\n    _check_kept_findings,\n", "    _gate_verdict,\n", ANSWER_TESTS),
    Mutant("answers: a truncated object is completed", f"{PACKAGE}/llm/answers.py",
           "    return spans, depth > 0", "    return spans + [text[start:]] * (depth > 0), False",
           ANSWER_TESTS),
    Mutant("answers: two defining blocks, the first taken", f"{PACKAGE}/llm/answers.py",
           "    if len(defining) == 1:", "    if defining:", ANSWER_TESTS),
    Mutant("answers: an unreadable gate answer is not asked again",
           f"{PACKAGE}/engine/advisor.py", "for again in (True, False):", "for again in (False,):",
           ("tests/integration/test_engine_in_process.py",)),
    Mutant("errors: a red step's page goes unsaid", f"{PACKAGE}/browser/tabs.py",
           "            status = self.page.evaluate(_DOCUMENT_STATUS)\n",
           "            status = 0\n",
           ("tests/integration/test_engine_in_process.py",)),
    Mutant("answers: annotated parameters refused", f"{PACKAGE}/llm/answers.py",
           'return without_annotations(reading.code + "\\n")', 'return reading.code + "\\n"',
           ANSWER_TESTS),
    # -- the steering rules ---------------------------------------------------------------------
    Mutant("steering: opens under CI", f"{PACKAGE}/engine/steering.py",
           " and not in_ci()", "", ("tests/integration/test_steering.py",)),
    # -- the browser ----------------------------------------------------------------------------
    Mutant("browser: the caller's browser closed with the run", f"{PACKAGE}/browser/session.py",
           "if self._browser is not None and not self._handed_in:",
           "if self._browser is not None:", ("tests/integration/test_python_api.py",)),
    Mutant("browser: the caller's closed browser launched again", f"{PACKAGE}/browser/session.py",
           "            if self._handed_in:  # not ours to launch again\n",
           "            if False:\n", ("tests/integration/test_python_api.py",)),
    Mutant("browser: the caller's Playwright stopped with the run", f"{PACKAGE}/browser/session.py",
           "if self._playwright is not None and self._owns_playwright:",
           "if self._playwright is not None:", ("tests/integration/test_python_api.py",)),
    Mutant("bounds: a refusal after the test's last step goes unsaid", f"{PACKAGE}/runtime.py",
           'late_blocks(test, self.secrets, "as the test ended", test.reach)', "None",
           BOUNDS_TESTS),
    Mutant("bounds: no catch-up after a replayed step that acted", f"{PACKAGE}/engine/execute.py",
           "Reach.ACTS if attempt_no else test.reach)", "Reach.ACTS if attempt_no else 0)",
           BOUNDS_TESTS),
    Mutant("replay: the browser caught up with after a step that only read the page",
           f"{PACKAGE}/engine/execute.py", "    reaches = step_code(code).reach\n",
           "    reaches = Reach.ACTS\n", BOUNDS_TESTS),
    Mutant("replay: cached code waits for a settle before it runs", f"{PACKAGE}/engine/execute.py",
           "    attempt_no = 0 if at_once else 1\n", "    attempt_no = 1\n",
           ("tests/integration/test_settle.py",)),
    Mutant("replay: a red replay fails without a settle and a second run",
           f"{PACKAGE}/engine/execute.py", "if attempt_no == 0 and waited_out:",
           "if attempt_no == 0:", ("tests/integration/test_settle.py",)),
    Mutant("replay: a red replay that waited out its timeout runs it out again",
           f"{PACKAGE}/engine/execute.py",
           "        waited_out = time.monotonic() - began >= test.config.settle_ms / 1000\n",
           "        waited_out = False\n", ("tests/integration/test_settle.py",)),
    Mutant("settle: a settled test's later pages open without the mutation clock",
           f"{PACKAGE}/browser/settle.py", "            context.add_init_script(_MUTATION_CLOCK)\n",
           "            pass\n", ("tests/integration/test_settle.py",)),
    Mutant("storage: a value read from storage comes in unredacted", f"{PACKAGE}/safety/proxy.py",
           "return None if text is None else self._page._services.redact(text)",
           "return text", APP_NEEDS_TESTS),
    Mutant("storage: the cookies of any origin are read", f"{PACKAGE}/safety/proxy.py",
           "services.origin_allowed is not None and not services.origin_allowed(target)",
           "False", APP_NEEDS_TESTS),
    Mutant("storage: a cookie value read leaves unredacted", f"{PACKAGE}/safety/proxy.py",
           "            value = services.hide(f\"cookie {cookie['name']}\", value)\n",
           "", APP_NEEDS_TESTS),
    Mutant("context: credentials go to any origin", f"{PACKAGE}/browser/session.py",
           'if origin_of(str(entry.get("origin", ""))) not in origins:', "if False:",
           APP_NEEDS_TESTS),
    Mutant("context: a key that widens the bounds passes", f"{PACKAGE}/context_args.py",
           "if key in REFUSED:", "if False:", APP_NEEDS_TESTS),
    Mutant("context: a literal password passes", f"{PACKAGE}/context_args.py",
           "if not (isinstance(password, str) and PLACEHOLDER.match(password)):", "if False:",
           APP_NEEDS_TESTS),
    Mutant("browser: a headless run launches the full browser", f"{PACKAGE}/browser/session.py",
           "(SYSTEM_HEADLESS_SHELLS if headless else ())", "()",
           ("tests/unit/test_browser_choice.py", "tests/integration/test_python_api.py")),
    # -- links: nothing read, written or deleted through one that leaves the project ------------
    Mutant("links: a folder on the way to a file (the library folder, the export's steps/) "
           "is not looked at", f"{PACKAGE}/safety/links.py",
           "    for depth in range(len(parts) + 1):", "    for depth in (0, len(parts)):",
           (*LINK_TESTS, *EXPORT_TESTS)),
    Mutant("links: the cache folder is listed through a link", f"{PACKAGE}/cache/paths.py",
           "    unlinked(cache_dir, folder)\n    if not folder.is_dir():",
           "    if not folder.is_dir():", LINK_TESTS),
    Mutant("links: a folder of the cache that is a link is walked", f"{PACKAGE}/cache/paths.py",
           "        if entry.is_symlink() and path.is_dir():", "        if False:", LINK_TESTS),
    Mutant("links: a library file that is a link is read", f"{PACKAGE}/cache/paths.py",
           'os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NO_FOLLOW',
           'os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)', LINK_TESTS),
    Mutant("links: a hard-linked library file is read", f"{PACKAGE}/cache/paths.py",
           "        if found.st_nlink > 1:", "        if False:", LINK_TESTS),
    Mutant("links: a lock file that is a link is opened", f"{PACKAGE}/cache/store.py",
           "        unlinked(cache_dir, lock_path, file=True)", "        pass", LINK_TESTS),
    Mutant("links: a link out of a folder counts as in it", f"{PACKAGE}/safety/links.py",
           "    return reached != top and top not in reached.parents", "    return False",
           EXPORT_TESTS),
    Mutant("export: a link out of the features folder is copied", f"{PACKAGE}/export.py",
           "        if path.is_symlink() and leaves(root, path):", "        if False:",
           EXPORT_TESTS),
    Mutant("export: a link planted in a kept folder is written through", f"{PACKAGE}/export.py",
           "        if link is not None:\n            what =",
           "        if False:\n            what =", EXPORT_TESTS),
    # -- the export -----------------------------------------------------------------------------
    Mutant("export: a wide pattern is registered before a narrow one", f"{PACKAGE}/export.py",
           "narrowest = next(ready, waiting[0])", "narrowest = waiting[0]", EXPORT_TESTS),
    Mutant("export: a red entry's verdict is written raw into its comment",
           "templates/export/exported_steps.py.j2",
           "variant.entry.verdict.explanation) | comment }}",
           "variant.entry.verdict.explanation) }}", EXPORT_TESTS),
    Mutant("export: a sentence is written raw into its comment",
           "templates/export/exported_steps.py.j2", "{{ definition.template | comment }}",
           "{{ definition.template }}", EXPORT_TESTS),
    Mutant("export: a copied feature keeps its step annotations", f"{PACKAGE}/export.py",
           "annotated.add(step.line - 1)", "pass", EXPORT_TESTS),
    Mutant("export: an upload is named as prettyplay named it", f"{PACKAGE}/export.py",
           '        edits += [(start, start, "upload("), (end, end, ")")]\n', "",
           (*EXPORT_TESTS, "tests/integration/test_export_support.py")),
    Mutant("export: lines end where str.splitlines ends them", f"{PACKAGE}/export.py",
           "for found in LINE_BREAK.finditer(text)",
           r'for found in re.finditer(r"\r\n|[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", text)',
           EXPORT_TESTS),
    Mutant("export: the def of step is looked for on the code's first line",
           f"{PACKAGE}/export.py", 'token.string == "def" and token.start[0] == function.lineno',
           'token.string == "def" and token.start[0] == 1', EXPORT_TESTS),
    Mutant("export: a function that is not its cached code is written",
           f"{PACKAGE}/export.py",
           "variant.refused = unfaithful(variant.text, variant.entry.code, variant.function)",
           'variant.refused = ""', EXPORT_TESTS),
    Mutant("export: the check of a function compares no bytes", f"{PACKAGE}/export.py",
           "    if _edited(text, edits) != code:", "    if False:", EXPORT_TESTS),
    Mutant("cache: values that are not one a mark load", f"{PACKAGE}/cache/schema.py",
           "if entry.values is not None and len(entry.values) != marks:", "if False:",
           (*CACHE_TESTS, *EXPORT_TESTS)),
    Mutant("cache: a wording of other marks loads", f"{PACKAGE}/cache/schema.py",
           "        if wording.count(MARK) != marks:", "        if False:", CACHE_TESTS),
    Mutant("export: a tab the step opens is not followed", "templates/export/step_support.py",
           "    if opened:\n        context.page = opened[-1]", "    if False:\n        pass",
           ("tests/integration/test_export_support.py",)),
)  # fmt: skip


def run(mutant: Mutant) -> tuple[bool, float]:
    """Apply ``mutant``, run its tests, restore the file; (killed, seconds)."""
    path = ROOT / mutant.file
    if (found := mutant.places()) != 1:
        raise SystemExit(f"mutant {mutant.name!r}: its text is found {found} times in {path}")
    original = path.read_text(encoding="utf-8")
    started = time.monotonic()
    try:
        path.write_text(original.replace(mutant.before, mutant.after), encoding="utf-8")
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
             *mutant.tests],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
    finally:
        path.write_text(original, encoding="utf-8")
    return tests.returncode != 0, time.monotonic() - started


def main(argv: list[str]) -> int:
    chosen = [m for m in MUTANTS if not argv or any(a in m.name for a in argv)]
    dirty = subprocess.run(
        ["git", "status", "--porcelain", *sorted({m.file for m in chosen})],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    if dirty:
        raise SystemExit(f"commit or stash these files first, a mutant edits them:\n{dirty}")
    stale = [
        f"{m.name!r}: found {found} times in {m.file}" for m in chosen if (found := m.places()) != 1
    ]
    if stale:  # all of them at once, before any runs
        raise SystemExit("mutants that no longer match the code:\n  " + "\n  ".join(stale))
    survivors = []
    for mutant in chosen:
        killed, seconds = run(mutant)
        print(f"{'killed  ' if killed else 'SURVIVED'} {seconds:5.1f} s  {mutant.name}", flush=True)
        if not killed:
            survivors.append(mutant.name)
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed")
    for name in survivors:
        print(f"  survived: {name}")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
