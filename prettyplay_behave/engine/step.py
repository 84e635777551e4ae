"""What the engine knows of one step, and of the test around it.

``TestRun`` is the one owner of a test's state while it runs: its page and its instruments, the
scenario so far, the occurrence counts of the cache address, the recovery cycles of its groups
and what its artifacts need to know.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from ..cache import CacheKey
from ..vocabulary import FailureKind, Kind, Origin, StepStatus
from .history import Attempt

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from ..browser.guard import NavigationGuard
    from ..browser.settle import Settler
    from ..browser.tabs import Tabs
    from ..config import TestConfig
    from ..llm.answers import Verdict


@dataclass(frozen=True)
class StepSpec:
    """One step as written: an action or a check, its sentence and data, tries and delay."""

    kind: Kind
    sentence: str
    data: str = ""
    tries: int = 1
    delay: float | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            kinds = " or ".join(repr(str(k)) for k in Kind)
            raise ValueError(f"step kind must be {kinds}, not {self.kind!r}") from None
        if not self.sentence.strip():
            raise ValueError("a step needs a sentence")
        if self.tries < 1:
            raise ValueError(f"tries must be 1 or more, not {self.tries}")
        if self.delay is not None and self.delay < 0:
            raise ValueError(f"delay must be 0 or more seconds, not {self.delay}")

    @property
    def text(self) -> str:
        """The sentence with its data, as it reaches requests and messages."""
        return f"{self.sentence}\n{self.data}" if self.data else self.sentence


@dataclass
class ScenarioEntry:
    """An executed step of the test, as later requests see it; group membership is permanent."""

    spec: StepSpec
    key: CacheKey
    group: str | None = None
    outcome: StepStatus = StepStatus.RUNNING
    origin: Origin | None = None
    code: str = ""
    history: list[Attempt] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # classifications and diagnoses
    failure: FailureKind | None = None
    requests: int = 0  # LLM requests made for this step
    tokens: int = 0
    replaced: str | None = None  # the code a rewrite of this run replaced (heal, recovery, steer)
    guidance: str = ""  # the engineer's guidance of a steered turn that was kept
    notes: list[str] = field(default_factory=list)  # what its last run met: unhandled dialogs

    @property
    def kind(self) -> Kind:
        return self.spec.kind

    @property
    def sentence(self) -> str:
        return self.spec.sentence


@dataclass(frozen=True)
class GroupStepRecord:
    """One executed group step, verbatim (a trace of ``g.traces``): recovery never rewrites it."""

    sentence: str
    outcome: StepStatus
    url_before: str
    url_after: str


@dataclass
class TestRun:
    """The state of one test around its steps."""

    __test__ = False  # a product class, not a pytest test class

    name: str
    config: TestConfig
    tabs: Tabs  # its pages; the current one is the page of its next step
    owned_context: BrowserContext | None = None
    guard: NavigationGuard | None = None
    tracing: bool = False  # a Playwright trace is being recorded for this test
    uses_secrets: bool = False  # then pictures of the page are kept only when asked for
    failed_elsewhere: bool = False  # a step outside prettyplay (a user's own) failed
    screenshot: Path | None = None  # artifacts of a failure, kept in report_dir
    trace_file: Path | None = None
    videos: list[Path] = field(default_factory=list)  # one per page it opened, when kept
    downloads: Path | None = None  # where its downloads are saved (report_dir)
    files_dir: Path | None = None  # where the files it uploads come from
    notes: list[str] = field(default_factory=list)  # of its last execution: dialogs, for requests
    started: float = field(default_factory=time.monotonic)
    duration: float = 0.0
    scenario: list[ScenarioEntry] = field(default_factory=list)
    recovery_cycles: dict[str, int] = field(default_factory=dict)  # per group prompt
    _seen: dict[tuple[Kind, str, str], int] = field(default_factory=dict)

    @property
    def page(self) -> Page:
        return self.tabs.page

    @property
    def settler(self) -> Settler:
        return self.tabs.current.settler

    def key_for(self, spec: StepSpec) -> CacheKey:
        """The cache address: identical earlier steps of this test count as occurrences."""
        triple = (spec.kind, spec.sentence, spec.data)
        self._seen[triple] = self._seen.get(triple, 0) + 1
        return CacheKey(self.name, spec.kind, spec.sentence, spec.data, self._seen[triple])

    @property
    def failed(self) -> bool:
        return self.failed_elsewhere or any(e.outcome is StepStatus.FAILED for e in self.scenario)

    def uses_secret(self) -> None:
        """A step names a secret: stop and discard the trace unless ``trace=on`` (a picture
        of the page cannot be redacted; screenshots and videos follow their own policies)."""
        self.uses_secrets = True
        if self.tracing and self.config.trace != "on":
            self.tracing = False
            self.page.context.tracing.stop()

    def close(self) -> None:
        """Close the context this test opened (a page handed in stays open)."""
        self.duration = time.monotonic() - self.started
        if self.guard is not None:
            self.guard.uninstall()
        context, self.owned_context = self.owned_context, None
        if context is None:
            return
        try:
            context.close()
        except PlaywrightError:
            browser = context.browser
            if browser is not None and browser.is_connected():
                raise  # a browser that is gone took its contexts with it; anything else is real
