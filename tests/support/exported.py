"""The support module of an export, written as the export writes it and imported as behave's
steps import it (its folder on the path), without leaving that folder behind."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from prettyplay_behave.export import ADDRESS_MODULE, support_modules


def support_module(steps: Path) -> ModuleType:
    """Write the support modules into ``steps`` and import ``step_support`` from there."""
    steps.mkdir(parents=True, exist_ok=True)
    for relative, content in support_modules().items():
        (steps / relative.name).write_bytes(content)
    address = Path(ADDRESS_MODULE).stem
    spec = importlib.util.spec_from_file_location("step_support", steps / "step_support.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(steps))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(steps))
        sys.modules.pop(address, None)  # the next export's is its own
    return module
