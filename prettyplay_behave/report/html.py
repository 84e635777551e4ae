"""The HTML report: one self-contained file (screenshots inline, no outside assets). Every text
it shows is redacted where it may hold a secret, and has its control characters escaped."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import escape_controls
from ..resources import templates_folder
from ..vocabulary import counted
from .artifacts import TestArtifacts
from .diffs import change_of

if TYPE_CHECKING:
    from ..engine.state import TestState
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
) -> Path:
    """Render the report into ``report_dir``; every text passes ``redact``. ``artifacts_of``
    gives what each test left there (its screenshot, trace and videos)."""
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
    html = environment.get_template("report.html.j2").render(tests=tests, summary=summary)
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / name
    path.write_text(html, encoding="utf-8")
    return path
