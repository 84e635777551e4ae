"""``./dev.sh examples`` installs the package only when pyproject.toml changed since the last
install, not on every run (a stand-in venv records what dev.sh asks of it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

FAKE_PYTHON = """\
#!/usr/bin/env bash
echo "python $*" >>"$DEV_LOG"
if [ "$1" = "-" ]; then cat >/dev/null; echo bundled; fi
"""
FAKE_BEHAVE = '#!/usr/bin/env bash\necho "behave $*" >>"$DEV_LOG"\n'


def test_examples_reinstall_only_when_pyproject_changes(tmp_path: Path) -> None:
    shutil.copy(ROOT / "dev.sh", tmp_path / "dev.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("behave", FAKE_BEHAVE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    environ = {**os.environ, "DEV_LOG": str(log)}
    environ.pop("VENV", None)

    def examples() -> list[str]:
        log.write_text("")
        done = subprocess.run(
            ["bash", "dev.sh", "examples", "--dry-run"],
            cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return log.read_text().splitlines()

    first = examples()
    assert [line for line in first if "pip install" in line] == [
        "python -m pip install --quiet --disable-pip-version-check -e .[dev]"
    ]
    assert first[-1] == "behave --dry-run"
    again = examples()
    assert not any("pip" in line for line in again), again  # nothing changed: no install
    assert again[-1] == "behave --dry-run"
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# a new dependency\n")
    assert any("pip install" in line for line in examples())
