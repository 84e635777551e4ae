"""What a prettyplay step carries into Allure (allure-behave) as attachments, and the LLM cost of
a test as an Allure parameter; a failing step's picture taken in memory when no ``report_dir``
keeps one (behave's own attachments take it too).

allure-behave is optional. Nothing here imports it at module level, and nothing reaches Allure
unless its formatter takes part in the run (``-f allure_behave.formatter:AllureFormatter -o
DIR``). Every text passes the run's secret redaction and has its control characters escaped, as
the HTML report's do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import escape_controls
from ..log_events import LogEvent, record
from ..vocabulary import counted
from .artifacts import lost, pictures_allowed
from .diffs import change_of

if TYPE_CHECKING:
    from ..engine.state import TestState
    from ..engine.step import StepRun

Redact = Callable[[str], str]
COST_PARAMETER = "LLM cost"


def allure_listening() -> Any | None:
    """The ``allure`` module when allure-behave's formatter takes attachments in this run."""
    if "allure_commons" not in sys.modules:
        return None  # the formatter imports it: not imported, not part of this run (~50 ms)
    try:
        import allure
        from allure_commons import plugin_manager
    except ImportError:
        return None
    if not plugin_manager.hook.attach_data.get_hookimpls():
        return None  # installed, but its formatter is not part of this run
    return allure


def step_texts(test: TestState, run: StepRun, redact: Redact) -> list[tuple[str, str]]:
    """The text attachments of one step: its code, how it ran, its code diff when the run
    rewrote it, its attempt history and its verdicts; each redacted."""
    texts = [("how it ran", how_it_ran(run))]
    if run.code:
        texts.append(("code", run.code))
    change = change_of(test, run, redact)
    if change is not None:
        texts.append(("code diff", "\n".join(line.text for line in change.lines) + "\n"))
    if run.history:
        texts.append(("attempt history", history(run)))
    if run.verdicts:
        texts.append(("verdicts", verdicts(run)))
    return [(name, escape_controls(redact(text))) for name, text in texts]


def how_it_ran(run: StepRun) -> str:
    lines = [
        f"{run.kind}: {run.sentence}",
        f"origin: {run.origin or 'none (no code ran)'}",
        f"outcome: {run.outcome}" + (f" ({run.failure})" if run.failure else ""),
    ]
    if run.group:
        lines.append(f"group: {run.group}")
    if run.guidance:
        lines.append(f"guidance: {run.guidance}")
    lines.append(f"LLM: {counted(run.requests, 'request')}, {counted(run.tokens, 'token')}")
    return "\n".join(lines) + "\n"


def history(run: StepRun) -> str:
    records = [f"attempt {number}\n{a.render()}" for number, a in enumerate(run.history)]
    return "\n---\n".join(records) + "\n"


def verdicts(run: StepRun) -> str:
    texts = []
    for verdict in run.verdicts:
        root = f"\nroot step: {verdict.root_step}" if verdict.root_step else ""
        texts.append(
            f"verdict: {verdict.label}{root}\nexplanation: {verdict.explanation}\n"
            f"recommendation: {verdict.recommendation}"
        )
    return "\n---\n".join(texts) + "\n"


def test_cost(test: TestState) -> str:
    """What the LLM cost a test: its requests and tokens (a group's diagnosis is booked on the
    step that failed, so every request of the test is counted once). The one place the Allure
    parameter's value is made: a cost in money joins it here."""
    requests = sum(run.requests for run in test.scenario)
    tokens = sum(run.tokens for run in test.scenario)
    return f"{counted(requests, 'request')}, {counted(tokens, 'token')}"


def attach_steps(
    allure: Any, test: TestState, runs: Sequence[tuple[StepRun, bool]], redact: Redact
) -> None:
    """Attach to the Allure step that is running the texts of its own run (``True``) and of
    earlier runs it rewrote (``False``, e.g. the row of a group recovery), those named after
    their sentence."""
    for run, own in runs:
        prefix = "" if own else f"{escape_controls(redact(run.sentence))}: "
        for name, text in step_texts(test, run, redact):
            _safely(
                allure.attach, text, name=prefix + name, attachment_type=allure.attachment_type.TEXT
            )


def failure_picture(test: TestState) -> bytes | None:
    """A picture of a failing test's page, in memory (no ``report_dir`` to keep it in), for the
    formatters that take attachments; None where pictures are not allowed or the page is gone."""
    if not pictures_allowed(test) or test.page.is_closed():
        return None
    try:
        return test.page.screenshot(full_page=True)
    except Exception as exc:  # a crashed page has no picture to give
        lost("the screenshot", test, exc)
        return None


def attach_picture(allure: Any, picture: bytes) -> None:
    """A failing step's screenshot taken in memory (without ``report_dir``)."""
    _safely(allure.attach, picture, name="failure", attachment_type=allure.attachment_type.PNG)


def attach_artifacts(allure: Any, screenshot: Path | None, trace: Path | None) -> None:
    """A failing step's screenshot and Playwright trace (or a trace kept at the test's end)."""
    if screenshot is not None:
        _safely(
            allure.attach.file,
            str(screenshot),
            name="failure",
            attachment_type=allure.attachment_type.PNG,
        )
    if trace is not None:
        _safely(
            allure.attach.file, str(trace), name="trace (playwright show-trace)", extension="zip"
        )


def add_cost(allure: Any, test: TestState) -> None:
    """The test's LLM cost as an Allure parameter, kept out of the test's history id."""
    _safely(_parameters_reach_results)
    _safely(allure.dynamic.parameter, COST_PARAMETER, test_cost(test), excluded=True)


def _safely(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """An attachment that fails is logged; it never fails the step or the run."""
    try:
        call(*args, **kwargs)
    except Exception as exc:
        record(LogEvent.ATTACHMENT_FAILED, "an Allure attachment failed: %s", exc)


def _parameters_reach_results() -> None:
    """allure-behave (2.x) implements no ``add_parameter`` hook, so ``allure.dynamic.parameter``
    reaches no result file. Unless it does, a bridge registered once adds the parameter to the
    test allure-behave is reporting."""
    import allure_commons
    from allure_commons.model2 import Parameter

    manager = allure_commons.plugin_manager
    if manager.hook.add_parameter.get_hookimpls():
        return

    class ParameterBridge:
        @allure_commons.hookimpl
        def add_parameter(self, name: str, value: Any, excluded: Any, mode: Any) -> None:
            for plugin in manager.get_plugins():
                if type(plugin).__name__ != "AllureListener":
                    continue
                result = plugin.logger.get_test(None)
                if result is None:
                    continue
                result.parameters = [p for p in result.parameters or [] if p.name != name]
                result.parameters.append(
                    Parameter(
                        name=name,
                        value=str(value),
                        excluded=excluded or None,
                        mode=getattr(mode, "value", mode),
                    )
                )

    manager.register(ParameterBridge(), name="prettyplay-allure-parameters")
