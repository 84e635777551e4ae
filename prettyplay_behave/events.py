"""Log records: every record goes to the ``prettyplay`` logger, each with an ``event`` name.

The hook events a project listens to are :mod:`.engine.hooks`.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("prettyplay")


def record(level: int, event: str, message: str, *args: object, **fields: Any) -> None:
    """One log record with its event name (and any extra fields) attached."""
    log.log(level, message, *args, extra={"event": event, **fields})
