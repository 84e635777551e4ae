"""The public exceptions and the render of a failed step's final error.

A final error reads the same everywhere (behave's output, JUnit, the steering banner)::

    IncurableStepError: the generation budget is exhausted
    ---
    step: click Checkout
    error: TimeoutError: Timeout 10000ms exceeded
    page: http://shop.test/cart (HTTP 501)
    ---
    <the full underlying error: received / cause / Playwright's call log>
    ---
    explanation: ...
    recommendation: ...

Every message and render shows control characters escaped (:func:`escape_controls`): text a
cache file, a page or the LLM supplied never moves a terminal's cursor or makes JUnit XML
ill-formed. So does every record of the ``prettyplay`` logger (behave copies the log into its
output and JUnit), once this module is imported, as every module that logs imports it.
"""

from __future__ import annotations

import logging
import re

from .vocabulary import FailureKind

SECTION = "---"

# C0 but tab and newline, DEL, C1 (a lone 0x9b is a terminal's CSI), the line and paragraph
# separators, the bidirectional overrides (text that reads other than it runs), lone surrogates
# (which no UTF-8 output can encode) and the two non-characters XML refuses.
_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x1b``, ``\\u202e``);
    newlines and tabs kept. Text without any comes back as it is."""
    return _CONTROLS.sub(_escaped, text)


class _EscapeControls(logging.Filter):
    """Escapes the control characters of a record's message: its arguments may be a page's
    text, a verdict of the LLM or a cache file's."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        escaped = escape_controls(message)
        if escaped != message:
            record.msg, record.args = escaped, ()
        return True


logging.getLogger("prettyplay").addFilter(_EscapeControls())


class PrettyPlayError(Exception):
    """Base of every error prettyplay raises on purpose. One that a step raised carries the
    step's run (``step_run``, a ``StepRun``), so whoever handles it knows which step failed."""

    step_run: object | None = None

    def __init__(self, *args: object) -> None:
        super().__init__(*(escape_controls(a) if isinstance(a, str) else a for a in args))


class StepCodeError(Exception):
    """What a step's own code raised in its last red execution, as the execution's text tells
    it (redacted, cut), with a traceback of the step code's own lines: the cause a final error
    is shown with, where the engine's frames are hidden."""


class ConfigError(PrettyPlayError):
    """A setting is unknown or has a bad value; names the key, the value and its source."""

    def __init__(self, key: str, value: object, source: str, problem: str) -> None:
        self.key, self.value, self.source, self.problem = key, value, source, problem
        super().__init__(f"setting {key!r} = {value!r} (from {source}): {problem}")


class CacheError(PrettyPlayError):
    """A cache file is corrupt, or one of its entries is refused; names the file and entry."""


class CodePolicyError(PrettyPlayError):
    """Step code uses something outside the code policy's allowlist."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        self.problem, self.line = problem, line
        where = f"line {line}: " if line else ""
        super().__init__(f"{where}{problem}")


class StepTimeoutError(PrettyPlayError):
    """One execution of step code ran past ``step_timeout_ms``; the execution is red."""


class ProviderUnavailableError(PrettyPlayError):
    """The LLM cannot be reached (or is not configured) when a step needs it."""


class StepFailedError(PrettyPlayError):
    """Base of the final step failures; renders the sections of the final error."""

    def __init__(
        self,
        headline: str,
        *,
        sentence: str,
        error: str = "",
        details: str = "",
        explanation: str = "",
        recommendation: str = "",
        code: str = "",
        label: str = "",
        then: str = "",
        page: str = "",
    ) -> None:
        self.headline = headline
        self.label = label  # the verdict that made it final, when one did (and could be read)
        self.sentence = sentence
        self.error = error
        self.details = details
        self.explanation = explanation
        self.recommendation = recommendation
        self.code = code
        self.then = then  # what became of the request that followed the failure, when it failed
        # the page the failed execution left: its URL, and its document's HTTP error status
        self.page = page
        self.body = self._body()
        super().__init__(self.body)

    def _body(self) -> str:
        sections = [
            self.headline,
            f"step: {self.sentence}"
            + (f"\nerror: {self.error}" if self.error else "")
            + (f"\npage: {self.page}" if self.page else ""),
        ]
        if self.details:
            sections.append(self.details)
        if self.explanation or self.recommendation:
            lines = []
            if self.explanation:
                lines.append(f"explanation: {self.explanation}")
            if self.recommendation:
                lines.append(f"recommendation: {self.recommendation}")
            sections.append("\n".join(lines))
        if self.then:
            sections.append(f"… and {self.then}")
        return escape_controls(f"\n{SECTION}\n".join(sections))

    def recast(
        self,
        error_type: type[StepFailedError],
        headline: str,
        explanation: str | None = None,
        recommendation: str | None = None,
        label: str | None = None,
        then: str | None = None,
    ) -> StepFailedError:
        """The same failure under another headline (and verdict)."""
        return error_type(
            headline,
            sentence=self.sentence,
            error=self.error,
            details=self.details,
            explanation=self.explanation if explanation is None else explanation,
            recommendation=self.recommendation if recommendation is None else recommendation,
            code=self.code,
            label=self.label if label is None else label,
            then=self.then if then is None else then,
            page=self.page,
        )

    def followed_by(self, then: str) -> StepFailedError:
        """The same failure, and what became of the request that followed it (``then``: "the
        classification failed: …"), so the cause of the red is never hidden behind it."""
        return self.recast(type(self), self.headline, then=then)

    def render(self) -> str:
        """The full render of the final error, headed by the exception's name."""
        return f"{type(self).__name__}: {self.body}"


class _BehaveFailure(StepFailedError, AssertionError):
    """A final failure that is the app's own answer to a step: an AssertionError, so behave
    counts the step *failed* (JUnit ``failures``, Allure ``failed``, the JSON formatter's
    ``error_message``), where any other exception is an *error*."""

    def __str__(self) -> str:
        # behave prints an AssertionError as "ASSERT FAILED: <str>": keep the name in sight.
        return self.render()


class IncurableStepError(StepFailedError):
    """A step stays red: no budget, verdict or cache entry can make it green."""


class RedStepError(IncurableStepError, _BehaveFailure):
    """An incurable step whose red is the app's answer: a check (or a precondition) whose
    assertion failed, or a cached step that went red under strict replay. A behave failure."""


class ProductDefectError(_BehaveFailure):
    """The product itself is wrong; never healed. A behave failure."""


def describe_exception(exc: BaseException) -> tuple[str, str]:
    """Split an exception into the one-line ``error:`` text and the full underlying text."""
    text = escape_controls(str(exc).strip())
    first = text.splitlines()[0] if text else ""
    name = type(exc).__name__
    return (f"{name}: {first}" if first else name), (f"{name}: {text}" if text else name)


def rendered(exc: BaseException) -> str:
    """The whole text of the error a step ended with: the final error's render, or the exception."""
    return exc.render() if isinstance(exc, StepFailedError) else describe_exception(exc)[1]


def failure_kind(exc: BaseException) -> FailureKind:
    """How a step that raised ``exc`` is counted in the summary and the report."""
    kinds: tuple[tuple[type[BaseException], FailureKind], ...] = (
        (ProductDefectError, FailureKind.PRODUCT_DEFECT),
        (IncurableStepError, FailureKind.INCURABLE),
        (ProviderUnavailableError, FailureKind.UNAVAILABLE),
        (ConfigError, FailureKind.CONFIGURATION),
        (CacheError, FailureKind.CACHE),
    )
    return next((kind for error, kind in kinds if isinstance(exc, error)), FailureKind.ERROR)
