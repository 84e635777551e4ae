"""The ``prettyplay`` command: review and keep the cache, the project's step library.

    prettyplay check [PATH ...]          validate every cache file under PATH with the code policy
    prettyplay cache list [PATH]         the entries of every library file (a step each) and old
                                         per-feature file: origin, reach, red ones
    prettyplay cache prune [DIR]         delete the entries no step of the feature files uses
    prettyplay cache drop SENTENCE       delete the entries of one sentence (the next run writes
                                         them again)
    prettyplay cache migrate [DIR]       move the per-feature files of formats 1 and 2 into the
                                         project's step library
    prettyplay cache diff [REF]          the code that changed in the cache against a git ref
    prettyplay init [DIR]                set up a behave project for prettyplay
    prettyplay export DIR [--force]      the cache as plain behave step definitions in DIR,
                                         to run with behave and Playwright alone (no LLM)
    prettyplay plan [PATH ...] [--tags ...] [--strict]
                                         what a run would replay, reuse, generate or replay
                                         red, and the LLM requests that would cost; no browser

PATH and DIR default to ``features/.prettyplay``; ``prune`` reads the feature files of the folder
that holds the cache folder (``--features`` names another). ``check`` exits 1 when any file or
entry is refused, so it can guard pull requests that touch the cache. ``prune`` and ``drop``
show what they delete (``--dry-run`` only shows it); ``drop`` exits 1 when no entry has the
sentence. ``cache diff`` exits 0 when nothing changed, 1 when entries did and 2 when it cannot
compare (not a git repository, an unknown ref, a file that fails to load). ``plan`` selects the
features as behave does (PATH, ``--tags``, ``--name``, ``--include``, ``--exclude``, ``-D``, the
config file of the working directory) and exits 1 under strict (``--strict``, the ``strict``
setting or a ``@strict`` tag) when a step has no cached code, 2 when behave cannot read the
features. ``export`` reads ``features/`` (``--features`` names another) and exits 1 when a cache
file fails to load, an entry's function would not be its cached code (each named and left out)
or a step of the features has no cached code (the rest is written all the same), 2 when DIR is
not empty (without ``--force``), lies in or around the features folder, or when a link leads
out of what it copies or lies where it writes. No command goes through a symbolic link in the
cache (it stops, naming it: exit 1, and 2 for ``cache diff``). Whatever a cache file
holds is printed with its control characters escaped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from .cache import (
    DEFAULT_CACHE_DIR,
    STEPS_FOLDER,
    CacheStore,
    StepEntry,
    files_in,
    library_files,
    load_file,
)
from .cache_diff import DiffError, diff
from .errors import CacheError, ConfigError, escape_controls
from .export import ExportError, export
from .parameters import parameterize
from .safety.step_code import check_code
from .scaffold import DEFAULT_BASE_URL, ScaffoldError, init
from .vocabulary import counted


def cache_files(paths: Sequence[Path]) -> Iterator[Path]:
    """The library files (``.py``) and old per-feature files (``.json``) under each path; a
    CacheError when a folder named or met is a symbolic link (a file that is one is listed, and
    its read refuses it by name)."""
    for path in paths:
        if path.is_dir():
            yield from files_in(path, path, ".py", deep=True)
            yield from files_in(path, path, ".json", deep=True)
        elif path.is_file() or path.is_symlink():
            yield path
        else:
            raise CacheError(f"{path}: no such file or folder")


def check(paths: Sequence[Path]) -> int:
    files = refused = entries = 0
    for path in cache_files(paths):
        files += 1
        try:
            library = load_file(path, check_code)
        except CacheError as exc:
            refused += 1
            print(f"REFUSED {exc}")
            continue
        entries += len(library.entries)
    checked = f"{counted(files, 'cache file')}, {counted(entries, 'entry')} checked"
    print(f"{checked}, {counted(refused, 'file')} refused")
    return 1 if refused or not files else 0


def describe(entry: StepEntry) -> str:
    """One line of ``cache list``: kind, origin, sentence, and what narrows or marks it."""
    notes = []
    if entry.parameters:
        notes.append(f"takes {', '.join(entry.parameters)}")
    if entry.values is not None:
        notes.append(f"for {', '.join(map(repr, entry.values))}")
    if entry.scenario is not None:
        occurrence = f" #{entry.occurrence}" if entry.occurrence > 1 else ""
        notes.append(f"pinned to {entry.scenario!r}{occurrence} of {entry.feature}")
    elif entry.feature:
        notes.append(f"only {entry.feature}")
    if entry.wordings:
        notes.append(f"also {', '.join(map(repr, entry.wordings))}")
    if entry.verdict is not None:
        notes.append(f"RED: {entry.verdict.label}: {entry.verdict.explanation}")
    tail = f"  ({'; '.join(notes)})" if notes else ""
    return escape_controls(f"    {entry.kind:<6} {entry.origin:<9} {entry.sentence}{tail}")


def list_entries(paths: Sequence[Path]) -> int:
    """Per file of the library (a step each), then per old per-feature file: its entries."""
    total: Counter[str] = Counter()
    steps = red = 0
    for path in cache_files(paths):
        library = load_file(path, check_code)
        origins = Counter(entry.origin for entry in library.entries)
        total += origins
        steps += path.suffix == ".py"
        red += sum(entry.red for entry in library.entries)
        summary = ", ".join(f"{count} {origin}" for origin, count in sorted(origins.items()))
        flagged = sum(entry.red for entry in library.entries)
        old = "" if path.suffix == ".py" else OLD_FORMAT.format(format=library.format)
        head = f"{path}: {summary or 'no entries'}" + (f", {flagged} red" if flagged else "")
        print(escape_controls(head + old))
        for entry in library.entries:
            print(describe(entry))
    listed = ", ".join(f"{count} {origin}" for origin, count in sorted(total.items()))
    entries = counted(sum(total.values()), "entry")
    print(f"library: {counted(steps, 'step')}, {entries}" + (f" ({listed})" if listed else ""))
    return 0


OLD_FORMAT = " (format {format}, one feature's: prettyplay cache migrate moves it into the library)"


def _by_file(store: CacheStore, entries: Sequence[StepEntry], note: str = "") -> None:
    """Print ``entries`` under the library file of each, each with ``note``."""
    files: dict[Path, list[StepEntry]] = {}
    for entry in entries:
        files.setdefault(store.path_of(entry), []).append(entry)
    for path, held in sorted(files.items()):
        print(escape_controls(f"{path}:"))
        for entry in held:
            print(describe(entry) + note)


def prune_obsolete(cache_dir: Path, features_dir: Path | None, dry_run: bool) -> int:
    """Delete the entries no step of the feature files finds (liveness from the features), and
    the lock files left in the library folder of files that are gone (never through a link:
    the library folder and the cache folder are checked as for any write)."""
    from .behave.liveness import obsolete

    features = features_dir or cache_dir.parent
    if not features.is_dir():
        raise CacheError(f"{features}: no features folder to read (name one with --features)")
    store = CacheStore(cache_dir, check_code)
    dead = [found.entry for found in obsolete(store, features)]
    _by_file(store, dead)
    if dry_run:
        print(f"{counted(len(dead), 'obsolete entry')} (dry run: nothing deleted)")
        return 0
    store.drop(dead)
    for lock in files_in(cache_dir, cache_dir / STEPS_FOLDER, ".lock"):
        if not os.path.lexists(str(lock).removesuffix(".lock")):
            lock.unlink()  # a link is deleted, never what it points to
    print(f"{counted(len(dead), 'obsolete entry')} deleted (steps of {features} read)")
    return 0


def drop_sentence(cache_dir: Path, sentence: str, dry_run: bool) -> int:
    """Delete every entry of ``sentence`` (as a template, or as written), and the wording it
    is of another entry: its next run writes the step again."""
    template = parameterize(sentence).template
    store = CacheStore(cache_dir, check_code)
    entries = store.library().entries
    doomed = [e for e in entries if e.sentence in (template, sentence)]
    reworded = [
        replace(e, wordings=tuple(w for w in e.wordings if w not in (template, sentence)))
        for e in entries
        if e not in doomed and {template, sentence} & set(e.wordings)
    ]
    _by_file(store, doomed)
    _by_file(store, reworded, f"  (no longer worded {template!r})")
    if (doomed or reworded) and not dry_run:
        store.keep(reworded, doomed)
    gone = [
        counted(n, noun) for n, noun in ((len(doomed), "entry"), (len(reworded), "wording")) if n
    ]
    verb = "would be deleted (dry run)" if dry_run else "deleted"
    print(f"{' and '.join(gone) or '0 entries'} of {sentence!r} {verb}")  # repr escapes
    return 0 if gone else 1


def migrate(cache_dirs: Sequence[Path]) -> int:
    """Move the entries of every per-feature file (formats 1 and 2) into the project's library,
    nothing lost; the old files are deleted once the library serves all they held."""
    migrated = 0
    for cache_dir in cache_dirs:
        if not cache_dir.is_dir():
            raise CacheError(f"{cache_dir}: no such cache folder")
        store = CacheStore(cache_dir, check_code)
        for path in store.migrate():
            print(escape_controls(f"{path}: moved into the library {store.library_dir}"))
            migrated += 1
        entries = counted(len(store.library().entries), "entry")
        steps = counted(len(library_files(cache_dir)), "file")
        print(escape_controls(f"{store.library_dir}: {entries} in {steps}"))
    print(f"{counted(migrated, 'file')} migrated")
    return 0


def plan_run(args: argparse.Namespace) -> int:
    """``prettyplay plan``: behave's own options handed to behave's own parser."""
    from .behave.plan import PlanError, plan

    behave_args = list(args.paths)
    for option, values in (
        ("--tags", args.tags),
        ("--name", args.name),
        ("--define", args.define),
        ("--include", [args.include] if args.include else None),
        ("--exclude", [args.exclude] if args.exclude else None),
    ):
        for value in values or []:
            behave_args += [option, value]
    try:
        return plan(behave_args, args.strict, sys.stdout)
    except PlanError as exc:
        print(f"prettyplay plan: {exc}", file=sys.stderr)
        return 2


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
        "prune", help="delete the entries no step of the feature files uses"
    )
    prune_parser.add_argument("cache_dir", nargs="?", type=Path, default=DEFAULT_CACHE_DIR)
    prune_parser.add_argument(
        "--features", type=Path, default=None, help="the features folder (default: the cache's)"
    )
    prune_parser.add_argument("--dry-run", action="store_true", help="show, delete nothing")
    drop_parser = cache_commands.add_parser(
        "drop", help="delete the entries of one sentence; the next run writes them again"
    )
    drop_parser.add_argument("sentence", help="the step's sentence, as a feature file has it")
    drop_parser.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help=f"default {DEFAULT_CACHE_DIR}"
    )
    drop_parser.add_argument("--dry-run", action="store_true", help="show, delete nothing")
    migrate_parser = cache_commands.add_parser(
        "migrate", help="move the per-feature files (formats 1 and 2) into the library"
    )
    migrate_parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_CACHE_DIR])
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
    export_parser = commands.add_parser(
        "export", help="the cache as plain behave step definitions: no prettyplay, no LLM"
    )
    export_parser.add_argument("target", type=Path, help="the folder to write (new or empty)")
    export_parser.add_argument(
        "--features", type=Path, default=Path("features"), help="the features folder (features)"
    )
    export_parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default <features>/.prettyplay"
    )
    export_parser.add_argument(
        "--files-dir",
        type=Path,
        default=None,
        help="the uploads' folder, when it is not <features>/files",
    )
    export_parser.add_argument(
        "--force", action="store_true", help="write into a folder that is not empty"
    )
    plan_parser = commands.add_parser(
        "plan", help="what a run would replay, reuse, generate or replay red; no browser"
    )
    plan_parser.add_argument("paths", nargs="*", help="feature files or folders, as for behave")
    for flags, what in (
        (("-t", "--tags"), "behave's tag expression (repeatable)"),
        (("-n", "--name"), "only scenarios whose name matches (repeatable)"),
        (("-i", "--include"), "only feature files matching this pattern"),
        (("-e", "--exclude"), "no feature files matching this pattern"),
        (("-D", "--define"), "a userdata value, e.g. -D prettyplay.cache_dir=… (repeatable)"),
    ):
        repeated = flags[1] in ("--tags", "--name", "--define")
        plan_parser.add_argument(*flags, action="append" if repeated else "store", help=what)
    plan_parser.add_argument(
        "--strict", action="store_true", help="plan a strict run: exit 1 when a step needs the LLM"
    )
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CacheError as exc:
        print(f"prettyplay: {exc}", file=sys.stderr)
        return 1
    except (DiffError, ScaffoldError, ConfigError, ExportError) as exc:
        print(f"prettyplay: {escape_controls(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output went to a pager or ``head`` that stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "check":
        return check(args.paths)
    if args.command == "init":
        return init(args.root, args.base_url)
    if args.command == "plan":
        return plan_run(args)
    if args.command == "export":
        return export(
            args.target, args.features, args.cache_dir, args.force, files_dir=args.files_dir
        )
    if args.cache_command == "prune":
        return prune_obsolete(args.cache_dir, args.features, args.dry_run)
    if args.cache_command == "drop":
        return drop_sentence(args.cache_dir, args.sentence, args.dry_run)
    if args.cache_command == "migrate":
        return migrate(args.paths)
    if args.cache_command == "diff":
        return diff(args.cache_dir, args.ref)
    return list_entries(args.paths)


if __name__ == "__main__":
    raise SystemExit(main())
