"""Several processes writing into one library file at once lose no entry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prettyplay_behave.cache import file_name, load_file
from tests.support.processes import wait_for

PROCESSES = 4
ENTRIES = 20  # each write reads and rewrites the whole file: writers overlap from the first

# Each writer says it is ready (imports done, store made), then waits for the go file, which
# the test writes once every writer is ready: all of them write at the same time.
WRITER = """
import sys, time
from pathlib import Path
from prettyplay_behave.cache import CacheWrite, CacheKey, CacheStore

cache_dir, go, worker, count = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
store = CacheStore(cache_dir, lambda code: None)
go.with_name(f"ready-{worker}").touch()
while not go.exists():
    time.sleep(0.005)
for n in range(count):
    key = CacheKey("shop.feature::Race", "step", f"step {n} of writer {worker}")
    store.write(CacheWrite(key, f"def step(page):\\n    pass  # {worker}.{n}", "generated"))
"""


def test_concurrent_writers_keep_every_entry(tmp_path: Path) -> None:
    cache_dir, go = tmp_path / "cache", tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache_dir), str(go), str(worker), str(ENTRIES)]
        )
        for worker in range(PROCESSES)
    ]
    ready = [tmp_path / f"ready-{worker}" for worker in range(PROCESSES)]
    wait_for(
        lambda: all(path.exists() for path in ready) or any(w.poll() is not None for w in writers),
        120,
        "every writer to be ready",
    )
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0

    # one template, so one step: every writer writes the same library file
    path = cache_dir / "steps" / file_name(("action", "step {} of writer {}", ""))
    entries = load_file(path, lambda code: None).entries
    written = ["step {} of writer {}".format(*(e.values or ())) for e in entries]
    assert sorted(written) == sorted(
        f"step {n} of writer {w}" for w in range(PROCESSES) for n in range(ENTRIES)
    )
    assert {e.sentence for e in entries} == {"step {} of writer {}"}  # one template, its values
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no lock among steps
