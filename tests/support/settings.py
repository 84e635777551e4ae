"""The settings of a test that drives the Python API: ``api_config`` is the one builder, and a
test module that wants other values for all its tests says so once, as a partial of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prettyplay_behave import PrettyConfig


def api_config(base_url: str, cache_dir: Path, **changes: Any) -> PrettyConfig:
    """Settings for ``base_url`` with the cache in ``cache_dir``: no LLM retries and a 10 s LLM
    timeout (the scripted server answers at once; the time is for a loaded two-core machine),
    ``changes`` on top."""
    settings: dict[str, Any] = {"llm_retries": 0, "llm_timeout": 10.0, **changes}
    return PrettyConfig(base_url=base_url, cache_dir=str(cache_dir), **settings)
