"""The ``prettyplay`` command: review and keep the cache, the project's step library.

Each command is declared once, in :func:`parser`: its arguments, its help and the function that
runs it (``set_defaults(run=...)``). ``prettyplay --help`` and ``prettyplay COMMAND --help``
say what each does and what its exit status means. Whatever a cache file holds is printed with
its control characters escaped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from .behave.liveness import UnreadableFeature
from .cache import (
    DEFAULT_CACHE_DIR,
    STEPS_FOLDER,
    CacheStore,
    StepEntry,
    files_in,
    library_files,
    load_file,
)
from .cache.schema import notes
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
    taken = [f"takes {', '.join(entry.parameters)}"] if entry.parameters else []
    told = [*taken, *notes(entry)]
    tail = f"  ({'; '.join(told)})" if told else ""
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
    marks = f" ({listed})" if listed else ""
    print(f"library: {counted(steps, 'step')}, {entries}{marks}" + (f", {red} red" if red else ""))
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
    every lock file left in the library folder by a version that locked each file (never
    through a link: the library folder and the cache folder are checked as for any write)."""
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
    # the library is locked as a whole (``.lock`` in the cache folder): a lock file among the
    # steps is one a version that locked each file left; a link is deleted, never its target
    for lock in files_in(cache_dir, cache_dir / STEPS_FOLDER, ".lock"):
        lock.unlink()
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


Run = Callable[[argparse.Namespace], int]


def parser() -> argparse.ArgumentParser:
    """The ``prettyplay`` command line: every command, its arguments and what runs it."""
    top = argparse.ArgumentParser(
        prog="prettyplay",
        description=f"Review and keep the project's step library (the cache, {DEFAULT_CACHE_DIR}).",
        epilog="prettyplay COMMAND --help says more of each command. A cache file that fails "
        "to load stops a command with exit status 1.",
    )
    top.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {_version()}",
        help="show prettyplay's version and exit",
    )
    commands = top.add_subparsers(title="commands", metavar="COMMAND", required=True)

    check_parser = command(
        commands,
        "check",
        "validate cache files with the code policy",
        lambda args: check(args.paths),
        exits="0 when every file and entry passes; 1 when one is refused or no cache file is "
        "found, so it can guard pull requests that touch the cache",
    )
    _paths(check_parser, "PATH", "a cache folder or file")

    cache_parser = command(
        commands,
        "cache",
        "look after the step library: list, prune, drop, migrate, diff",
        about="The step library is one Python file per step in the cache folder's steps/; "
        "older projects have one JSON file per feature, which migrate moves into it.",
    )
    cache_commands = cache_parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    list_parser = command(
        cache_commands,
        "list",
        "the entries of every step file: origin, what narrows them, red ones",
        lambda args: list_entries(args.paths),
        about="Each file of the library (one a step) with its entries, then each old "
        "per-feature file, then the library's totals.",
    )
    _paths(list_parser, "PATH", "a cache folder or file")

    prune_parser = command(
        cache_commands,
        "prune",
        "delete the entries no step of the feature files uses",
        lambda args: prune_obsolete(args.cache_dir, args.features, args.dry_run),
        about="Reads every feature file, as a run reads it, and deletes the entries none of "
        "their steps finds; it shows each (--dry-run shows them and deletes nothing).",
        exits="2 when a feature file cannot be read (nothing is deleted)",
    )
    prune_parser.add_argument(
        "cache_dir",
        nargs="?",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        metavar="CACHE_DIR",
        help=f"the cache folder (default: {DEFAULT_CACHE_DIR})",
    )
    prune_parser.add_argument(
        "--features",
        type=Path,
        metavar="DIR",
        help="the features folder (default: the folder that holds CACHE_DIR)",
    )
    _dry_run(prune_parser)

    drop_parser = command(
        cache_commands,
        "drop",
        "delete the entries of one sentence; the next run writes them again",
        lambda args: drop_sentence(args.cache_dir, args.sentence, args.dry_run),
        exits="1 when no entry has the sentence",
    )
    drop_parser.add_argument(
        "sentence", metavar="SENTENCE", help="the step's sentence, as a feature file has it"
    )
    _cache_dir(drop_parser)
    _dry_run(drop_parser)

    migrate_parser = command(
        cache_commands,
        "migrate",
        "move the per-feature files (formats 1 and 2) into the step library",
        lambda args: migrate(args.paths),
        about="Nothing is lost: an old file is deleted once the library serves all it held.",
    )
    _paths(migrate_parser, "CACHE_DIR", "a cache folder")

    diff_parser = command(
        cache_commands,
        "diff",
        "the code that changed in the cache against a git ref",
        lambda args: diff(args.cache_dir, args.ref),
        exits="0 when nothing changed, 1 when entries did, 2 when it cannot compare (not a git "
        "repository, an unknown ref, a file that fails to load)",
    )
    diff_parser.add_argument(
        "ref", nargs="?", default="HEAD", metavar="REF", help="a git ref (default: HEAD)"
    )
    _cache_dir(diff_parser)

    init_parser = command(
        commands,
        "init",
        "set up a behave project for prettyplay",
        lambda args: init(args.root, args.base_url),
        about="Writes what is missing (environment.py, a steps module, base_url in the behave "
        "config, a sample feature, the files folder, .gitignore lines) and never overwrites.",
        exits="2 when DIR is no folder or the URL is not http(s)",
    )
    init_parser.add_argument(
        "root",
        nargs="?",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="the project folder (default: .)",
    )
    init_parser.add_argument(
        "--base-url",
        default=DEFAULT_BASE_URL,
        metavar="URL",
        help=f"the app under test (default: {DEFAULT_BASE_URL})",
    )

    export_parser = command(
        commands,
        "export",
        "the cache as plain behave step definitions: no prettyplay, no LLM",
        lambda args: export(
            args.target, args.features, args.cache_dir, args.force, files_dir=args.files_dir
        ),
        about="Writes a features folder that runs with behave and Playwright alone.",
        exits="0 when the export is written, a step with no cached code said; 1 when a cache "
        "file or an entry is left out (the rest is written all the same); 2 when DIR is not "
        "empty (without --force), lies in or around the features folder, a link leads out of "
        "what it copies or lies where it writes, or a feature file cannot be read",
    )
    export_parser.add_argument(
        "target", type=Path, metavar="DIR", help="the folder to write (new or empty)"
    )
    export_parser.add_argument(
        "--features",
        type=Path,
        default=Path("features"),
        metavar="DIR",
        help="the features folder (default: features)",
    )
    export_parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="CACHE_DIR",
        help="the cache folder (default: .prettyplay in the features folder)",
    )
    export_parser.add_argument(
        "--files-dir",
        type=Path,
        metavar="DIR",
        help="the uploads' folder (default: files in the features folder)",
    )
    export_parser.add_argument(
        "--force", action="store_true", help="write into a folder that is not empty"
    )

    plan_parser = command(
        commands,
        "plan",
        "what a run would replay, reuse, generate or replay red; no browser",
        plan_run,
        about="Selects the features as behave does (PATH, --tags, --name, --include, "
        "--exclude, -D, the config file of the working directory) and reads each step's code "
        "from the cache, with the LLM requests the run would cost.",
        exits="1 under strict (--strict, the strict setting or a @strict tag) when a step has "
        "no cached code; 2 when behave cannot read the features",
    )
    plan_parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="feature files or folders, as for behave"
    )
    for flags, metavar, what in (
        (("-t", "--tags"), "TAG_EXPRESSION", "behave's tag expression (repeatable)"),
        (("-n", "--name"), "NAME", "only scenarios whose name matches (repeatable)"),
        (("-i", "--include"), "PATTERN", "only feature files matching this pattern"),
        (("-e", "--exclude"), "PATTERN", "no feature files matching this pattern"),
        (("-D", "--define"), "NAME=VALUE", "a userdata value: prettyplay.strict=true (repeatable)"),
    ):
        repeated = flags[1] in ("--tags", "--name", "--define")
        plan_parser.add_argument(
            *flags, action="append" if repeated else "store", metavar=metavar, help=what
        )
    plan_parser.add_argument(
        "--strict", action="store_true", help="plan a strict run: exit 1 when a step needs the LLM"
    )
    return top


def command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    run: Run | None = None,
    about: str = "",
    exits: str = "",
) -> argparse.ArgumentParser:
    """A command: its one-line ``summary`` (in its parent's list), what it does (``about``),
    its exit status beyond 0 (``exits``), and the function that runs it (``run``)."""
    described = f"{summary[0].upper()}{summary[1:]}." + (f" {about}" if about else "")
    added = commands.add_parser(
        name,
        help=summary,
        description=described,
        epilog=f"Exit status: {exits}." if exits else None,
    )
    if run is not None:
        added.set_defaults(run=run)
    return added


def _paths(command: argparse.ArgumentParser, metavar: str, what: str) -> None:
    command.add_argument(
        "paths",
        nargs="*",
        type=Path,
        default=[DEFAULT_CACHE_DIR],
        metavar=metavar,
        help=f"{what} (default: {DEFAULT_CACHE_DIR})",
    )


def _cache_dir(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        metavar="CACHE_DIR",
        help=f"the cache folder (default: {DEFAULT_CACHE_DIR})",
    )


def _dry_run(command: argparse.ArgumentParser) -> None:
    command.add_argument("--dry-run", action="store_true", help="show, delete nothing")


def _version() -> str:
    try:
        return metadata.version("prettyplay-behave")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        run: Run = args.run
        return run(args)
    except CacheError as exc:
        print(f"prettyplay: {exc}", file=sys.stderr)
        return 1
    except (DiffError, ScaffoldError, ConfigError, ExportError, UnreadableFeature) as exc:
        print(f"prettyplay: {escape_controls(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output went to a pager or ``head`` that stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
