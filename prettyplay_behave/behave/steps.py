"""The generic step: every sentence that no user step definition matches runs through prettyplay.

Import this module from any module under ``features/steps/``::

    import prettyplay_behave.behave.steps  # noqa: F401

The generic matcher yields to every user definition, whatever the load order: behave tries the
keyword's own list before the generic list, and inside the generic list this matcher defers to
every other definition that matches. It also never takes part in behave's ambiguity check, so a
user's own ``@step(...)`` definitions load without conflict.

The registry is the one behave's runner uses and its step decorators fill; behave may replace
the module-level ``behave.step_registry.registry`` at start, so that name is not reliable.
"""

from __future__ import annotations

from typing import Any

from behave.matchers import Matcher
from behave.runner import the_step_registry as registry

from .environment import run_current_step


class FallbackMatcher(Matcher):
    """Matches any sentence that no other generic step definition matches."""

    def __init__(self, func: Any) -> None:
        super().__init__(func, "{any sentence}", step_type="step")

    def compile(self) -> FallbackMatcher:
        return self

    def check_match(self, step_text: str) -> list[Any] | None:
        for other in registry.steps["step"]:
            if other is not self and other.match(step_text):
                return None
        return []

    def matches(self, step_text: str) -> bool:
        return False


def prettyplay_step(context: Any) -> None:
    """A plain-language step, run (or replayed from the cache) by prettyplay."""
    run_current_step(context)


if not any(isinstance(matcher, FallbackMatcher) for matcher in registry.steps["step"]):
    registry.steps["step"].append(FallbackMatcher(prettyplay_step))
