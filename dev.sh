#!/usr/bin/env bash
# Set up a development environment and run the examples or the test suite.
#   ./dev.sh examples [behave args]   replay the example features against the demo shop
#   ./dev.sh test [pytest args]       lint, type-check and run the whole test suite (in parallel,
#                                     two workers per core; PYTEST_WORKERS=0 runs it in one
#                                     process)
#   ./dev.sh mutate [name ...]        break guarded behaviours one by one; their tests must fail
set -euo pipefail
cd "$(dirname "$0")"

VENV=${VENV:-.venv}
PY="$VENV/bin/python"

# The editable install is redone only when pyproject.toml (the dependencies, the entry points)
# changed since the last one: a stamp in the venv holds the hash it was made from.
STAMP="$VENV/.prettyplay-installed"

setup() {
  if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
  fi
  local wanted
  wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ]; then
    "$PY" -m pip install --quiet --disable-pip-version-check -e ".[dev]"
    echo "$wanted" >"$STAMP"
  fi
  ensure_browser
}

# Playwright's own browser download needs the internet; a system Chromium serves as well, and for
# headless runs (the suite's, CI's) its headless shell, which opens pages far faster.
ensure_browser() {
  local found
  found=$("$PY" - <<'PY'
import os
from playwright.sync_api import sync_playwright
from prettyplay_behave.browser.session import find_system_chromium
with sync_playwright() as p:
    bundled = os.path.exists(p.chromium.executable_path)
print("bundled" if bundled else "system" if find_system_chromium(headless=False) else "none")
PY
)
  case "$found" in
    bundled) ;;
    system)
      if ! command -v chromium-headless-shell chrome-headless-shell >/dev/null &&
        command -v apt-get >/dev/null; then
        echo "dev.sh: installing Debian's chromium-headless-shell for headless runs" >&2
        apt_install chromium-headless-shell ||
          echo "dev.sh: not installed; headless runs use the full Chromium" >&2
      fi
      ;;
    *)
      echo "dev.sh: no Chromium found; installing Debian's chromium and chromium-headless-shell" >&2
      apt_install chromium chromium-headless-shell
      ;;
  esac
}

# The video tests record with Playwright's recorder, which encodes with ffmpeg (Debian's here).
ensure_ffmpeg() {
  if ! command -v ffmpeg >/dev/null; then
    echo "dev.sh: no ffmpeg found; installing Debian's ffmpeg package" >&2
    apt_install ffmpeg
  fi
}

apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

case "${1:-}" in
  examples)
    shift
    setup
    exec "$VENV/bin/behave" "$@"
    ;;
  test)
    shift
    setup
    ensure_ffmpeg
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    # the type check (some 17 CPU-seconds from a fresh clone) runs beside the suite and fails it
    # as surely; at the lowest priority it takes the CPU the suite's waits leave free, not the
    # suite's own
    types=$(mktemp)
    nice -n 19 "$VENV/bin/mypy" >"$types" 2>&1 &
    mypy_pid=$!
    # the suite's processes keep their compiled modules (in __pycache__, which git ignores)
    # whatever the environment says: otherwise each worker rewrites and compiles every test
    # module again as it collects (3 CPU-seconds each), and each process a test starts compiles
    # prettyplay again
    unset PYTHONDONTWRITEBYTECODE
    status=0
    # two workers per core: the suite waits on browsers, servers and timeouts about as long as
    # it computes, and the second worker of a core fills those waits; tests that share a run of
    # their module carry an xdist_group mark
    "$VENV/bin/pytest" -n "${PYTEST_WORKERS:-$(($(nproc) * 2))}" --dist loadgroup "$@" || status=$?
    wait "$mypy_pid" || status=1
    cat "$types"
    rm -f "$types"
    exit "$status"
    ;;
  mutate)
    shift
    setup
    ensure_ffmpeg
    exec "$PY" -m tests.mutants "$@"
    ;;
  *)
    echo "usage: ./dev.sh examples [behave args] | ./dev.sh test [pytest args] | ./dev.sh mutate [name ...]" >&2
    exit 2
    ;;
esac
