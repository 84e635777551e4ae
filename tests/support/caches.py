"""The cache in tests: entries planted as a generating run would write them, and the entries
of the project's step library read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, StepEntry
from prettyplay_behave.cache.source import order
from prettyplay_behave.safety.step_code import check_code


def steps(cache_dir: Path, feature: str | None = None) -> list[dict[str, Any]]:
    """The entries of the library under ``cache_dir`` (every file loads), in the order of its
    files, each as its fields (code and data as lines, as format 2 had them): all of them, or
    those a scenario of ``feature`` may find (the project's, the feature's own, its pins)."""
    store = CacheStore(cache_dir, validate=check_code)
    assert not store.broken(), store.broken()
    entries = sorted(store.library().entries, key=order)
    return [fields(e) for e in entries if feature is None or e.feature in ("", feature)]


def fields(entry: StepEntry) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "code": entry.code.rstrip("\n").split("\n"),
        "kind": entry.kind,
        "origin": entry.origin,
        "sentence": entry.sentence,
    }
    optional: dict[str, Any] = {
        "data": entry.data.split("\n") if entry.data else None,
        "parameters": list(entry.parameters) or None,
        "values": list(entry.values) if entry.values is not None else None,
        "feature": entry.feature or None,
        "scenario": entry.scenario,
        "occurrence": entry.occurrence if entry.scenario is not None else None,
        "model": entry.model or None,
        "written": entry.written or None,
        "verdict": {k: v for k, v in vars(entry.verdict).items() if v} if entry.verdict else None,
        "wordings": list(entry.wordings) or None,
    }
    raw.update({name: value for name, value in optional.items() if value is not None})
    return raw


def filled(entry: dict[str, Any]) -> str:
    """The entry's sentence with its values put back (for an entry specific to values)."""
    sentence = entry["sentence"]
    for value in entry.get("values", []):
        sentence = sentence.replace("{}", value, 1)
    return sentence


def by_sentence(cache_dir: Path, feature: str | None = None) -> dict[str, dict[str, Any]]:
    """The entries that serve every scenario (of ``feature``), by their sentence (values put
    back)."""
    return {filled(e): e for e in steps(cache_dir, feature) if "scenario" not in e}


def codes(cache_dir: Path) -> list[tuple[str, str]]:
    """Every entry of the library under ``cache_dir``: its sentence (values put back) and its
    code as one text."""
    return [(filled(e), "\n".join(e["code"]) + "\n") for e in steps(cache_dir)]


def scenario_code(
    feature_file: Path, features_dir: Path, cache_dir: Path
) -> list[list[tuple[str, tuple[str, ...]]]]:
    """What each scenario of a feature file replays, step by step, as a run finds it: the code
    and the values it takes (none when it takes no parameters)."""
    from prettyplay_behave.behave.liveness import scenario_keys

    store = CacheStore(cache_dir, validate=check_code)
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for key in scenario_keys(feature_file, features_dir):
        entry = store.library().find(key)
        assert entry is not None, f"no cache entry for {key}"
        values = key.parameters.values if entry.parameters else ()
        found.setdefault(key.test, []).append((entry.code, values))
    return list(found.values())


def plant(
    cache_dir: Path,
    test: str,
    *entries: tuple[str, str, str],
    origin: str = "generated",
    pinned: bool = False,
) -> Path:
    """Write ``(kind, sentence, code)`` entries for ``test``, as a run would write code of
    ``origin`` (pinned to the test's scenario with ``pinned``; the code policy checks each);
    ``cache_dir``, for the run that reads them."""
    store = CacheStore(cache_dir, validate=check_code)
    for kind, sentence, code in entries:
        store.write(CacheWrite(CacheKey(test, kind, sentence), code, origin, pinned))
    return cache_dir


def cache_bytes(cache_dir: Path) -> dict[str, bytes]:
    """Every cache file under ``cache_dir`` (library files and old per-feature ones, no locks),
    by its path there: equal before and after a run that wrote nothing."""
    found = [*cache_dir.rglob("*.py"), *cache_dir.rglob("*.json")]
    return {str(path.relative_to(cache_dir)): path.read_bytes() for path in sorted(found)}


def cache_text(cache_dir: Path) -> str:
    """All the cache's files as one text, to look for what must never be in it."""
    return "\n".join(raw.decode("utf-8") for raw in cache_bytes(cache_dir).values())
