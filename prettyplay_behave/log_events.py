"""Log records: every record goes to the ``prettyplay`` logger, each with an ``event`` name from
the table below, at its event's level.

Adding an event is one row of :class:`LogEvent` and its row in docs/reporting.md's table of log
records (``tests/unit/test_log_events.py`` keeps the two the same). The hook events a project
listens to are :mod:`.engine.hooks`.
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any

log = logging.getLogger("prettyplay")

DEBUG, INFO, WARNING, ERROR = logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR


class LogEvent(Enum):
    """Every event a log record carries: its name and its level."""

    def __init__(self, event: str, level: int) -> None:
        self.event = event
        self.level = level

    # fmt: off
    # requests and their answers
    LLM_REQUEST = ("llm_request", DEBUG)
    STRUCTURED_OUTPUT_REFUSED = ("structured_output_refused", INFO)
    GENERATION = ("generation", INFO)
    CLASSIFIED = ("classified", INFO)
    CLASSIFICATION_DEGRADED = ("classification_degraded", WARNING)
    HEALING = ("healing", INFO)
    GROUP_DIAGNOSED = ("group_diagnosed", INFO)
    GROUP_DIAGNOSIS_DEGRADED = ("group_diagnosis_degraded", WARNING)
    GROUP_ROW_RECOVERED = ("group_row_recovered", INFO)
    GATE_FINDING = ("gate_finding", WARNING)
    GATE_UNREADABLE = ("gate_unreadable", WARNING)
    CANNOT = ("cannot", INFO)
    VERDICT_TAKEN = ("verdict_taken", INFO)
    GUIDANCE = ("guidance", INFO)
    # what the run keeps
    CACHE_WRITE = ("cache_write", INFO)
    REUSE = ("reuse", INFO)
    SAME_AS = ("same_as", INFO)
    VERDICT_KEPT = ("verdict_kept", INFO)
    VERDICT_NOT_KEPT = ("verdict_not_kept", INFO)
    TURNED_GREEN = ("turned_green", INFO)
    RENAME_SPREAD = ("rename_spread", INFO)
    RENAME_NOT_SPREAD = ("rename_not_spread", WARNING)
    OBSOLETE_UNKNOWN = ("obsolete_unknown", WARNING)
    # the page and the browser
    STEP_RETRY = ("step_retry", DEBUG)
    PAGE_RESTORED = ("page_restored", INFO)
    PAGE_NOT_RESTORED = ("page_not_restored", WARNING)
    SETTLE_CHECK_FAILED = ("settle_check_failed", WARNING)
    LATE_BLOCK = ("late_block", WARNING)
    REDIRECT_UNCHECKED = ("redirect_unchecked", INFO)
    DOCUMENT_UNANSWERED = ("document_unanswered", DEBUG)
    EXECUTION_STOPPED = ("execution_stopped", WARNING)
    EVIDENCE_STOPPED = ("evidence_stopped", WARNING)
    MEMORY_HEADROOM_UNAVAILABLE = ("memory_headroom_unavailable", WARNING)
    BROWSER = ("browser", INFO)
    BROWSER_RELAUNCHED = ("browser_relaunched", WARNING)
    BROWSER_SANDBOX_OFF = ("browser_sandbox_off", WARNING)
    # the run around the steps
    INTERACTIVE_OFF = ("interactive_off", WARNING)
    HOOK_FAILED = ("hook_failed", ERROR)
    HOOK_UNKNOWN = ("hook_unknown", WARNING)
    ATTACHMENT_FAILED = ("attachment_failed", WARNING)
    ARTIFACT_LOST = ("artifact_lost", WARNING)
    # fmt: on


def record(
    event: LogEvent, message: str, *args: object, exc_info: bool = False, **fields: Any
) -> None:
    """One log record of ``event``, at its level, with any extra fields attached."""
    log.log(event.level, message, *args, exc_info=exc_info, extra={"event": event.event, **fields})
