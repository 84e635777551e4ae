"""The ``prettyplay`` command: review and keep the cache files.

    prettyplay check [PATH ...]     validate every cache file under PATH with the code policy
    prettyplay cache list [PATH]    the entries of every cache file, with their origins

PATH defaults to ``features/.prettyplay``. ``check`` exits 1 when any file or entry is refused,
so it can guard pull requests that touch the cache.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from .cache import load_file
from .errors import CacheError
from .safety.policy import check_code

DEFAULT_CACHE_DIR = Path("features") / ".prettyplay"


def cache_files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(path.rglob("*.json"))
        else:
            raise CacheError(f"{path}: no such file or folder")


def check(paths: Sequence[Path]) -> int:
    files = refused = entries = 0
    for path in cache_files(paths):
        files += 1
        try:
            tests = load_file(path, check_code)
        except CacheError as exc:
            refused += 1
            print(f"REFUSED {exc}")
            continue
        entries += sum(len(e) for e in tests.values())
    print(f"{files} cache files, {entries} entries checked, {refused} files refused")
    return 1 if refused or not files else 0


def list_entries(paths: Sequence[Path]) -> int:
    for path in cache_files(paths):
        tests = load_file(path, check_code)
        origins = Counter(entry.origin for entries in tests.values() for entry in entries)
        summary = ", ".join(f"{count} {origin}" for origin, count in sorted(origins.items()))
        print(f"{path}: {summary or 'no entries'}")
        for test, entries in tests.items():
            print(f"  {test}")
            for entry in entries:
                occurrence = f" #{entry.key.occurrence}" if entry.key.occurrence > 1 else ""
                print(f"    {entry.key.kind:<6} {entry.origin:<9} {entry.key.sentence}{occurrence}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prettyplay", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check_parser = commands.add_parser("check", help="validate cache files with the code policy")
    check_parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_CACHE_DIR])
    cache_parser = commands.add_parser("cache", help="look after the cache files")
    cache_commands = cache_parser.add_subparsers(dest="cache_command", required=True)
    list_parser = cache_commands.add_parser("list", help="entries per feature, with origins")
    list_parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_CACHE_DIR])
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return check(args.paths)
        return list_entries(args.paths)
    except CacheError as exc:
        print(f"prettyplay: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
