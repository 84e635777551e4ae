"""``prettyplay init``: what a behave project needs to run prettyplay, written into a folder.

It writes what is missing and never overwrites: ``features/environment.py`` (or the call
appended at the end of the user's own, below their hooks), a steps module, ``base_url`` in the
behave config file behave reads its userdata from (or a new ``behave.ini``), a sample feature,
``features/files/`` for uploads and the report folders in ``.gitignore``. What exists is
reported and left alone. The files' text comes from ``templates/init/``.
"""

from __future__ import annotations

import configparser
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from .resources import templates_folder

DEFAULT_BASE_URL = "http://localhost:8000"
STEPS_MODULE = "prettyplay_behave.behave.steps"
# any call, even indented: a second one would wrap the hooks twice
_CALL = re.compile(r"^[^#\n]*\buse_prettyplay\(", re.MULTILINE)
# The files behave reads its configuration from, the one whose userdata it uses first: each of
# them replaces the userdata of those after it, pyproject.toml's included, even without a
# behave section.
INI_FILES = ("behave.ini", ".behaverc", "setup.cfg", "tox.ini")
PYPROJECT = "pyproject.toml"
INI_HEADER = re.compile(r"^\[behave\.userdata\][ \t]*\r?$", re.MULTILINE)
TOML_HEADER = re.compile(
    r"^\[[ \t]*tool\.behave\.userdata[ \t]*\][ \t]*(#[^\r\n]*)?\r?$", re.MULTILINE
)


class ScaffoldError(Exception):
    """``init`` cannot start: the folder or the URL is wrong (exit status 2)."""


@dataclass
class Scaffold:
    """One ``init`` in ``root``: what it did, line by line."""

    root: Path
    base_url: str
    done: list[tuple[str, str]] = field(default_factory=list)  # (what, the file and why)
    set_up_before: bool = False  # environment.py called use_prettyplay already

    def note(self, what: str, text: str) -> None:
        self.done.append((what, text))

    def render(self, name: str, **values: Any) -> str:
        import jinja2

        environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(templates_folder()),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
        )
        environment.filters["toml_string"] = lambda text: json.dumps(text, ensure_ascii=False)
        return environment.get_template(f"init/{name}.j2").render(base_url=self.base_url, **values)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def create(self, path: Path, text: str, why: str = "") -> None:
        """Write a new file; an existing one is reported and left alone."""
        if path.exists():
            self.note("kept", f"{self.relative(path)} (it exists)")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        self.note("wrote", self.relative(path) + (f" ({why})" if why else ""))


def init(root: Path, base_url: str = DEFAULT_BASE_URL, out: TextIO | None = None) -> int:
    """Set up ``root`` for prettyplay and print what was written and what was left."""
    out = out or sys.stdout
    if not root.is_dir():
        raise ScaffoldError(f"{root}: no such folder")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or "%" in base_url:
        raise ScaffoldError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    scaffold = Scaffold(root.resolve(), base_url)
    for step in (environment, steps_module, behave_config, sample, files_folder, gitignore):
        step(scaffold)
    out.write(f"prettyplay init in {scaffold.root}\n")
    for what, text in scaffold.done:
        out.write(f"  {what:<8} {text}\n")
    out.write(
        f"next: start the app at {scaffold.base_url}, set OPENAI_API_KEY (and OPENAI_BASE_URL for "
        "a local or compatible server), then run behave: the first run generates the steps' code "
        "into features/.prettyplay; commit it\n"
    )
    return 0


def environment(scaffold: Scaffold) -> None:
    path = scaffold.root / "features" / "environment.py"
    if not path.exists():
        scaffold.create(path, scaffold.render("environment.py"))
        return
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    if _CALL.search(text):
        scaffold.note("kept", f"{scaffold.relative(path)} (it calls use_prettyplay)")
        scaffold.set_up_before = True
        return
    newline = "\r\n" if b"\r\n" in raw else "\n"
    tail = scaffold.render("environment_tail.py").replace("\n", newline)
    separator = b"" if not raw or raw.endswith(b"\n") else newline.encode()
    with path.open("ab") as handle:
        handle.write(separator + tail.encode("utf-8"))
    scaffold.note(
        "appended",
        f"{scaffold.relative(path)}: use_prettyplay(globals()) at its end, "
        "below your hooks, which keep working",
    )


def steps_module(scaffold: Scaffold) -> None:
    folder = scaffold.root / "features" / "steps"
    modules = sorted(folder.rglob("*.py")) if folder.is_dir() else []
    importing = [
        path
        for path in modules
        if STEPS_MODULE in path.read_text(encoding="utf-8", errors="replace")
    ]
    if importing:
        name = scaffold.relative(importing[0])
        scaffold.note("kept", f"{name} (it imports {STEPS_MODULE})")
        return
    path = folder / "prettyplay_steps.py"
    if path.exists():
        scaffold.note(
            "kept",
            f"{scaffold.relative(path)} (it exists but does not import {STEPS_MODULE}: "
            f"add `import {STEPS_MODULE}  # noqa: F401` to a module under features/steps)",
        )
        return
    scaffold.create(path, scaffold.render("prettyplay_steps.py"))


def behave_config(scaffold: Scaffold) -> None:
    """``prettyplay.base_url`` in the file behave takes its userdata from, or a new behave.ini."""
    root = scaffold.root
    ini = next((root / name for name in INI_FILES if (root / name).is_file()), None)
    pyproject = root / PYPROJECT
    if ini is not None:
        if pyproject.is_file() and _has_toml_userdata(pyproject):
            scaffold.note(
                "note",
                f"{PYPROJECT}'s [tool.behave.userdata] is not read while {ini.name} exists "
                f"(behave takes its userdata from {ini.name}): keep behave's settings there",
            )
        _edit(scaffold, ini, _ini_edit, "[behave.userdata]")
    elif pyproject.is_file() and _toml_reader() is not None:
        _edit(scaffold, pyproject, _toml_edit, "[tool.behave.userdata]")
    else:
        scaffold.create(root / "behave.ini", scaffold.render("behave.ini"), "prettyplay.base_url")


Edit = Callable[[Scaffold, str], "str | None"]


def _edit(scaffold: Scaffold, path: Path, edit: Edit, section: str) -> None:
    """Add base_url to a config file in place, every other line kept as it was."""
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    name = scaffold.relative(path)
    try:
        current = _read(path.name, text).get("prettyplay.base_url")
    except ValueError as exc:
        scaffold.note("kept", f"{name} (it does not parse: {exc}; set prettyplay.base_url by hand)")
        return
    if current is not None:
        scaffold.note("kept", f"{name} (it sets prettyplay.base_url = {current})")
        scaffold.base_url = current  # the app the next runs go to, as the project has it
        return
    changed = edit(scaffold, text)
    try:
        written = None if changed is None else _read(path.name, changed).get("prettyplay.base_url")
    except ValueError:
        written = None
    if changed is None or written != scaffold.base_url:
        scaffold.note(
            "kept", f"{name} (prettyplay.base_url cannot be added safely: add it under {section})"
        )
        return
    path.write_bytes(changed.encode("utf-8"))
    scaffold.note("set", f"prettyplay.base_url = {scaffold.base_url} in {name} {section}")


def _insert(text: str, header: re.Match[str] | None, block: str, section_block: str) -> str:
    """``block`` right after the section header, or the section appended at the end."""
    newline = "\r\n" if "\r\n" in text else "\n"
    if header is not None:
        end = text.find("\n", header.end())
        if end < 0:  # the header ends the file, without a newline
            return text + newline + block.replace("\n", newline)
        return text[: end + 1] + block.replace("\n", newline) + text[end + 1 :]
    separator = "" if not text or text.endswith("\n") else newline
    gap = newline if text.strip() else ""
    return text + separator + gap + section_block.replace("\n", newline)


def _ini_edit(scaffold: Scaffold, text: str) -> str:
    block = scaffold.render("userdata.ini")
    return _insert(text, INI_HEADER.search(text), block, "[behave.userdata]\n" + block)


def _toml_edit(scaffold: Scaffold, text: str) -> str:
    block = scaffold.render("userdata.toml")
    return _insert(text, TOML_HEADER.search(text), block, "[tool.behave.userdata]\n" + block)


def _read(name: str, text: str) -> dict[str, str]:
    """The behave userdata a config file holds; ValueError when it does not parse."""
    if name == PYPROJECT:
        return _toml_userdata(text)
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # behave keeps case
    try:
        parser.read_string(text)
        if not parser.has_section("behave.userdata"):
            return {}
        return dict(parser.items("behave.userdata"))
    except configparser.Error as exc:
        raise ValueError(str(exc).splitlines()[0]) from None


def _toml_reader() -> Any:
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.10: behave reads pyproject.toml only with tomli
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return None
    return tomllib


def _has_toml_userdata(path: Path) -> bool:
    try:
        return bool(_toml_userdata(path.read_text(encoding="utf-8")))
    except (ValueError, UnicodeDecodeError):
        return False


def _toml_userdata(text: str) -> dict[str, str]:
    reader = _toml_reader()
    if reader is None:
        return {}
    try:
        document = reader.loads(text)
    except reader.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None
    userdata = document.get("tool", {}).get("behave", {}).get("userdata", {})
    return {str(k): str(v) for k, v in userdata.items()} if isinstance(userdata, dict) else {}


def sample(scaffold: Scaffold) -> None:
    """A first feature to run; a project set up before keeps the features it has (a sample it
    deleted stays deleted)."""
    if scaffold.set_up_before:
        scaffold.note("kept", "the features as they are (no sample feature)")
        return
    path = scaffold.root / "features" / "sample.feature"
    scaffold.create(path, scaffold.render("sample.feature"), "a first feature to run")


def files_folder(scaffold: Scaffold) -> None:
    folder = scaffold.root / "features" / "files"
    if folder.is_dir():
        scaffold.note("kept", f"{scaffold.relative(folder)}/ (it exists)")
        return
    scaffold.create(folder / ".gitkeep", "", "the folder of files that steps upload")


def gitignore(scaffold: Scaffold) -> None:
    path = scaffold.root / ".gitignore"
    wanted = scaffold.render("gitignore").splitlines()
    if not path.exists():
        scaffold.create(path, "\n".join(wanted) + "\n", "reports and cache lock files")
        return
    raw = path.read_bytes()
    present = {line.strip() for line in raw.decode("utf-8", errors="replace").splitlines()}
    missing = [line for line in wanted if not line.startswith("#") and line not in present]
    if not missing:
        scaffold.note("kept", ".gitignore (it ignores the reports and lock files)")
        return
    comment = [line for line in wanted if line.startswith("#")]
    newline = b"\r\n" if b"\r\n" in raw else b"\n"
    separator = b"" if not raw or raw.endswith(b"\n") else newline
    gap = newline if raw.strip() else b""
    block = newline.join(line.encode() for line in [*comment, *missing]) + newline
    path.write_bytes(raw + separator + gap + block)
    scaffold.note("added", f"{', '.join(missing)} to .gitignore")
