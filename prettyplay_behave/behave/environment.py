"""What ``features/environment.py`` gets: behave's hooks, for one browser per run and one test
(context and page) per scenario.

``use_prettyplay(globals())`` at the end of ``features/environment.py`` installs them around
the user's own hooks, nested like brackets: the user's ``before_all`` runs first (so it can set
settings and start servers) and its ``after_all`` last (so the browser is closed before the
servers stop); prettyplay's ``before_scenario`` runs before the user's (so ``context.page`` is
ready) and its ``after_scenario`` after the user's (so the page is still open there).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..address import feature_path, scenario_test
from ..cache import CACHE_FOLDER
from ..config import PrettyConfig, in_ci, resolve_config, shown
from ..context_args import problem as context_args_problem
from ..errors import CacheError, ConfigError, PrettyPlayError
from ..log_events import LogEvent, record
from ..report import attachments
from . import liveness
from .app import check_app
from .lines import keep_log_lines_whole
from .mapping import outline_of, step_spec

if TYPE_CHECKING:
    from ..authoring import Group, PrettyPlay
    from ..config import TestConfig
    from ..engine.state import TestState
    from ..engine.steering import Steering
    from ..engine.step import StepRun
    from ..llm.provider import Provider
    from ..runtime import Runtime

Hook = Callable[..., None]


@dataclass
class ScenarioState:
    """What the generic step needs to know while a scenario runs."""

    test: PrettyPlay
    group: Group | None
    current_step: Any = None
    ours: Any = None  # the last step prettyplay ran (any other is a user's own)
    # what the attachments of earlier steps showed of each step's run: (code, origin)
    attached: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    test_state: TestState | None = None  # the test's state, once a step has run
    trace_attached: bool = False

    def unattached(self) -> list[tuple[StepRun, bool]]:
        """The run of the step that just ran (True) and the earlier runs it rewrote
        (False: a group's recovery heals earlier steps of its row)."""
        seen = len(self.attached)
        fresh = []
        for index, run in enumerate(self.test.state.scenario):
            shown = (run.code, run.origin)
            if self.attached.get(index) != shown:
                fresh.append((run, index >= seen))
                self.attached[index] = shown
        return fresh


def add_hooks(context: Any, *hooks: object) -> None:
    """Register prettyplay hook objects from environment.py, before or after the run starts."""
    runtime: Runtime | None = getattr(context, "prettyplay", None)
    if runtime is not None:
        for hook in hooks:
            runtime.events.add(hook)
    else:
        pending = list(getattr(context, "prettyplay_hooks", []))
        context.prettyplay_hooks = [*pending, *hooks]


def run_config(context: Any) -> PrettyConfig:
    """The run's settings from behave's userdata (-D and the config file) and the environment."""
    userdata = dict(context.config.userdata)
    defines = dict(context.config.userdata_defines or [])
    file_values = {key: value for key, value in userdata.items() if key not in defines}
    config = resolve_config(file_values=file_values, environ=os.environ, defines=defines)
    if config.interactive and in_ci():
        record(LogEvent.INTERACTIVE_OFF, "CI is set: interactive steering is off")
        config = config.replace(interactive=False)
    return config


def check_scenario_tags(context: Any, config: PrettyConfig) -> None:
    """Every scenario's tag settings, checked before anything runs: a bad value or a run-wide
    key fails the run at start, naming the tag and the scenario."""
    runner = getattr(context, "_runner", None)
    if runner is None or not hasattr(runner, "features"):
        raise PrettyPlayError(
            "behave's runner is not where prettyplay looks for it (context._runner.features), "
            "so the scenarios' tags cannot be checked before the run; this behave version is "
            "not one prettyplay supports (behave 1.3)"
        )
    for feature in runner.features:
        for scenario in feature.walk_scenarios():
            config.for_test(scenario.effective_tags, scenario.name)


def before_all(
    context: Any, steering: Steering | None = None, provider: Provider | None = None
) -> None:
    # imported here, not at the top: a dry run never loads the engine and Playwright
    from ..runtime import Runtime

    context.config.setup_logging()
    keep_log_lines_whole(context)  # where log lines and a formatter share a terminal or a file
    # the HTTP client logs every request at INFO; prettyplay logs its own, with the purpose
    for name in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    config = run_config(context)
    check_scenario_tags(context, config)
    check_app(context, config)  # before a browser starts or a request is sent
    features_dir = Path(context.config.base_dir or "features")
    runtime = Runtime(
        config,
        default_cache_dir=features_dir / CACHE_FOLDER,
        default_files_dir=features_dir / "files",
        steering=steering,
        provider=provider,
    )
    for hook in getattr(context, "prettyplay_hooks", []):
        runtime.events.add(hook)
    context.prettyplay = runtime
    if not config.full_tracebacks:
        errors_shown_short(context)


def errors_shown_short(context: Any) -> None:
    """A prettyplay error is printed as a failure is: its message, and the step code's own lines
    where it raised; behave prints the whole traceback of any error that is not an assertion,
    its own frames and prettyplay's included. Each formatter (and the JUnit reporter after
    them, which reads the same step) gets the short text."""
    from ..engine.step import shown_text

    for formatter in getattr(getattr(context, "_runner", None), "formatters", []):

        def result(step: Any, shown: Callable[[Any], None] = formatter.result) -> None:
            error = getattr(step, "exception", None)
            if step.status.name == "error" and isinstance(error, PrettyPlayError):
                step.error_message = shown_text(error)
            shown(step)

        formatter.result = result


CONTEXT_ARGS_HOOK = "prettyplay_context_args"


def scenario_context_args(
    context: Any, scenario: Any, config: TestConfig, environment: Mapping[str, Any]
) -> TestConfig:
    """``config`` with the context options environment.py's ``prettyplay_context_args(context,
    scenario, args) -> dict`` returns for the scenario (as pytest-playwright's
    ``browser_context_args``); a bad table is a ConfigError naming the hook."""
    hook = environment.get(CONTEXT_ARGS_HOOK)
    if hook is None:
        return config
    source = f"{CONTEXT_ARGS_HOOK}() in environment.py, for scenario {scenario.name!r}"
    args = hook(context, scenario, dict(config.context_args))
    problem = context_args_problem(args)
    if problem:
        raise ConfigError("context_args", shown("context_args", args), source, problem)
    sources = {**config.sources, "context_args": source}
    return dataclasses.replace(config, context_args=dict(args), sources=sources)


def before_scenario(
    context: Any, scenario: Any, environment: Mapping[str, Any] | None = None
) -> None:
    from ..authoring import PrettyPlay

    runtime: Runtime = context.prettyplay
    context.prettyplay_scenario = None  # until this scenario's state stands
    tags = list(scenario.effective_tags)
    if "interactive" in tags and in_ci():
        record(LogEvent.INTERACTIVE_OFF, "CI is set: @interactive is ignored")
    name = test_name(context, scenario)
    config = runtime.config.for_test(tags, scenario.name)
    config = scenario_context_args(context, scenario, config, environment or {})
    test = PrettyPlay(name, config, runtime=runtime)
    group = None
    if "group" in tags:  # the scenario's own steps run as one group, named by the scenario
        group = test.group(scenario.name, speed=config.group_speed, delay=config.group_delay)
        group.start()
    context.prettyplay_scenario = ScenarioState(test, group)
    context.page = test.page


def before_step(context: Any, step: Any) -> None:
    state: ScenarioState | None = getattr(context, "prettyplay_scenario", None)
    if state is not None:
        state.current_step = step


def interrupted(context: Any) -> bool:
    """Whether the run was interrupted (Ctrl+C): a step it cut short is no failure of the page,
    and its page, closing, has no picture to give."""
    return bool(getattr(getattr(context, "_runner", None), "aborted", False))


def quiet_what_was_cut_short() -> None:
    """What Playwright was waiting on when Ctrl+C came ends unread, and is not said."""
    if not any(isinstance(f, _CutShort) for f in _ASYNCIO.filters):
        _ASYNCIO.addFilter(_CutShort())


_ASYNCIO = logging.getLogger("asyncio")


class _CutShort(logging.Filter):
    """After an interrupt: the calls Ctrl+C cut short end with errors nobody reads, which
    asyncio would print as it collects them ("Future exception was never retrieved")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "exception was never retrieved" not in record.getMessage()


def after_step(context: Any, step: Any) -> None:
    """Attachments, while the step is still open in the formatters: with allure-behave, each
    prettyplay step's code, how it ran, history and verdicts; a failing step's screenshot (to
    behave's own attachments and Allure, with or without report_dir) and Playwright trace
    (Allure, with report_dir)."""
    state: ScenarioState | None = getattr(context, "prettyplay_scenario", None)
    runtime: Runtime | None = getattr(context, "prettyplay", None)
    if state is None or runtime is None:
        return
    allure = attachments.allure_listening()
    test = state.test_state = state.test.state
    if state.ours is not step:
        state.test.used_elsewhere()
    if allure is not None:
        attachments.attach_steps(allure, test, state.unattached(), runtime.secrets.redact)
    if not step.status.has_failed():
        return
    if interrupted(context):
        quiet_what_was_cut_short()
        return
    runtime.step_failed(test)
    if runtime.artifacts is None:  # no report_dir: the picture goes to the formatters alone
        picture = attachments.failure_picture(test)
        if picture is not None:
            context.attach("image/png", picture)
            if allure is not None:
                attachments.attach_picture(allure, picture)
        return
    kept = runtime.artifacts.of(test)  # the screenshot, and the trace up to the failure
    if kept.screenshot is not None:
        context.attach("image/png", kept.screenshot.read_bytes())
    if allure is not None:
        attachments.attach_artifacts(allure, kept.screenshot, kept.trace_file)
        state.trace_attached = kept.trace_file is not None


def after_scenario(context: Any, scenario: Any) -> None:
    state: ScenarioState | None = getattr(context, "prettyplay_scenario", None)
    runtime: Runtime | None = getattr(context, "prettyplay", None)
    failed = scenario.status.has_failed()
    if state is None:
        return
    try:
        if state.group is not None:
            state.group.finish(failed)
    finally:
        state.test.close(failed=failed)  # a user's own step may have failed it
        allure = attachments.allure_listening()
        if allure is not None and state.test_state is not None:
            attachments.add_cost(allure, state.test_state)
            if not state.trace_attached:  # kept at the end (trace=on, a failing hook)
                artifacts = runtime.artifacts if runtime is not None else None
                trace = artifacts.of(state.test_state).trace_file if artifacts is not None else None
                attachments.attach_artifacts(allure, None, trace)


def test_name(context: Any, scenario: Any) -> str:
    base_dir = context.config.base_dir or "features"
    return scenario_test(feature_path(scenario.filename, base_dir), scenario.name)


def after_all(context: Any) -> None:
    runtime: Runtime | None = getattr(context, "prettyplay", None)
    if interrupted(context):
        quiet_what_was_cut_short()
    if runtime is None:
        return
    summary = None
    try:
        obsolete = None
        features = Path(context.config.base_dir or "features")
        try:  # from the feature files themselves, whatever part of them ran
            obsolete = len(liveness.obsolete(runtime.cache, features))
        except (CacheError, liveness.UnreadableFeature) as exc:  # a file outside the run, say
            record(LogEvent.OBSOLETE_UNKNOWN, "obsolete entries unknown: %s", exc)
        except Exception as exc:  # the count is a note; the run's summary must not be lost to it
            name = type(exc).__name__
            record(LogEvent.OBSOLETE_UNKNOWN, "obsolete entries unknown: %s: %s", name, exc)
        summary = runtime.summary(obsolete)
        stream = sys.__stdout__
        if stream is not None:
            stream.write(summary.render(colour=stream.isatty()) + "\n")
            stream.flush()
    finally:
        runtime.close(summary)
    report = runtime.report_path
    if report is not None and report.exists() and sys.__stdout__ is not None:
        sys.__stdout__.write(f"prettyplay: report: {report}\n")  # where to look next
        sys.__stdout__.flush()


def run_current_step(context: Any) -> None:
    """Run the current step through prettyplay (called by the generic step definition)."""
    state: ScenarioState | None = getattr(context, "prettyplay_scenario", None)
    if state is None or state.current_step is None:
        raise RuntimeError(
            "prettyplay is not installed: end features/environment.py with "
            "use_prettyplay(globals())"
        )
    step = state.current_step
    outline = outline_of(context.scenario, step)
    spec = step_spec(step.step_type, step.name, step.text, step.table, outline)
    own_steps = context.scenario.steps
    state.ours = step
    try:
        if state.group is not None and any(step is own for own in own_steps):
            state.group.perform(spec)
        else:
            state.test.perform(spec)
    except PrettyPlayError as failure:
        from ..engine.step import shown_error

        # the message says all there is, and the step code's own lines where it raised; the
        # engine's frames would only bury it (prettyplay.full_tracebacks shows them)
        full = state.test.runtime.config.full_tracebacks
        raise shown_error(failure, full) from failure.__cause__  # the cause it was just given
    finally:
        context.page = state.test.page  # a tab the step opened, a clean page of an attempt


_OURS: dict[str, Hook] = {
    "before_all": before_all,
    "before_scenario": before_scenario,
    "before_step": before_step,
    "after_step": after_step,
    "after_scenario": after_scenario,
    "after_all": after_all,
}


def _combine(name: str, ours: Hook, theirs: Hook | None) -> Hook:
    if theirs is None:
        return ours

    outer, inner = (theirs, ours) if name.endswith("_all") else (ours, theirs)

    def both(context: Any, *args: Any) -> None:
        if name.startswith("before_"):
            outer(context, *args)
            inner(context, *args)
        else:
            try:
                inner(context, *args)
            finally:
                outer(context, *args)

    both.__name__ = name
    both.__wrapped__ = theirs  # type: ignore[attr-defined]
    return both


def use_prettyplay(
    namespace: MutableMapping[str, Any],
    steering: Steering | None = None,
    provider: Provider | None = None,
) -> None:
    """Install prettyplay's hooks into an environment.py namespace, around the user's own.

    ``steering`` replaces the terminal dialog behind the steering gate (any object with
    ``steer(stuck) -> bool``); ``provider`` answers the LLM requests instead of the openai client
    (see ``llm/provider.py``)."""
    for name, ours in _OURS.items():
        if name == "before_all" and (steering is not None or provider is not None):
            ours = functools.partial(before_all, steering=steering, provider=provider)
        if name == "before_scenario":  # finds prettyplay_context_args, wherever it is defined
            ours = functools.partial(before_scenario, environment=namespace)
        namespace[name] = _combine(name, ours, namespace.get(name))
