"""Signal dispositions for the processes the tests start."""

from __future__ import annotations

import signal


def default_interrupt() -> None:
    """Ctrl+C interrupts, as in any terminal session.

    A shell without job control starts a background job with SIGINT ignored, and an ignored
    signal stays ignored across exec: a test run from such a job would hand it down to behave,
    which then never sees its Ctrl+C. Given as ``preexec_fn`` to every run a test interrupts.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
