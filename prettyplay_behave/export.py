"""``prettyplay export DIR``: the cache as plain behave step definitions, run without prettyplay.

DIR becomes a behave features folder a team can keep: the feature files (and the other files of
the features folder, but its cache, ``steps/`` and ``environment.py``), ``steps/`` with a step
definition per kind and sentence template (``exported_steps.py``), the names step code was
given, in plain Playwright (``step_support.py``) and the step address (``step_address.py``: the
package's own :mod:`.address`, copied as it is), and an ``environment.py`` that launches
Chromium with a fresh context and page per scenario. behave, parse and Playwright are all it
needs; no LLM, no prettyplay.

One step definition serves every entry of its (kind, template): it picks the entry with the
lookup a run uses (the pin of the scenario and occurrence, then the feature's own entries, then
the shared ones; an entry of the step's values before the general one), so one template is one
pattern and behave sees no ambiguity. Actions match under Given and When, checks under Then. A
red entry's code runs like any other, its verdict a comment above its function. The copied
feature files lose their steps' ``[tries=...]`` annotations (behave would read them as part of
the sentence) and a ``@prettyplay.storage_state`` tag names its file relative to DIR. Each
function is the cached code byte for byte but its name and its uploads, checked as written; a
cache file that fails to load and an entry whose function would not be its code are left out by
name, and the rest is written. What the export leaves behind (healing, bounds, settle polling,
the report) is in docs/export.md.
"""

from __future__ import annotations

import ast
import contextlib
import json
import keyword
import os
import re
import secrets
import shutil
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

from . import address
from .behave.liveness import scenarios_in, step_keys
from .behave.mapping import split_annotation
from .cache import CACHE_FOLDER, STEPS_FOLDER, CacheStore, Library, StepEntry, file_name, today
from .cache.source import LINE_BREAK
from .errors import CacheError, escape_controls
from .parameters import MARK, named_by
from .resources import templates_folder
from .safety.links import first_link, leaves, points_to
from .safety.step_code import check_code, step_code
from .vocabulary import Kind, counted

STEPS_MODULE = "exported_steps.py"
FILES_FOLDER = "files"  # beside the features, where step code's uploads come from
SUPPORT_MODULE = "step_support.py"
ADDRESS_MODULE = "step_address.py"  # the address module, under the name the support imports
# What the support module gives the step definitions (its ``__all__``).
SUPPORTED = frozenset(
    ["Entry", "Number", "Quoted", "expect", "re", "recall", "remember", "run", "secret", "upload"]
)
# What of the features folder belongs to prettyplay and is not copied (nor is a hidden file,
# the cache's folder among them, or Python's caches).
LEFT_OUT = ("steps", "environment.py")
# The parse types of a sentence's parameters, as the support module defines them.
TYPE_PATTERNS = {"Quoted": r'(?:[^"\\\n]|\\.)*', "Number": r"-?\d+(?:\.\d+)?"}
_NUMBER = re.compile(TYPE_PATTERNS["Number"])
_STORAGE_TAG = re.compile(r"(@prettyplay\.storage_state=)(\S+)")


class ExportError(Exception):
    """The export cannot start: the target, files or features folder is wrong (exit status 2;
    a feature file that cannot be read is an ``UnreadableFeature``, also 2)."""


def entries(cache_dir: Path) -> tuple[list[tuple[str, StepEntry]], list[CacheError]]:
    """Every entry of the project's step library with the feature file it is kept for ("" for
    an entry every feature shares), and the errors of the cache files that fail to load (a run
    replays none of their entries either); the one place the export reads the cache's storage.
    A test of the Python API's own entries are left out: no feature file runs them."""
    if not cache_dir.is_dir():
        return [], []
    store = CacheStore(cache_dir, check_code)
    broken = list(store.broken().values())
    found = [
        (entry.feature, entry)
        for entry in store.library().entries
        if not entry.feature or entry.feature.endswith(".feature")
    ]
    return found, broken


# -- the step definitions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One parameter of a template in a parse pattern: its name and its type (``Quoted`` for a
    quoted string, ``Number`` for a number, none for an Outline placeholder)."""

    name: str
    type: str = ""

    @property
    def spelled(self) -> str:
        return f"{{{self.name}:{self.type}}}" if self.type else f"{{{self.name}}}"


@dataclass
class Variant:
    """One code of a template: an entry, and the features it is kept for (none: every
    feature shares it)."""

    entry: StepEntry
    function: str
    features: list[str] = field(default_factory=list)
    members: list[StepEntry] = field(default_factory=list)  # the entries of its code
    text: str = ""  # its function as the steps module has it
    refused: str = ""  # why its function cannot be exported, when it cannot


@dataclass
class Definition:
    """The step definition of one (kind, template)."""

    kind: str
    template: str
    name: str  # of its code's function (numbered when it has several)
    function: str  # of the step definition's function
    fields: list[Field]
    variants: list[Variant] = field(default_factory=list)  # those it exports
    refused: list[Variant] = field(default_factory=list)  # those left out, and why

    @property
    def pattern(self) -> str:
        pieces = self.template.split(MARK)
        spelled = [f.spelled for f in self.fields] + [""]
        escaped = [p.replace("{", "{{").replace("}", "}}") for p in pieces]
        return "".join(p + s for p, s in zip(escaped, spelled, strict=True))

    @property
    def keywords(self) -> tuple[str, ...]:
        return ("then",) if self.kind == Kind.CHECK else ("given", "when")

    def matches_pattern_of(self, other: Definition) -> bool:
        """Whether this pattern matches the other's text, as behave checks a new pattern
        against the earlier ones of its keyword (an AmbiguousStep when it does)."""
        if self.pattern == other.pattern:
            return True
        return self.parser.parse(other.pattern) is not None

    @cached_property
    def parser(self) -> Any:
        import parse

        types = {name: _typed(pattern) for name, pattern in TYPE_PATTERNS.items()}
        return parse.Parser(self.pattern, extra_types=types, case_sensitive=True)


def _typed(pattern: str) -> Any:
    import parse

    return parse.with_pattern(pattern)(lambda text: text)


def registration_order(made: list[Definition]) -> list[Definition]:
    """Each keyword's definitions, a narrower pattern before a wider one that matches its text:
    behave refuses a pattern an earlier one matches, and runs a step with the first pattern
    that matches it."""
    ordered: list[Definition] = []
    for kind in (Kind.ACTION, Kind.CHECK):
        waiting = sorted((d for d in made if d.kind == kind), key=lambda d: d.template)
        narrower = {
            id(d): [o for o in waiting if o is not d and d.matches_pattern_of(o)] for d in waiting
        }
        while waiting:
            placed = {id(d) for d in ordered}
            ready = (d for d in waiting if all(id(o) in placed for o in narrower[id(d)]))
            # patterns that match each other's text: behave will say which at start
            narrowest = next(ready, waiting[0])
            ordered.append(narrowest)
            waiting.remove(narrowest)
    return ordered


def definitions(found: Iterable[tuple[str, StepEntry]]) -> list[Definition]:
    """The step definitions of the entries, in the order they are written. A code whose
    function would not be the cached code (see :func:`unfaithful`) is left out of its
    definition, and kept in its ``refused``; a definition left with no code is not written."""
    grouped: dict[tuple[str, str], list[tuple[str, StepEntry]]] = {}
    for feature, entry in found:
        grouped.setdefault((entry.kind, entry.sentence), []).append((feature, entry))
        for wording in entry.wordings:
            grouped.setdefault((entry.kind, wording), []).append((feature, entry))
    # the names the steps module imports or defines besides its functions
    taken = {*SUPPORTED, "given", "when", "then", "register_type"}
    made = []
    for (kind, template), members in grouped.items():
        name = _unique(_slug(template), taken)
        function = _unique(f"step_{name}", taken)
        fields = fields_of(template, [e for _, e in members])
        definition = Definition(kind, template, name, function, fields)
        by_code: dict[tuple[object, ...], Variant] = {}
        for feature, entry in members:
            same = (entry.code, entry.verdict, *entry.identity[2:])
            if same not in by_code:
                by_code[same] = Variant(entry, name)
            by_code[same].members.append(entry)
            if feature and feature not in by_code[same].features:
                by_code[same].features.append(feature)
        variants = list(by_code.values())
        if len(variants) > 1:
            for number, variant in enumerate(variants, 1):
                variant.function = _unique(f"{name}_{number}", taken)
        for variant in variants:
            variant.text = plain_code(variant.entry.code, variant.function)
            variant.refused = unfaithful(variant.text, variant.entry.code, variant.function)
        definition.variants = [v for v in variants if not v.refused]
        definition.refused = [v for v in variants if v.refused]
        made.append(definition)
    return registration_order(made)


def fields_of(template: str, members: list[StepEntry]) -> list[Field]:
    """The fields of a template's pattern, named as the general entry's code names them."""
    count = template.count(MARK)
    named = next((e.parameters for e in members if len(e.parameters) == count), ())
    pieces = template.split(MARK)
    made: list[Field] = []
    taken = {"context"}
    for index in range(count):
        quoted = pieces[index].endswith('"') and pieces[index + 1].startswith('"')
        known = [e.values[index] for e in members if e.values is not None]
        if quoted:  # named as the sentence names it (``the "{}" field``: field)
            kind, base = "Quoted", named_by(pieces[index], pieces[index + 1])
        elif known and all(_NUMBER.fullmatch(value) for value in known):
            kind, base = "Number", "number"
        else:  # an Outline placeholder: any text
            kind, base = "", "value"
        made.append(Field(_unique(named[index] if named else base, taken), kind))
    return made


def _slug(text: str) -> str:
    """A function name of a sentence's words (``step`` for one without words)."""
    words = re.sub(r"[^0-9a-zA-Z]+", " ", text.replace(MARK, " ")).lower().split()
    slug = "_".join(words)[:60].rstrip("_") or "step"
    if slug[0].isdigit():
        return f"step_{slug}"
    return f"{slug}_" if keyword.iskeyword(slug) else slug


def _unique(name: str, taken: set[str]) -> str:
    chosen, number = name, 2
    while chosen in taken:
        chosen, number = f"{name}_{number}", number + 1
    taken.add(chosen)
    return chosen


def plain_code(code: str, name: str) -> str:
    """A cached ``def step(page, ...)`` as a module function ``name``, each file it uploads
    named through ``upload`` (prettyplay took a bare name from its files folder). The places
    are Python's own: the ``def`` of the tree and the name token after it (wherever comments,
    blank lines or spaces put them), lines that end at a line break the parser counts (a U+2028
    or U+001C in a string or a comment ends none)."""
    read, lines = step_code(code), _Lines(code)
    edits: list[tuple[int, int, str]] = []
    named = _name_of(lines, read.step) if read.step is not None else None
    if named is not None:
        edits.append((*named, name))
    for files in _uploads(read.tree):
        start, end = lines.span(files)
        edits += [(start, start, "upload("), (end, end, ")")]
    return _edited(code, edits)


def unfaithful(text: str, code: str, name: str) -> str:
    """Why ``text``, a function the export writes, is not the cached ``code`` renamed ``name``
    with its uploads named through ``upload``; "" when it is. It must parse, define ``name`` and
    nothing else, and give back ``code`` byte for byte once the rename and the wrapping are
    undone where its own tree and tokens find them (not where the export put them). Bytes, not
    trees: a tree leaves out the comments and the layout a team keeps, and a cut in the wrong
    place inside a string or a comment can still parse."""
    read = step_code(text)
    if read.tree is None:
        return f"it does not parse ({read.unparsed})"
    body = read.tree.body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or body[0].name != name:
        return f"it does not define the one function {name}"
    lines = _Lines(text)
    named = _name_of(lines, body[0])
    if named is None or text[named[0] : named[1]] != name:
        return f"the name {name} is not written after its def"
    edits = [(*named, "step")]
    for files in _uploads(read.tree):
        wrapped = (
            isinstance(files, ast.Call)
            and isinstance(files.func, ast.Name)
            and files.func.id == "upload"
            and len(files.args) == 1
            and not files.keywords
        )
        if not wrapped:
            return f"a file it uploads is not named through upload ({ast.unparse(files)})"
        assert isinstance(files, ast.Call)
        (start, end), (inner, inner_end) = lines.span(files), lines.span(files.args[0])
        if (text[start:inner], text[inner_end:end]) != ("upload(", ")"):
            return f"a file it uploads is not named through upload ({ast.unparse(files)})"
        edits += [(start, inner, ""), (inner_end, end, "")]
    if _edited(text, edits) != code:
        return "it differs from the cached code in more than its name and its uploads"
    return ""


class _Lines:
    r"""The lines of a text as Python's parser counts them (``\r\n``, ``\r`` or ``\n`` ends
    one; ``str.splitlines`` would also end one at U+2028, U+001C and the like), and the place in
    the text of a position of its tree (whose columns count UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(found.end() for found in LINE_BREAK.finditer(text))]

    def lines(self) -> list[str]:
        ends = [*self.starts[1:], len(self.text)]
        return [
            self.text[start:end]
            for start, end in zip(self.starts, ends, strict=True)
            if end > start
        ]

    def at(self, line: int, column: int) -> int:
        start = self.starts[line - 1]
        return start + len(self.text[start : start + column].encode()[:column].decode())

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset)


def _name_of(lines: _Lines, function: ast.FunctionDef) -> tuple[int, int] | None:
    """Where the name of ``function`` is written: the token after the ``def`` of its line (a
    line continuation may stand between); None where the tokens cannot be read."""
    pending = iter(lines.lines())
    tokens = tokenize.generate_tokens(lambda: next(pending, ""))
    try:
        for token in tokens:
            if token.string == "def" and token.start[0] == function.lineno:
                name = next(tokens)
                (row, column), (end_row, end_column) = name.start, name.end
                return lines.starts[row - 1] + column, lines.starts[end_row - 1] + end_column
    except (tokenize.TokenError, SyntaxError):
        pass
    return None


def _edited(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end) span replaced by its text; the spans do not overlap (an
    upload nested in another's argument is two insertions inside the other's two)."""
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _uploads(tree: ast.Module | None) -> list[ast.expr]:
    found = (_uploaded(node) for node in ast.walk(tree)) if tree is not None else ()
    return [files for files in found if files is not None]


def _uploaded(node: ast.AST) -> ast.expr | None:
    """The files argument of a ``set_input_files`` call: the page's takes a selector first."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr != "set_input_files":
        return None
    for argument in node.keywords:
        if argument.arg == "files":
            return argument.value
    on_page = isinstance(node.func.value, ast.Name) and node.func.value.id == "page"
    index = 1 if on_page else 0
    return node.args[index] if len(node.args) > index else None


def steps_module(made: list[Definition]) -> str:
    """The text of ``steps/exported_steps.py``."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_folder()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["py"] = python_literal
    environment.filters["comment"] = one_line
    environment.filters["tuple"] = tuple
    environment.filters["names"] = lambda names: python_literal(tuple(names)).replace('"', "")
    return environment.get_template("export/exported_steps.py.j2").render(
        definitions=made,
        day=today(),
        provided=provided_names(made),
        types=sorted({f.type for d in made for f in d.fields if f.type}),
    )


def one_line(text: str) -> str:
    """``text`` for a comment: a line break in it would end the comment and start code."""
    return escape_controls(text).replace("\r", "\\r").replace("\n", "\\n")


def python_literal(value: object) -> str:
    """A string or a tuple of strings as Python source, in double quotes as the code has them."""
    if isinstance(value, tuple):
        items = [python_literal(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, str):
        if '"' in value and "'" not in value:
            return repr(value)
        spelled = json.dumps(value, ensure_ascii=False)
        return spelled if ast.literal_eval(spelled) == value else repr(value)
    return repr(value)


def provided_names(made: list[Definition]) -> list[str]:
    """The names of the support module that the exported code uses."""
    used = {"Entry", "run"}
    for definition in made:
        used.update(f.type for f in definition.fields if f.type)
        for variant in definition.variants:
            tree = step_code(variant.text).tree  # the function as written: uploads named
            nodes = ast.walk(tree) if tree is not None else ()
            used.update(node.id for node in nodes if isinstance(node, ast.Name))
    return sorted(used & SUPPORTED)


# -- the feature files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Copied:
    """A file or folder the export copies: where it is read (``source``, through the links
    inside its folder that lead to it) and where it goes in DIR (``relative``)."""

    source: Path
    relative: Path
    folder: bool = False
    feature: bool = False  # a feature file, copied as plain behave reads it


def to_copy(folder: Path, into: Path = Path(), everything: bool = False) -> list[Copied]:
    """What the export copies of ``folder`` into ``into`` of DIR, a folder before what it
    holds; of the features folder (unless ``everything``) all but prettyplay's own parts, hidden
    names and Python's caches. A link is followed where what it reaches stays inside ``folder``,
    as an upload's name may be; one that leads out of it, or back into a folder it lies in,
    stops the export with an ExportError naming it, before anything is read or written."""
    return list(_walk(folder, folder, into, {folder.resolve()}, everything))


def _walk(
    root: Path, folder: Path, into: Path, inside: set[Path], everything: bool
) -> Iterable[Copied]:
    for name in sorted(os.listdir(folder)):
        path, relative = folder / name, into / name
        if not everything and (name.startswith(".") or name == "__pycache__"):
            continue
        if not everything and folder == root and name in LEFT_OUT:
            continue
        if path.is_symlink() and leaves(root, path):
            raise ExportError(
                f"{path}: a symbolic link out of {root} (to {points_to(path)}); the export "
                "copies nothing through one, as prettyplay's uploads refuse it: delete the link, "
                "or put the file itself there"
            )
        if path.is_dir():
            real = path.resolve()
            if real in inside:
                raise ExportError(
                    f"{path}: a symbolic link back into a folder it lies in (to "
                    f"{points_to(path)}); the export would copy it for ever: delete the link"
                )
            yield Copied(path, relative, folder=True)
            yield from _walk(root, path, relative, inside | {real}, everything)
        elif path.is_file():
            yield Copied(path, relative, feature=not everything and name.endswith(".feature"))


def refuse_links(target: Path, relatives: Iterable[Path]) -> None:
    """An ExportError before anything is written when DIR itself, a folder in it on the way to
    a file the export writes, or that file is a symbolic link (a kept DIR may hold one a pull
    request planted): the export never writes through one."""
    for relative in relatives:
        link = first_link(target, target / relative)
        if link is not None:
            what = "the export folder" if link == target else "a file or folder the export writes"
            raise ExportError(
                f"{link}: {what} is a symbolic link (to {points_to(link)}); the export never "
                "writes through one: delete the link"
            )


def write_file(destination: Path, content: bytes, like: Path | None = None) -> None:
    """Write a file of the export: a new file beside it (its mode and times those of ``like``),
    renamed over the name. A name that was a hard link is a file of its own afterwards, and the
    file it shared is not written."""
    temp = destination.with_name(f".{destination.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(fd, "wb") as handle:
            handle.write(content)
        if like is not None:
            shutil.copystat(like, temp)
        os.replace(temp, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def copy_features(copies: list[Copied], features_dir: Path, target: Path, out: TextIO) -> int:
    """Copy what :func:`to_copy` found into ``target``; a feature file loses its steps'
    annotations. Returns the number of feature files."""
    features = 0
    for copied in copies:
        destination = target / copied.relative
        if copied.folder:
            destination.mkdir(parents=True, exist_ok=True)
        elif copied.feature:
            destination.parent.mkdir(parents=True, exist_ok=True)
            text, removed = plain_feature(copied.source, features_dir)
            write_file(destination, text.encode("utf-8"))
            note = f" ({counted(removed, 'step annotation')} removed)" if removed else ""
            print(f"wrote {copied.relative.as_posix()}{note}", file=out)
            features += 1
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            write_file(destination, copied.source.read_bytes(), like=copied.source)
    return features


def plain_feature(path: Path, features_dir: Path) -> tuple[str, int]:
    """A feature file as plain behave reads it the way prettyplay did: no trailing
    ``[tries=...]`` on its steps; a storage state tag names its file relative to the export."""
    with path.open(encoding="utf-8", newline="") as file:  # its line endings kept
        lines = file.read().splitlines(keepends=True)
    annotated = set()
    for scenario in scenarios_in(path):
        for step in [*scenario.background_steps, *scenario.steps]:
            if split_annotation(step.name)[1]:
                annotated.add(step.line - 1)
    for index in sorted(annotated):
        body = lines[index].rstrip("\r\n")
        ending = lines[index][len(body) :]
        lines[index] = split_annotation(body)[0] + ending
    for index, line in enumerate(lines):
        if line.lstrip().startswith("@"):
            lines[index] = _STORAGE_TAG.sub(lambda m: m[1] + _relocated(m[2], features_dir), line)
    return "".join(lines), len(annotated)


def _relocated(name: str, features_dir: Path) -> str:
    """A storage state file's name as the export reads it: relative to the export folder when
    it lies in the features folder (it is copied there), else the file's absolute path."""
    resolved = Path(name).resolve()
    try:
        return resolved.relative_to(features_dir.resolve()).as_posix()
    except ValueError:
        return str(resolved)


# -- the command ---------------------------------------------------------------------------------


def export(
    target: Path,
    features_dir: Path = Path("features"),
    cache_dir: Path | None = None,
    force: bool = False,
    out: TextIO | None = None,
    files_dir: Path | None = None,
) -> int:
    """Write the export into ``target`` and say what it wrote and what it could not cover:
    exit status 1 when a cache file fails to load, an entry's function would not be its cached
    code (each left out, the rest written) or a step of the features has no cached code."""
    out = out or sys.stdout
    cache_dir = cache_dir or features_dir / CACHE_FOLDER
    _check_target(target, features_dir, force)
    if files_dir is not None and not files_dir.is_dir():
        raise ExportError(f"{files_dir}: no files folder")
    found, broken = entries(cache_dir)
    made = definitions(found)
    refused = [variant for definition in made for variant in definition.refused]
    left_out = {id(entry) for variant in refused for entry in variant.members}
    kept = [(feature, entry) for feature, entry in found if id(entry) not in left_out]
    # what can go wrong goes wrong before anything is written
    steps_text = steps_module(made)
    copies = to_copy(features_dir)
    uploads = None  # a files folder elsewhere, copied as the export's
    if files_dir is not None and files_dir.resolve() != (features_dir / FILES_FOLDER).resolve():
        uploads = to_copy(files_dir, Path(FILES_FOLDER), everything=True)
    uncovered = _uncovered(features_dir, kept, [c for c in copies if c.feature])
    modules = {
        Path("steps", STEPS_MODULE): steps_text.encode("utf-8"),
        **support_modules(),
        Path("environment.py"): (
            Path(templates_folder()) / "export" / "environment.py"
        ).read_bytes(),
    }
    uploaded = [] if uploads is None else [Path(FILES_FOLDER), *(c.relative for c in uploads)]
    refuse_links(target, [*(c.relative for c in copies), *uploaded, *modules])
    target.mkdir(parents=True, exist_ok=True)
    features = copy_features(copies, features_dir, target, out)
    if uploads is not None:
        (target / FILES_FOLDER).mkdir(exist_ok=True)
        copy_features(uploads, features_dir, target, out)
        print(f"copied {files_dir} to {FILES_FOLDER}/", file=out)
    (target / "steps").mkdir(exist_ok=True)
    for relative, content in modules.items():
        write_file(target / relative, content)
    red = sum(v.entry.red for d in made for v in d.variants)
    written = [d for d in made if d.variants]
    counts = f"{counted(len(written), 'step definition')} of {counted(len(kept), 'entry')}"
    print(f"wrote steps/{STEPS_MODULE} ({counts}{f', {red} red' if red else ''})", file=out)
    print(f"wrote steps/{SUPPORT_MODULE}, steps/{ADDRESS_MODULE}, environment.py", file=out)
    for error in broken:
        print(escape_controls(f"left out: {error}"), file=out)
    for variant in refused:
        held = cache_dir / STEPS_FOLDER / file_name(variant.entry.step)
        problem = f"its function would not be its cached code: {variant.refused}"
        print(
            escape_controls(f"left out: {held} ({variant.entry.describe()}): {problem}"), file=out
        )
    for where, sentence in uncovered:
        print(escape_controls(f"no cached code: {where}: {sentence}"), file=out)
    refusals = [counted(len(broken), "cache file") + " left out"] if broken else []
    refusals += [counted(len(refused), "entry") + " left out"] if refused else []
    # a step with no code yet (one after a kept-red step was never run) is said, no error: the
    # export is what exists, and a later run of prettyplay writes the rest
    missing = [*refusals]
    missing += [counted(len(uncovered), "step") + " without cached code"] if uncovered else []
    summary = "".join(f"; {part}" for part in missing)
    print(f"exported {counted(features, 'feature file')} to {target}{summary}", file=out)
    return 1 if refusals else 0


def support_modules() -> dict[Path, bytes]:
    """The modules the exported steps import, by their place in the export."""
    return {
        Path("steps", SUPPORT_MODULE): (
            Path(templates_folder()) / "export" / SUPPORT_MODULE
        ).read_bytes(),
        Path("steps", ADDRESS_MODULE): Path(address.__file__).read_bytes(),
    }


def _check_target(target: Path, features_dir: Path, force: bool) -> None:
    refuse_links(target, [Path()])  # DIR itself, before it is listed
    if not features_dir.is_dir():
        raise ExportError(f"{features_dir}: no features folder (name one with --features)")
    here, features = target.resolve(), features_dir.resolve()
    if here == features or features in here.parents or here in features.parents:
        raise ExportError(
            f"{target}: the export would mix with the features folder {features_dir}; "
            "name a folder outside it"
        )
    if target.exists() and not target.is_dir():
        raise ExportError(f"{target}: not a folder")
    if target.exists() and any(target.iterdir()) and not force:
        raise ExportError(
            f"{target}: the folder is not empty (--force writes over the files the export "
            "writes and leaves the others)"
        )


def _uncovered(
    features_dir: Path, found: list[tuple[str, StepEntry]], features: list[Copied]
) -> list[tuple[str, str]]:
    """The steps of the ``features`` (the feature files the export copies) that no entry
    serves, as (feature:line, sentence)."""
    library = Library(entry for _, entry in found)
    missing: list[tuple[str, str]] = []
    for copied in features:
        path, relative = copied.source, copied.relative
        for scenario in scenarios_in(path):
            for step, key in step_keys(scenario, features_dir):
                where = f"{relative.as_posix()}:{step.line}"
                if library.find(key) is None and (where, step.name) not in missing:
                    missing.append((where, step.name))
    return missing
