"""Page-state capture: the URL, the title and a compacted, marker-proof accessibility snapshot.

The prompt places the title and the snapshot inside an ``<untrusted-page-data id="{fence}">``
block. The page controls every character of them, so they are neutralised (no look-alike of the
block's markers, no invisible characters), redacted by the caller's function, and compacted to a
token budget that keeps what a step most likely needs: structure and interactive elements.
"""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from playwright.sync_api import Error as PlaywrightError

from prettyplay_behave.errors import PrettyPlayError
from prettyplay_behave.vocabulary import words

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = [
    "SNAPSHOT_TIMEOUT_MS",
    "PageCaptureError",
    "PageState",
    "capture",
    "compact",
    "estimate_tokens",
    "neutralise",
]

# Chromium needs 4 s (idle) to 10 s (busy) for the snapshot of a 20,000-item list of links on a
# two-core machine; the timeout only has to stop a hung page from stalling the step for long.
SNAPSHOT_TIMEOUT_MS = 15_000
TITLE_MAX_CHARS = 300

QUOTED_MARKER = "untrusted page data (quoted)"
TRUNCATED_MARKER = "- … snapshot truncated: {count:,} more lines …"


class PageCaptureError(PrettyPlayError, PlaywrightError):
    """The page state could not be read; the Playwright error is the ``__cause__``.

    Also a Playwright ``Error``, so callers that handle Playwright failures still catch it.
    """


@dataclass(frozen=True)
class PageState:
    """What the LLM is told about the page; every text field is neutralised and redacted."""

    url: str
    title: str
    snapshot: str
    fence: str
    full_chars: int
    tabs: tuple[tuple[int, str, str], ...] = ()  # (index, title, URL) when a test has several
    notes: tuple[str, ...] = ()  # what happened on the page since: dialogs nobody handled


def capture(
    page: Page,
    *,
    budget_tokens: int = 6000,
    redact: Callable[[str], str] = lambda s: s,
    timeout_ms: float = SNAPSHOT_TIMEOUT_MS,
    test_id_attribute: str = "data-testid",
) -> PageState:
    """Read the page's URL, title and aria snapshot, made safe and fitted to ``budget_tokens``.

    The budget covers the title and the snapshot. Raises ``PageCaptureError`` (caused by the
    Playwright error) when the page is closed, crashed, navigating away or does not answer
    within ``timeout_ms``.
    """
    # The page can set its own URL (history.pushState), so it is made safe like the rest.
    url = redact(neutralise(page.url))
    # The snapshot goes first: it has a timeout, and title() would hang on a page stuck in a loop.
    try:
        raw = _aria_snapshot(page, timeout_ms)
        raw += _beyond_the_tree(page, test_id_attribute, redact)
        raw += _storage(page, redact)
    except PlaywrightError as exc:
        raise PageCaptureError(f"could not read the aria snapshot of {url}: {exc}") from exc
    try:
        raw_title = page.title()
    except PlaywrightError as exc:
        raise PageCaptureError(f"could not read the title of {url}: {exc}") from exc

    title = redact(neutralise(_one_line(raw_title)))
    if len(title) > TITLE_MAX_CHARS:
        title = title[:TITLE_MAX_CHARS] + "…"
    snapshot = redact(neutralise(raw))
    snapshot_budget = max(budget_tokens - estimate_tokens(f"title: {title}\n"), 1)
    return PageState(
        url=url,
        title=title,
        snapshot=compact(snapshot, snapshot_budget),
        fence=secrets.token_hex(8),
        full_chars=len(raw),
    )


# What a text is read with beyond where it is cut, for the redactor: a secret the cut would split,
# spelt in up to this many characters, is whole there.
_REDACTION_MARGIN = 1_000
_IFRAME = re.compile(r"- iframe \[ref=(\w+)\]")
_REF = re.compile(r" \[ref=\w+\]")


def _aria_snapshot(page: Page, timeout_ms: float) -> str:
    """The page's accessibility snapshot; with frames, every frame's content nested under a
    line that names its frame (title, name or source)."""
    body = page.locator("body")
    if len(page.frames) == 1:
        return body.aria_snapshot(timeout=timeout_ms)
    raw = body.aria_snapshot(mode="ai", timeout=timeout_ms)

    def named(match: re.Match[str]) -> str:
        return f"- iframe {_frame_label(page, match.group(1))}"

    return _REF.sub("", _IFRAME.sub(named, raw))  # marks change with every capture: dropped


# What tests name and the accessibility tree leaves out, read in one pass over the main frame:
# elements with a test id, and role-less elements a user clicks (a click handler, a tabindex,
# a pointer cursor that their parent does not have), each with its own text (not its children's),
# its classes, its state and its value as typed. Each text comes ``chars`` long, to be redacted
# before it is cut shorter.
_BEYOND_THE_TREE = """([attr, limit, chars]) => {
  const native = new Set(["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY", "OPTION",
    "LABEL", "DETAILS", "IFRAME", "BODY", "HTML"]);
  const squeeze = (text) => text.replace(/\\s+/g, " ").trim().slice(0, chars);
  const own = (el) => squeeze(Array.from(el.childNodes)
    .filter((n) => n.nodeType === 3).map((n) => n.textContent).join(" "));
  const out = [];
  let styled = 0;
  for (const el of document.body ? document.body.querySelectorAll("*") : []) {
    if (out.length >= limit) break;
    const testId = el.getAttribute(attr);
    let clickable = false;
    if (!native.has(el.tagName) && !el.hasAttribute("role")) {
      clickable = el.hasAttribute("onclick") || el.hasAttribute("tabindex");
      if (!clickable && styled < 3000) {
        styled += 1;
        const parent = el.parentElement;
        clickable = getComputedStyle(el).cursor === "pointer" &&
          !(parent && getComputedStyle(parent).cursor === "pointer");
      }
    }
    // a text field whose value the accessibility tree shows with its whitespace collapsed
    const typed = (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type !== "password"))
      && typeof el.value === "string" && /\\s\\s|^\\s|\\s$|[\\t\\n]/.test(el.value);
    // a fragment of a text run (a price inside "Total: $20"): a leaf whose parent has text too
    const parent = el.parentElement;
    const part = el.children.length === 0 && !native.has(el.tagName) && !!parent
      && parent !== document.body && own(el) !== "" && own(el).length <= 40
      && own(parent) !== "";
    if (testId === null && !clickable && !typed && !part) continue;
    // a closed select's options have no boxes of their own: they are shown where it is
    const box = el.tagName === "OPTION" ? el.closest("select") : el;
    if (!box || box.getClientRects().length === 0) continue;
    const state = [];
    for (const name of ["checked", "disabled", "selected", "aria-selected", "aria-pressed",
        "aria-checked", "aria-expanded", "aria-current"]) {
      if (el.hasAttribute(name)) {
        state.push(name.replace("aria-", "") + "=" + el.getAttribute(name));
      }
    }
    const label = squeeze((el.labels && el.labels[0] && el.labels[0].innerText)
      || el.getAttribute("aria-label") || el.getAttribute("placeholder") || el.name || "");
    out.push({
      tag: el.tagName.toLowerCase(), testId, clickable, typed, label,
      of: part ? own(parent) : null,
      text: own(el) || squeeze(el.innerText || ""),
      classes: Array.from(el.classList).slice(0, 6),
      state,
      value: typeof el.value === "string" && el.value && el.type !== "password"
        ? el.value.slice(0, chars) : null,
    });
  }
  return out;
}"""
_BEYOND_LIMIT = 200
_BEYOND_CHARS = 80  # of each text, once redacted
_BEYOND_HEADER = (
    "- beyond the accessibility tree (test ids, role-less clickable elements, values as typed,"
    " parts of a text):"
)


def _beyond_the_tree(page: Page, test_id_attribute: str, redact: Callable[[str], str]) -> str:
    """Lines for what tests name and the accessibility tree leaves out (see _BEYOND_THE_TREE):
    ``- testid "seat-a1": div "A1" (clickable) .seat .selected``; empty when there is none.
    Each text is redacted before it is cut, so a secret across the cut is not shown in part."""
    read = _BEYOND_CHARS + _REDACTION_MARGIN
    found = page.evaluate(_BEYOND_THE_TREE, [test_id_attribute, _BEYOND_LIMIT, read])
    lines = []
    for item in found:
        for name in ("text", "label", "of", "value"):
            if item[name] is not None:
                item[name] = _start(redact(item[name]), _BEYOND_CHARS)
        text = f' "{_one_line(item["text"])}"' if item["text"] else ""
        parts = [f"{item['tag']}{text}"]
        if item["clickable"]:
            parts.append("(clickable)")
        parts += [f".{name}" for name in item["classes"]]
        parts += [f"[{state}]" for state in item["state"]]
        if item["value"] is not None:
            parts.append("value " + json.dumps(item["value"], ensure_ascii=False))
        lines.append("  " + _identity(item) + ": " + " ".join(parts))
    return "\n" + "\n".join([_BEYOND_HEADER, *lines]) if lines else ""


# The web storage of the page's origin, for the snapshot: keys and the start of each value (with
# room past it, so that a secret the cut would split is redacted whole first).
_STORAGE = """([limit, chars]) => {
  const read = (kind) => {
    try {
      const storage = window[kind];
      return Object.keys(storage).slice(0, limit)
        .map((key) => [key, storage.getItem(key).slice(0, chars)]);
    } catch (error) { return []; }  // an opaque origin (about:blank) has none
  };
  return [read("localStorage"), read("sessionStorage")];
}"""
_STORAGE_LIMIT = 20
_STORAGE_CHARS = 80
_STORAGE_READ = _STORAGE_CHARS + _REDACTION_MARGIN
_STORAGE_HEADER = (
    "- the origin's web storage and cookies (step code reads them with page.local_storage,"
    " page.session_storage and page.cookies):"
)


def _storage(page: Page, redact: Callable[[str], str]) -> str:
    """Lines for what the page's origin keeps beyond the page: ``local "cart": "[3, 5]"``,
    ``session "step": "2"``, ``cookie "session"`` (names only); empty when it keeps nothing,
    and for a page without a URL of its own (a blank window has the origin of whichever frame
    opened it, maybe another origin's). Each value is redacted before it is cut to its start,
    and again as part of the snapshot."""
    if not page.url.startswith(("http://", "https://")):
        return ""
    local, session = page.evaluate(_STORAGE, [_STORAGE_LIMIT, _STORAGE_READ])
    lines = [
        f"  {kind} {json.dumps(key, ensure_ascii=False)}: "
        + json.dumps(_start(redact(value), _STORAGE_CHARS), ensure_ascii=False)
        for kind, entries in (("local", local), ("session", session))
        for key, value in entries
    ]
    if page.url.startswith(("http://", "https://")):
        names = [cookie.get("name", "") for cookie in page.context.cookies([page.url])]
        lines += [f"  cookie {json.dumps(name)}" for name in names[:_STORAGE_LIMIT]]
    return "\n" + "\n".join([_STORAGE_HEADER, *lines]) if lines else ""


def _start(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, and the rest of a placeholder they cut."""
    start = text.rfind("${", 0, chars)
    end = text.find("}", start)
    return text[: max(chars, end + 1)] if start != -1 and end >= chars else text[:chars]


def _identity(item: dict[str, Any]) -> str:
    """How the change of the page tells the element apart: its test id, else what it is."""
    if item["testId"] is not None:
        return f'- testid "{_one_line(item["testId"])}"'
    if item["clickable"]:
        return f'- clickable "{_one_line(item["text"])}"'
    if item["typed"]:
        return f'- typed "{_one_line(item["label"])}"'
    return f'- part of "{_one_line(item["of"] or "")}"'


def _frame_label(page: Page, ref: str) -> str:
    element = page.locator(f"aria-ref={ref}")
    try:
        attributes = {
            name: element.get_attribute(name, timeout=1_000) for name in ("title", "name", "src")
        }
    except PlaywrightError:
        return ""
    label = attributes["title"] or attributes["name"] or ""
    shown = f'"{_one_line(label)}"' if label else ""
    source = f"(src: {attributes['src']})" if attributes["src"] else ""
    return " ".join(part for part in (shown, source) if part)


def estimate_tokens(text: str) -> int:
    """About four bytes of UTF-8 a token: ``len/4`` for ASCII, more for other scripts."""
    return -(-len(text.encode("utf-8")) // 4)


# --- neutralise -----------------------------------------------------------------------------

# Zero-width, joiner, bidi-control, filler and tag characters: invisible, so a page can hide
# them inside a marker word or flip how the text around them reads.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
# Latin look-alikes that NFKC leaves alone (Cyrillic and Greek letters).
_CONFUSABLES = {
    "а": "a",
    "ɑ": "a",
    "α": "a",
    "ԁ": "d",
    "е": "e",
    "ε": "e",
    "ɡ": "g",
    "ո": "n",
    "р": "p",
    "ρ": "p",
    "г": "r",
    "ѕ": "s",
    "т": "t",
    "τ": "t",
    "ս": "u",
    "υ": "u",
}
# Matched on the folded text, within one line: the letters of the three words with any run of
# separators between any two of them ("u n-t_r...", "untrusted ----- page"), and a "<" or "</"
# right before and ">" right after, which are rewritten too.
_SPACE = r"[^\S\r\n]*"
_SEPARATOR = r"(?:[^\w\r\n]|_)*"
_WORDS = _SEPARATOR.join("untrustedpagedata")
_MARKER = re.compile(rf"(<{_SPACE}/?{_SPACE})?{_WORDS}({_SPACE}>)?", re.IGNORECASE)


def neutralise(text: str) -> str:
    """Rewrite every look-alike of the ``untrusted-page-data`` markers and strip invisibles.

    ``</untrusted_PAGE-data id="x">`` becomes ``‹/untrusted page data (quoted) id="x">``. The
    check runs line by line on an NFKD, case-folded, accent-free view, so full-width, homoglyph
    and zero-width tricks match too, while the rest of the text is left exactly as it was.
    """
    text = _INVISIBLE.sub("", text)
    if text.isascii():
        return _MARKER.sub(_quote, text)
    return "".join(_neutralise_line(line) for line in text.splitlines(keepends=True))


def _neutralise_line(line: str) -> str:
    if line.isascii():
        return _MARKER.sub(_quote, line)
    folded = [_fold_char(char) for char in line]
    view = "".join(folded)
    if not _MARKER.search(view):
        return line
    origin = [index for index, chars in enumerate(folded) for _ in chars]
    pieces: list[str] = []
    start = 0
    for match in _MARKER.finditer(view):
        begin, end = origin[match.start()], origin[match.end() - 1] + 1
        if begin >= start:  # one character can fold into several; never rewrite it twice
            pieces += [line[start:begin], _quote(match)]
            start = end
    pieces.append(line[start:])
    return "".join(pieces)


def _quote(match: re.Match[str]) -> str:
    opening, closing = match.group(1), match.group(2)
    if match.string.startswith(QUOTED_MARKER, match.start()) and not closing:
        return match.group(0)  # already quoted: neutralising twice changes nothing
    before = ("‹/" if "/" in opening else "‹") if opening else ""
    return before + QUOTED_MARKER + ("›" if closing else "")


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """The character as the marker check sees it: lower case, no accents, Latin look-alikes."""
    if char.isascii():
        return char.lower()
    decomposed = unicodedata.normalize("NFKD", char).casefold()
    kept = (c for c in decomposed if unicodedata.category(c) not in ("Mn", "Me", "Cf"))
    return "".join(_CONFUSABLES.get(c, c) for c in kept)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- compact --------------------------------------------------------------------------------

# Roles a step acts on or checks; compaction never drops them for depth.
_KEEP_ROLES = words(
    "alert alertdialog button checkbox clickable combobox dialog form heading link listbox menuitem"
    " menuitemcheckbox menuitemradio option radio searchbox slider spinbutton status switch tab"
    " testid textbox treeitem typed"
)
# Runs of these are distinct controls rather than repeated content: collapsed only when very long.
_CONTROL_ROLES = _KEEP_ROLES - {"option", "menuitem", "treeitem", "tab"}
_CONTROL_RUN = 40
# Parsing flattens deeper nesting so the recursive passes stay far from Python's recursion limit.
_MAX_PARSE_DEPTH = 100
_ROLE = re.compile(r"- ['\"]?([\w/-]+)")
_MORE = "- … {count:,} more {role} entries like the above …"


@dataclass(frozen=True)
class _Level:
    """One step of compaction; each later level gives up more detail."""

    max_line: int
    min_run: int
    keep: int
    drop_urls: bool = False
    max_depth: int = _MAX_PARSE_DEPTH


_LEVELS = (
    _Level(max_line=300, min_run=50, keep=5),
    _Level(max_line=200, min_run=12, keep=3),
    _Level(max_line=200, min_run=12, keep=3, drop_urls=True),
    _Level(max_line=120, min_run=6, keep=2, drop_urls=True, max_depth=8),
    _Level(max_line=80, min_run=4, keep=1, drop_urls=True, max_depth=4),
    # Only the interactive elements, in page order: a step can still find its target by role.
    _Level(max_line=80, min_run=4, keep=1, drop_urls=True, max_depth=0),
)


@dataclass
class _Node:
    text: str
    children: list[_Node] = field(default_factory=list)

    @property
    def role(self) -> str:
        match = _ROLE.match(self.text)
        return match.group(1) if match else ""

    @property
    def shape(self) -> tuple[str, ...]:
        return (self.role, *(child.role for child in self.children))


def compact(snapshot: str, budget_tokens: int) -> str:
    """Fit an aria snapshot into ``budget_tokens``; a snapshot already within it is unchanged.

    Applies the gentlest level of ``_LEVELS`` that fits (long runs of same-shaped siblings
    collapsed, long lines shortened, link URLs and deep non-interactive content dropped, at last
    everything but the interactive elements), and cuts the end as a last resort. The result is
    at least the truncation marker.
    """
    if estimate_tokens(snapshot) <= budget_tokens:
        return snapshot
    lines: list[str] = []
    for level in _LEVELS:
        lines = _render(_apply(level, _parse(snapshot)))
        if estimate_tokens("\n".join(lines)) <= budget_tokens:
            return "\n".join(lines)
    return _cut(lines, budget_tokens)


def _parse(snapshot: str) -> list[_Node]:
    roots: list[_Node] = []
    stack: list[tuple[int, _Node]] = []
    for line in snapshot.split("\n"):
        text = line.lstrip(" ")
        if not text.strip():
            continue
        indent = len(line) - len(text)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        node = _Node(text.rstrip())
        (stack[-1][1].children if stack else roots).append(node)
        if len(stack) < _MAX_PARSE_DEPTH:
            stack.append((indent, node))
    return roots


def _apply(level: _Level, nodes: list[_Node], depth: int = 0) -> list[_Node]:
    kept: list[_Node] = []
    for node in _collapse(nodes, level):
        if level.drop_urls and node.role == "/url":
            continue
        if len(node.text) > level.max_line:
            cut = len(node.text) - level.max_line
            node.text = f"{node.text[: level.max_line]}… (+{cut:,} chars)"
        node.children = _apply(level, node.children, depth + 1)
        if depth < level.max_depth or node.role in _KEEP_ROLES or node.text.startswith("- …"):
            kept.append(node)
        else:  # deep decoration: the node goes, whatever it holds worth keeping moves up
            kept += node.children
    return kept


def _collapse(siblings: list[_Node], level: _Level) -> list[_Node]:
    """Replace the middle of each long run of same-shaped siblings by one summary line."""
    out: list[_Node] = []
    start = 0
    while start < len(siblings):
        shape = siblings[start].shape
        end = start + 1
        while end < len(siblings) and siblings[end].shape == shape:
            end += 1
        run = siblings[start:end]
        role = shape[0]
        min_run = max(level.min_run, _CONTROL_RUN) if role in _CONTROL_ROLES else level.min_run
        if role and len(run) >= min_run:
            more = _Node(_MORE.format(count=len(run) - level.keep - 1, role=role))
            out += [*run[: level.keep], more, run[-1]]
        else:
            out += run
        start = end
    return out


def _render(nodes: list[_Node], depth: int = 0) -> list[str]:
    lines: list[str] = []
    for node in nodes:
        lines.append("  " * depth + node.text)
        lines += _render(node.children, depth + 1)
    return lines


def _cut(lines: list[str], budget_tokens: int) -> str:
    """Keep lines from the top while they fit, then say how many were left out."""
    room = budget_tokens - estimate_tokens(TRUNCATED_MARKER.format(count=len(lines))) - 1
    kept = 0
    for line in lines:
        room -= estimate_tokens(line + "\n")
        if room < 0:
            break
        kept += 1
    return "\n".join([*lines[:kept], TRUNCATED_MARKER.format(count=len(lines) - kept)])
