"""Cache files in tests: entries planted as a generating run would write them, and the raw
entries of a feature's step library read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite
from prettyplay_behave.safety.step_code import check_code


def steps(path: Path) -> list[dict[str, Any]]:
    """The raw entries of a cache file (format 2), as the file holds them."""
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == 2, document["format"]
    return list(document["steps"])


def filled(entry: dict[str, Any]) -> str:
    """The entry's sentence with its values put back (for an entry specific to values)."""
    sentence = entry["sentence"]
    for value in entry.get("values", []):
        sentence = sentence.replace("{}", value, 1)
    return sentence


def by_sentence(path: Path) -> dict[str, dict[str, Any]]:
    """The entries that serve every scenario, by their sentence (values put back)."""
    return {filled(e): e for e in steps(path) if "scenario" not in e}


def codes(cache_dir: Path) -> list[tuple[str, str]]:
    """Every entry of every cache file under ``cache_dir``: its sentence (values put back) and
    its code as one text."""
    found = []
    for path in sorted(cache_dir.rglob("*.json")):
        found += [(filled(e), "\n".join(e["code"]) + "\n") for e in steps(path)]
    return found


def scenario_code(
    feature_file: Path, features_dir: Path, cache_dir: Path
) -> list[list[tuple[str, tuple[str, ...]]]]:
    """What each scenario of a feature file replays, step by step, as a run finds it: the code
    and the values it takes (none when it takes no parameters)."""
    from prettyplay_behave.behave.liveness import scenario_keys

    store = CacheStore(cache_dir, validate=check_code)
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for key in scenario_keys(feature_file, features_dir):
        entry = store.library(store.path_for(key.test)).find(key)
        assert entry is not None, f"no cache entry for {key}"
        values = key.parameters.values if entry.parameters else ()
        found.setdefault(key.test, []).append((entry.code, values))
    return list(found.values())


def plant(cache_dir: Path, test: str, *entries: tuple[str, str, str]) -> Path:
    """Write ``(kind, sentence, code)`` entries for ``test``, as a generating run would (the
    code policy checks each); the cache file they are in."""
    store = CacheStore(cache_dir, validate=check_code)
    for kind, sentence, code in entries:
        store.write(CacheWrite(CacheKey(test, kind, sentence), code, "generated"))
    return store.path_for(test)
