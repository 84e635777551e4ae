"""prettyplay-behave: plain-language browser tests, LLM-written once, replayed from a cache."""

from typing import TYPE_CHECKING, Any

from .config import PrettyConfig
from .engine.hooks import Hooks
from .errors import (
    CacheError,
    CodePolicyError,
    ConfigError,
    IncurableStepError,
    PrettyPlayError,
    ProductDefectError,
    ProviderUnavailableError,
    RedStepError,
)

if TYPE_CHECKING:
    from .authoring import Group, PrettyPlay
    from .browser.snapshot import PageCaptureError


def __getattr__(name: str) -> Any:
    # The authoring surface and the page capture pull in Playwright; load them on first use only.
    if name in ("Group", "PrettyPlay"):
        from . import authoring

        return getattr(authoring, name)
    if name == "PageCaptureError":
        from .browser import snapshot

        return snapshot.PageCaptureError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CacheError",
    "CodePolicyError",
    "ConfigError",
    "Group",
    "Hooks",
    "IncurableStepError",
    "PageCaptureError",
    "PrettyConfig",
    "PrettyPlay",
    "PrettyPlayError",
    "ProductDefectError",
    "ProviderUnavailableError",
    "RedStepError",
]
