"""prettyplay-behave: plain-language browser tests, LLM-written once, replayed from a cache."""

from .authoring import Group, PrettyPlay
from .config import PrettyConfig
from .errors import (
    CacheError,
    CodePolicyError,
    ConfigError,
    IncurableStepError,
    PrettyPlayError,
    ProductDefectError,
    ProviderUnavailableError,
)

__all__ = [
    "CacheError",
    "CodePolicyError",
    "ConfigError",
    "Group",
    "IncurableStepError",
    "PrettyConfig",
    "PrettyPlay",
    "PrettyPlayError",
    "ProductDefectError",
    "ProviderUnavailableError",
]
