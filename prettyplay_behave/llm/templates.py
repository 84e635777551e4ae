"""Rendering the request messages from the jinja2 templates in ``templates/``.

Every purpose has one template (``Purpose.template``: ``<purpose>.j2``) that defines two blocks:
``system`` and ``user``. Shared pieces live in partials (``_page.j2``, ``_history.j2``, ...).
A folder given as ``templates_dir`` overrides any template by name; the shipped ones fill the
rest. Undefined context fields are errors (StrictUndefined): callers pass ``None``, ``""`` or
``[]`` for what does not apply.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..page_events import PAGE_EVENTS
from ..resources import templates_folder
from ..safety.policy import contract
from .purposes import Purpose

if TYPE_CHECKING:
    import jinja2

ROLES = ("system", "user")


class RequestTemplates:
    """The prompt templates of a run; the jinja2 environment is built on first use and
    shared by the runs of the process that use the same folder."""

    def __init__(self, templates_dir: str | None = None, source: str = "PrettyConfig") -> None:
        """``source`` is where ``templates_dir`` came from, for the ConfigError of a bad one."""
        self.templates_dir, self.source = templates_dir, source
        if templates_dir is not None and not os.path.isdir(templates_dir):
            raise self._error("the folder does not exist")
        self._environment: jinja2.Environment | None = None

    def _error(self, problem: str) -> ConfigError:
        return ConfigError("templates_dir", self.templates_dir, self.source, problem)

    @property
    def environment(self) -> jinja2.Environment:
        if self._environment is None:
            folder = self.templates_dir and os.path.abspath(self.templates_dir)
            self._environment = _environment(folder)
        return self._environment

    def render(self, purpose: Purpose | str, **context: Any) -> list[dict[str, str]]:
        """The ``system`` and ``user`` messages of one request for ``purpose`` (or its name)."""
        import jinja2

        template = self.environment.get_template(Purpose.of(purpose).template)
        missing = [role for role in ROLES if role not in template.blocks]
        if missing:
            raise self._error(
                f"template {template.name} must define the blocks system and user "
                f"(missing: {', '.join(missing)})"
            )
        values = template.new_context(context)
        try:
            return [
                {"role": role, "content": "".join(template.blocks[role](values)).strip()}
                for role in ROLES
            ]
        except jinja2.UndefinedError as exc:
            raise jinja2.UndefinedError(f"{template.name}: {exc.message}") from exc


@functools.cache
def _environment(templates_dir: str | None) -> jinja2.Environment:
    """One environment a process and folder: each template compiles once, not once a run or a
    test (jinja2 still compiles a template again when its file changed)."""
    import jinja2

    shipped = jinja2.FileSystemLoader(templates_folder())
    loaders: list[jinja2.BaseLoader] = [shipped]
    if templates_dir:
        loaders.insert(0, jinja2.FileSystemLoader(templates_dir))
    environment = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.globals["page_events"] = list(PAGE_EVENTS.values())  # the code contract's
    environment.globals["policy"] = contract()  # what the code contract lists: the policy
    return environment
