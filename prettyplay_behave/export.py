"""``prettyplay export DIR``: the cache as plain behave step definitions, run without prettyplay.

DIR becomes a behave features folder a team can keep: the feature files (and the other files of
the features folder, but its cache, ``steps/`` and ``environment.py``), ``steps/`` with a step
definition per kind and sentence template (``exported_steps.py``) and the names step code was
given, in plain Playwright (``step_support.py``), and an ``environment.py`` that launches
Chromium with a fresh context and page per scenario. behave, parse and Playwright are all it
needs; no LLM, no prettyplay.

One step definition serves every entry of its (kind, template): it picks the entry the way a
run does (the pin of the scenario and occurrence, then an entry of the step's values, then the
general one), so one template is one pattern and behave sees no ambiguity. Actions match under
Given and When, checks under Then. A red entry fails with its verdict. The copied feature
files lose their steps' ``[tries=...]`` annotations (behave would read them as part of the
sentence) and a ``@prettyplay.storage_state`` tag names its file relative to DIR. What the
export leaves behind (healing, bounds, settle polling, the report) is in docs/export.md.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

from .behave.liveness import scenarios_in, step_keys
from .behave.mapping import split_annotation
from .cache import CACHE_FOLDER, CacheStore, Library, StepEntry, today
from .errors import escape_controls
from .parameters import MARK
from .resources import templates_folder
from .safety.step_code import check_code, step_code
from .vocabulary import Kind, counted

STEPS_MODULE = "exported_steps.py"
FILES_FOLDER = "files"  # beside the features, where step code's uploads come from
SUPPORT_MODULE = "step_support.py"
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


def entries(cache_dir: Path) -> list[tuple[str, StepEntry]]:
    """Every entry of the project's step library with the feature file it is kept for ("" for
    an entry every feature shares); the one place the export reads the cache's storage. A
    test of the Python API's own entries are left out: no feature file runs them."""
    if not cache_dir.is_dir():
        return []
    store = CacheStore(cache_dir, check_code)
    broken = store.broken()
    if broken:
        raise next(iter(broken.values()))
    return [
        (entry.feature, entry)
        for entry in store.library().entries
        if not entry.feature or entry.feature.endswith(".feature")
    ]


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


@dataclass
class Definition:
    """The step definition of one (kind, template)."""

    kind: str
    template: str
    name: str  # of its code's function (numbered when it has several)
    function: str  # of the step definition's function
    fields: list[Field]
    variants: list[Variant] = field(default_factory=list)

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
    """The step definitions of the entries, in the order they are written."""
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
            if feature and feature not in by_code[same].features:
                by_code[same].features.append(feature)
        definition.variants = list(by_code.values())
        if len(definition.variants) > 1:
            for number, variant in enumerate(definition.variants, 1):
                variant.function = _unique(f"{name}_{number}", taken)
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
        if quoted:
            kind, base = "Quoted", "text"
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
    named through ``upload`` (prettyplay took a bare name from its files folder)."""
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    text = code.encode()
    for files in sorted(_uploads(code), key=lambda f: (f.lineno, f.col_offset), reverse=True):
        assert files.end_lineno is not None and files.end_col_offset is not None
        start = starts[files.lineno - 1] + files.col_offset
        end = starts[files.end_lineno - 1] + files.end_col_offset
        text = text[:start] + b"upload(" + text[start:end] + b")" + text[end:]
    return re.sub(r"^def step\(", f"def {name}(", text.decode(), count=1)


def _uploads(code: str) -> list[ast.expr]:
    found = (_uploaded(node) for node in ast.walk(_tree(code)))
    return [files for files in found if files is not None]


def _tree(code: str) -> ast.Module:
    """The tree of cached code (which the policy passed when the cache was read)."""
    return step_code(code).tree or ast.Module(body=[], type_ignores=[])


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
    environment.globals["plain_code"] = plain_code
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
            if variant.entry.red:
                continue
            tree = _tree(variant.entry.code)
            used.update(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))
            if _uploads(variant.entry.code):
                used.add("upload")
    return sorted(used & SUPPORTED)


# -- the feature files ---------------------------------------------------------------------------


def copy_features(features_dir: Path, target: Path, out: TextIO) -> int:
    """Copy the features folder into ``target`` but prettyplay's own parts; a feature file
    loses its steps' annotations. Returns the number of feature files."""
    features = 0
    for path in sorted(features_dir.rglob("*")):
        relative = path.relative_to(features_dir)
        hidden = any(part.startswith(".") or part == "__pycache__" for part in relative.parts)
        if hidden or relative.parts[0] in LEFT_OUT:
            continue
        destination = target / relative
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".feature":
            destination.parent.mkdir(parents=True, exist_ok=True)
            text, removed = plain_feature(path, features_dir)
            destination.write_text(text, encoding="utf-8", newline="")
            note = f" ({counted(removed, 'step annotation')} removed)" if removed else ""
            print(f"wrote {relative.as_posix()}{note}", file=out)
            features += 1
        elif path.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
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
    exit status 1 when a step of the features has no cached code."""
    out = out or sys.stdout
    cache_dir = cache_dir or features_dir / CACHE_FOLDER
    _check_target(target, features_dir, force)
    if files_dir is not None and not files_dir.is_dir():
        raise ExportError(f"{files_dir}: no files folder")
    found = entries(cache_dir)
    made = definitions(found)
    # what can go wrong goes wrong before anything is written
    steps_text = steps_module(made)
    uncovered = _uncovered(features_dir, found)
    target.mkdir(parents=True, exist_ok=True)
    features = copy_features(features_dir, target, out)
    if files_dir is not None and files_dir.resolve() != (features_dir / FILES_FOLDER).resolve():
        shutil.copytree(files_dir, target / FILES_FOLDER, dirs_exist_ok=True)
        print(f"copied {files_dir} to {FILES_FOLDER}/", file=out)
    steps = target / "steps"
    steps.mkdir(exist_ok=True)
    (steps / STEPS_MODULE).write_text(steps_text, encoding="utf-8")
    folder = Path(templates_folder()) / "export"
    shutil.copyfile(folder / SUPPORT_MODULE, steps / SUPPORT_MODULE)
    shutil.copyfile(folder / "environment.py", target / "environment.py")
    red = sum(v.entry.red for d in made for v in d.variants)
    written = f"{counted(len(made), 'step definition')} of {counted(len(found), 'entry')}"
    print(f"wrote steps/{STEPS_MODULE} ({written}{f', {red} red' if red else ''})", file=out)
    print(f"wrote steps/{SUPPORT_MODULE}, environment.py", file=out)
    for where, sentence in uncovered:
        print(escape_controls(f"no cached code: {where}: {sentence}"), file=out)
    missing = f"; {counted(len(uncovered), 'step')} without cached code" if uncovered else ""
    print(f"exported {counted(features, 'feature file')} to {target}{missing}", file=out)
    return 1 if uncovered else 0


def _check_target(target: Path, features_dir: Path, force: bool) -> None:
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


def _uncovered(features_dir: Path, found: list[tuple[str, StepEntry]]) -> list[tuple[str, str]]:
    """The steps of the features that no entry serves, as (feature:line, sentence)."""
    library = Library(entry for _, entry in found)
    missing: list[tuple[str, str]] = []
    for path in sorted(features_dir.rglob("*.feature")):
        relative = path.relative_to(features_dir)
        if any(part.startswith(".") for part in relative.parts):
            continue
        for scenario in scenarios_in(path):
            for step, key in step_keys(scenario, features_dir):
                where = f"{relative.as_posix()}:{step.line}"
                if library.find(key) is None and (where, step.name) not in missing:
                    missing.append((where, step.name))
    return missing
