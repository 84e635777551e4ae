"""The ``prettyplay`` command: review and keep the cache files.

    prettyplay check [PATH ...]     validate every cache file under PATH with the code policy
    prettyplay cache list [PATH]    the entries of every cache file, with their origins
    prettyplay cache prune [DIR]    delete the entries the last full run did not use
    prettyplay cache diff [REF]     the code that changed in the cache against a git ref
    prettyplay init [DIR]           set up a behave project for prettyplay

PATH and DIR default to ``features/.prettyplay``. ``check`` exits 1 when any file or entry is
refused, so it can guard pull requests that touch the cache. ``prune`` shows what it deletes;
``--dry-run`` only shows it. ``cache diff`` exits 0 when nothing changed, 1 when entries did and
2 when it cannot compare (not a git repository, an unknown ref, a file that fails to load).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from .cache import DEFAULT_CACHE_DIR, OBSOLETE_FILE, CacheKey, load_file, prune
from .cache_diff import DiffError, diff
from .errors import CacheError
from .safety.policy import check_code
from .scaffold import DEFAULT_BASE_URL, ScaffoldError, init


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


def prune_obsolete(cache_dir: Path, dry_run: bool) -> int:
    """Delete the entries listed as obsolete by the last full run (``.obsolete-entries``)."""
    listing = cache_dir / OBSOLETE_FILE
    if not listing.exists():
        print(f"nothing to prune: no full run has listed obsolete entries in {listing}")
        return 0
    by_file: dict[Path, list[CacheKey]] = {}
    for row in json.loads(listing.read_text(encoding="utf-8")):
        key = CacheKey(row["test"], row["kind"], row["sentence"], row["data"], row["occurrence"])
        by_file.setdefault(cache_dir / row["file"], []).append(key)
    for path, keys in by_file.items():
        print(f"{path}:")
        for key in keys:
            print(f"  {key.kind:<6} {key.test.split('::')[-1]}: {key.sentence} #{key.occurrence}")
    count = sum(len(keys) for keys in by_file.values())
    if dry_run:
        print(f"{count} obsolete entries (dry run: nothing deleted)")
        return 0
    for path, keys in by_file.items():
        prune(path, keys, check_code)
    listing.unlink()
    print(f"{count} obsolete entries deleted")
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
    prune_parser = cache_commands.add_parser(
        "prune", help="delete the entries the last full run did not use"
    )
    prune_parser.add_argument("cache_dir", nargs="?", type=Path, default=DEFAULT_CACHE_DIR)
    prune_parser.add_argument("--dry-run", action="store_true", help="show, delete nothing")
    diff_parser = cache_commands.add_parser(
        "diff", help="the code that changed in the cache files against a git ref"
    )
    diff_parser.add_argument("ref", nargs="?", default="HEAD", help="a git ref (default HEAD)")
    diff_parser.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help=f"default {DEFAULT_CACHE_DIR}"
    )
    init_parser = commands.add_parser("init", help="set up a behave project for prettyplay")
    init_parser.add_argument(
        "root", nargs="?", type=Path, default=Path("."), help="the project folder (default .)"
    )
    init_parser.add_argument(
        "--base-url", default=DEFAULT_BASE_URL, help=f"the app under test ({DEFAULT_BASE_URL})"
    )
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CacheError as exc:
        print(f"prettyplay: {exc}", file=sys.stderr)
        return 1
    except (DiffError, ScaffoldError) as exc:
        print(f"prettyplay: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output went to a pager or ``head`` that stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "check":
        return check(args.paths)
    if args.command == "init":
        return init(args.root, args.base_url)
    if args.cache_command == "prune":
        return prune_obsolete(args.cache_dir, args.dry_run)
    if args.cache_command == "diff":
        return diff(args.cache_dir, args.ref)
    return list_entries(args.paths)


if __name__ == "__main__":
    raise SystemExit(main())
