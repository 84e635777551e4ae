"""The one way step code runs: policy, settle, run on the live page, one attempt record.

Cached code replays at once, as a hand-written suite runs: Playwright's locators wait for what
they act on and ``expect`` retries. Only an execution that goes red is followed by the settle
and the step's ``tries``. Code about to be judged (a candidate, a steering turn) runs on a
settled page, as its request's snapshot saw it.

Whatever the code does, the outcome is a record: ``green``, ``red`` (the error text, a bound
that was hit, a page that never settled) or ``policy violation``. Every text is redacted of
secret values and cut to ``MAX_TEXT`` characters (its head and tail) before it leaves here, so
every output and request that carries it gets the cut text.
"""

from __future__ import annotations

import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from ..browser.guard import BLANK
from ..browser.stop import ExecutionStop
from ..config import origin_of
from ..errors import CodePolicyError, StepCodeError, StepTimeoutError, describe_exception
from ..log_events import LogEvent, record
from ..meaning import expects_error_page
from ..safety.frames import origin_url
from ..safety.limits import MAX_TEXT, MEMORY_HEADROOM, Budget, cut_text
from ..safety.policy import Reach
from ..safety.proxy import PageServices
from ..safety.sandbox import call_step, compile_step, step_frames
from ..safety.secrets import Secrets, secret_names
from ..safety.step_code import step_code
from ..vocabulary import Meaning, Outcome
from .history import Attempt

if TYPE_CHECKING:
    from playwright.sync_api import Download, Page

    from ..safety.sandbox import StepFunction
    from ..safety.scenario_memory import Execution
    from .evidence import Sightings
    from .state import TestState
    from .step import StepSpec


MEMORY_PASSED = (
    f"MemoryError: the step code asked for more memory than a step may take "
    f"({MEMORY_HEADROOM >> 20} MiB more than the run held) and was stopped there"
)


def page_url(page: Page) -> str:
    return "(closed)" if page.is_closed() else page.url


def execute(
    test: TestState,
    spec: StepSpec,
    code: str,
    secrets: Secrets,
    at_once: bool = False,
    sightings: Sightings | None = None,
) -> Attempt:
    """Check, settle, run and re-run while ``spec.tries`` last; one record of the outcome.

    ``at_once`` (a replay) runs the code before any settle; a red execution then settles and
    runs the ``tries`` as ever, so only a step that went red waits for the page. A red
    execution at once that waited as long as a settle would (``settle_ms``: an ``expect`` that
    timed out) counts as the first try, for the page had that time to change. A navigation
    outside the test's bounds makes the outcome red. ``sightings`` watches the locators the
    code acts on (a run whose code will be kept): a green record carries what they found.
    """
    started_on, url_before = test.page, page_url(test.page)
    try:
        function, budget, memory = _compile(test, spec, code, secrets)
    except CodePolicyError as exc:
        text = outcome_text(f"CodePolicyError: {exc}", secrets)
        return Attempt(Outcome.POLICY_VIOLATION, url_before, url_before, secrets.redact(code), text)
    reaches = step_code(code).reach
    attempt_no = 0 if at_once else 1
    while True:
        # the settle lets late events arrive too; execution 0 is the replay's, before any wait
        settled = attempt_no == 0 or test.settler.settle(test.config.settle_ms)
        _earlier_blocks(test, spec, secrets, Reach.ACTS if attempt_no else test.reach)
        error: Exception | None = None
        stop = ExecutionStop(lambda: test.tabs.open_pages, _stop_reason(budget))
        began = time.monotonic()
        memory.forget()  # what a red try remembered is gone with it
        answered: dict[str, int] = {}  # each goto's document: its URL and status
        if sightings is not None:
            sightings.forget()
        try:
            with stop.armed(budget.limit_ms / 1000):
                call_step(
                    function,
                    test.page,
                    _services(test, stop, secrets, sightings, answered),
                    values=spec.parameters.values,
                )
        except Exception as exc:  # a red outcome, whatever raised it
            error = exc
        waited_out = time.monotonic() - began >= test.config.settle_ms / 1000
        if stop.fired:
            error = _stopped(budget, stop)
            stop.wait_closed()
            test.tabs.ensure_open()  # the test goes on, on a fresh page of its context
        follow_tabs(test)  # a page the step opened is the page of what comes next
        bound = _bound_hit(test)  # once a window the step opened asked for its document
        notes = test.tabs.take_notes()
        if error is None and bound is None:
            url_after = page_url(test.page)
            status = error_document(test, url_before, url_after, answered)
            if status is not None and not expects_error_page(spec.sentence):
                before = (started_on, url_before)
                return _red(test, spec, code, before, None, None, True, secrets, notes, reaches)
            memory.commit()
            if status is not None:  # an error page its sentence expects: the gate reads so
                notes = (*notes, f"the page's document was answered HTTP {status}: {url_after}")
            text = outcome_text("\n".join(notes), secrets)
            found = sightings.found if sightings is not None else ()
            return Attempt(
                Outcome.GREEN, url_before, url_after, code, text, False, notes, reaches, found=found
            )
        done = f"execution {attempt_no} of {spec.tries}" if attempt_no else "the replay"
        if attempt_no == 0 and waited_out:
            attempt_no = 1  # it waited as long as a settle would have: it was the first try
        if attempt_no < spec.tries and bound is None and not stop.fired:
            record(
                LogEvent.STEP_RETRY,
                "%s went red: the page settles, the step runs again",
                done,
            )
            attempt_no += 1
            continue
        before = (started_on, url_before)
        return _red(test, spec, code, before, error, bound, settled, secrets, notes, reaches)


# What the redactor reads beyond each cut: a secret's spelling that the cut splits is whole there.
_REDACTION_MARGIN = 10_000


def outcome_text(text: str, secrets: Secrets) -> str:
    """``text`` redacted and cut to ``MAX_TEXT`` characters: the one place an execution's text
    is made final (the redactor reads only what is kept, never megabytes)."""
    return cut_text(text, MAX_TEXT, clean=secrets.redact, margin=_REDACTION_MARGIN)


def _compile(
    test: TestState, spec: StepSpec, code: str, secrets: Secrets
) -> tuple[StepFunction, Budget, Execution]:
    leaked = secrets.found_in(code)
    if leaked:
        raise CodePolicyError(f"the code holds the literal value of secret {leaked}")
    guard, page = test.guard, test.page
    # a window without a URL of its own has the origin of the frame that opened it
    resolver = secrets.resolver(
        secret_names(spec.text),
        lambda: guard is None or guard.allows(origin_url(page.main_frame)),
    )
    budget = Budget(test.config.step_timeout_ms, test.config.action_timeout_ms)
    memory = test.memory.execution(spec.sentence, lambda text: secrets.redact(text) != text)
    function = compile_step(code, secret=resolver, budget=budget, memory=memory)
    wanted, values = len(step_code(code).parameters), spec.parameters.values
    if wanted and wanted != len(values):
        names = ", ".join(spec.parameters.names) or "none"
        raise CodePolicyError(
            f"step() takes {wanted} parameters after page, but the step's parameters are "
            f"{len(values)} ({names})"
        )
    return function, budget, memory


def _stop_reason(budget: Budget) -> str:
    return (
        f"the step code was still waiting in the browser past step_timeout_ms={budget.limit_ms}"
        " (a pattern matched in the page, a download, a long typing); the test's pages were "
        "closed to stop it"
    )


def _stopped(budget: Budget, stop: ExecutionStop) -> StepTimeoutError:
    """The error of an execution the stop ended: the bound, and what it was waiting on."""
    if stop.unfinished:
        names = ", ".join(repr(name) for name in stop.unfinished)
        return StepTimeoutError(
            f"the download {names} did not finish within step_timeout_ms={budget.limit_ms} and "
            "was cancelled; the test's pages were closed to stop the step"
        )
    return StepTimeoutError(
        f"{budget.error()}; it was still waiting in the browser (a pattern matched in the page, "
        "a long typing), so the test's pages were closed and it goes on in a fresh page"
    )


def error_document(
    test: TestState, url_before: str, url_after: str, answered: dict[str, int]
) -> int | None:
    """The HTTP error status of the document a green execution ended on, when it navigated
    (a step that stays on its page stays on a document already judged): an app that answers
    404 or 500 is no green step. A document a ``goto`` reached was answered as ``answered``
    says; another (a link followed) is asked of the page."""
    if url_after == url_before or test.page.is_closed():
        return None
    if url_after in answered:
        status = answered[url_after]
        return status if status >= 400 else None
    return test.tabs.error_status


def follow_tabs(test: TestState) -> None:
    """Make a page opened since the last step the current one (as a browser focuses it)."""
    guard = test.guard
    test.tabs.follow(expected=guard.pages if guard is not None else lambda: None)


def _services(
    test: TestState,
    stop: ExecutionStop,
    secrets: Secrets,
    sightings: Sightings | None,
    answered: dict[str, int],
) -> PageServices:
    """What the page proxy of a step of ``test`` may do beyond Playwright's Page: what it reads
    comes in redacted, what it types goes only to frames of the test's origins."""

    def downloaded(download: Download) -> None:
        if test.downloads is not None:
            test.downloads.mkdir(parents=True, exist_ok=True)
            with stop.saving(download):  # a save has no timeout: the stop bounds it
                download.save_as(test.downloads / Path(download.suggested_filename).name)

    return PageServices(
        listen=test.tabs.listen,
        switch_tab=test.tabs.switch_to,
        files_dir=test.files_dir,
        downloaded=downloaded,
        redact=secrets.redact,
        origin_allowed=test.guard.allows if test.guard is not None else None,
        home=origin_of(test.config.base_url) if test.config.base_url else None,
        hide=secrets.hide if test.config.redact_cookies else None,
        expect_timeout_ms=test.config.expect_timeout_ms,
        observe=sightings.see if sightings is not None else None,
        answered=answered.__setitem__,
    )


def _earlier_blocks(test: TestState, spec: StepSpec, secrets: Secrets, earlier: Reach) -> None:
    """Blocks judged since the last step ended belong to what ran before this step (a window
    the browser reported late, a page's own timer): logged, never this step's failure.
    ``earlier``: how far what ran before may still be on its way (see ``late_blocks``)."""
    if late_blocks(test, secrets, f"before {spec.text!r} ran", earlier):
        follow_tabs(test)  # a refused window is closed: the page it took the focus from is back


def late_blocks(test: TestState, secrets: Secrets, when: str, earlier: Reach) -> list[str]:
    """Log the navigations refused since the last step's own check (each a warning that says
    ``when`` it was found); the URLs. What ran ``earlier`` may still be on its way, and is
    waited for first: after code that acted in the page (a form sent to a new window), one
    round trip through the page, then one through the browser; after a navigation Playwright
    waited out, the browser's alone; after reads, none."""
    if test.guard is None:
        return []
    if earlier is Reach.ACTS:
        with suppress(PlaywrightError):  # what the page set off first reaches the browser
            test.page.evaluate("0")
    late = test.guard.take(catch_up=earlier >= Reach.NAVIGATES)
    for url in late:
        record(
            LogEvent.LATE_BLOCK,
            "%s, a navigation set off earlier was blocked: %s (outside allowed_origins)",
            when,
            secrets.redact(url),
        )
    return late


def _bound_hit(test: TestState) -> str | None:
    """The message of a navigation bound the execution hit, if any: a refused request, or a tab
    of the test outside the bounds (Playwright's routing misses later redirect hops), whichever
    tab the step left current."""
    guard = test.guard
    if guard is None or test.page.is_closed():
        return None
    urls = [page.url for page in test.tabs.open_pages]
    outside = next((url for url in urls if not guard.allows(url)), test.page.url)
    return guard.problem(guard.take(), outside)


def _take_back(test: TestState, started_on: Page, url_before: str) -> str | None:
    """Bring every tab of the test that is outside the bounds back (the one the step started
    on to where it was); the URL the first of them is on then, or None when none had left."""
    assert test.guard is not None
    restored = [
        test.guard.restore(page, url_before if page is started_on else BLANK)
        for page in test.tabs.open_pages
    ]
    return next((url for url in restored if url), None)


def _red(
    test: TestState,
    spec: StepSpec,
    code: str,
    before: tuple[Page, str],
    error: Exception | None,
    bound: str | None,
    settled: bool,
    secrets: Secrets,
    notes: tuple[str, ...],
    reaches: Reach,
) -> Attempt:
    started_on, url_before = before
    texts = [bound] if bound else []
    restored = _take_back(test, started_on, url_before) if bound and test.guard else None
    if restored:
        texts.append(f"(the page was taken back to {restored})")
    if isinstance(error, MemoryError):
        texts.append(MEMORY_PASSED)
    elif error is not None:
        texts.append(describe_exception(error)[1])
    if not settled:
        texts.append(f"(the page never settled within settle_ms={test.config.settle_ms})")
    texts += notes
    url_after = page_url(test.page)
    status = test.tabs.error_status if not test.page.is_closed() else None
    if status is not None:  # an app that answers 501 is no locator that timed out
        texts.append(f"the page's document was answered HTTP {status}: {url_after}")
        if error is None and bound is None:
            texts.append(
                "(the step's code raised nothing, but a step that ends on an HTTP error page is "
                "not green unless its sentence expects an error page)"
            )
    # a failed assertion of a check or a precondition: the product may be at fault
    asserts = spec.meaning is not Meaning.ACTION
    failed_check = asserts and isinstance(error, AssertionError) and not bound
    text = outcome_text("\n".join(texts), secrets)
    page = secrets.redact(url_after + (f" (HTTP {status})" if status is not None else ""))
    raised = None
    if error is not None and not bound:
        raised = StepCodeError(text).with_traceback(step_frames(error.__traceback__))
    return Attempt(
        Outcome.RED,
        url_before,
        url_after,
        code,
        text,
        failed_check,
        notes,
        reaches,
        page=page,
        error=raised,
    )
