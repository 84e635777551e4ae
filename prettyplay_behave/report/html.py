"""The HTML report: one self-contained file (screenshots inline, no outside assets). Every text
it shows is redacted where it may hold a secret, and has its control characters escaped.

The failed tests come first, open, each linked from the top; the passed ones follow, closed, in
the order they ran. Each run's report is kept under a name of its own beside ``report.html``
(the newest), which links to the earlier runs still kept (:mod:`.history`)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import REPORT_HISTORY
from ..errors import escape_controls
from ..resources import templates_folder
from ..vocabulary import StepStatus, counted
from .artifacts import TestArtifacts
from .diffs import change_of
from .history import forget, kept_runs, new_run, write

if TYPE_CHECKING:
    from ..engine.state import TestState
    from ..engine.step import StepRun
    from .summary import RunSummary

REPORT_NAME = "report.html"


def _inline_png(path: Path | None) -> str:
    if path is None or not path.exists():
        return ""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def write_report(
    report_dir: Path,
    tests: Sequence[TestState],
    summary: RunSummary,
    redact: Callable[[str], str],
    name: str = REPORT_NAME,
    artifacts_of: Callable[[TestState], TestArtifacts] = lambda test: TestArtifacts(),
    keep: int = REPORT_HISTORY,
) -> Path:
    """Render the report into ``report_dir`` as ``name`` and as this run's own file, and keep
    the ``keep`` newest runs of ``name`` there (this one among them); every text passes
    ``redact``. ``artifacts_of`` gives what each test left there (its screenshot, trace and
    videos). The path of ``name``."""
    import jinja2  # loaded only when a report is written, never on a plain replay
    from markupsafe import Markup

    def shown(value: object) -> object:
        # every text a page, a cache file or the LLM gave, its control characters escaped
        # (markup the template builds itself is left as it is)
        if isinstance(value, str) and not isinstance(value, Markup):
            return escape_controls(value)
        return value

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_folder()),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=shown,
    )
    environment.filters["redact"] = redact
    environment.filters["inline_png"] = _inline_png
    environment.filters["relative"] = lambda path: path.relative_to(report_dir).as_posix()
    # what a rewrite (heal, recovery, steer) changed, as a diff beside its cause
    environment.globals["change_of"] = lambda test, run: change_of(test, run, redact)
    environment.globals["artifacts_of"] = artifacts_of
    environment.globals["counted"] = counted
    environment.globals["failed_step"] = _failed_step
    failures = [test for test in tests if test.failed]
    series = Path(name).stem
    run = new_run(series, len(tests), len(failures))
    earlier = kept_runs(report_dir, series)
    html = environment.get_template("report.html.j2").render(
        tests=failures + [test for test in tests if not test.failed],
        failures=failures,
        summary=summary,
        run=run,
        earlier=earlier[: keep - 1],
    )
    write(report_dir / run.name, html)
    path = report_dir / name
    write(path, html)
    forget(report_dir, earlier[keep - 1 :])
    return path


def _failed_step(test: TestState) -> StepRun | None:
    return next((run for run in test.scenario if run.outcome == StepStatus.FAILED), None)
