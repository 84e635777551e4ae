"""A step's parameters: the values in its sentence that its code takes, not spells out.

Outline placeholders (``<item>``), quoted strings (``"Green Tea"``) and numbers (``3``) in a
sentence are its parameters. What is left, with ``{}`` in their places, is the sentence's
*template*: ``I add the "Green Tea" to the cart`` and ``I add the "Blue Mug" to the cart`` are one
template, ``I add the "{}" to the cart``, with the values ``Green Tea`` and ``Blue Mug``. One
cache entry serves every value of a template when its code takes the values as parameters::

    def step(page, text) -> None:
        page.get_by_role("listitem").filter(has_text=text).get_by_role("button").click()

Each value reaches the code as a string, as written in the sentence (without its quotes). Code
that takes no parameters spells its values out and serves only those values. A secret's
placeholder (``${NAME}``) is never a parameter.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from .vocabulary import words

MARK = "{}"
# An Outline placeholder, a double-quoted string (no secret placeholder inside), or a number that
# stands on its own (not part of a word such as h1 or mp3).
_PART = re.compile(
    r"(?P<outline><(?P<name>[^<>\n]+)>)"
    r'|"(?P<quoted>(?:[^"\\\n]|\\.)*)"'
    r"|(?<![\w.])(?P<number>-?\d+(?:\.\d+)?)(?![\w.])"
)
_OUTLINE = re.compile(r"<([^<>\n]+)>")


@dataclass(frozen=True)
class Parameters:
    """A sentence's template, and the names and values of its parameters, in order."""

    template: str
    names: tuple[str, ...] = ()
    values: tuple[str, ...] = ()


def parameterize(sentence: str, outline: str = "") -> Parameters:
    """The template and parameters of ``sentence``; ``outline`` is the Outline step it was
    made from (with its ``<placeholders>``), when it was made from one."""
    if outline and _OUTLINE.search(outline):
        filled = _outline_values(outline, sentence)
        if filled is not None:
            return _split(outline, filled)
    return _split(sentence, {})


def _outline_values(outline: str, sentence: str) -> dict[str, str] | None:
    """The value of each placeholder of ``outline`` in ``sentence``, or None when the sentence
    is not that outline filled in."""
    pattern, names = "", list[str]()
    last = 0
    for found in _OUTLINE.finditer(outline):
        pattern += re.escape(outline[last : found.start()])
        name = found.group(1)
        pattern += f"(?P<p{len(names)}>.*?)" if name not in names else f"(?P=p{names.index(name)})"
        if name not in names:
            names.append(name)
        last = found.end()
    pattern += re.escape(outline[last:])
    matched = re.fullmatch(pattern, sentence, re.DOTALL)
    if matched is None:
        return None
    return {name: matched.group(f"p{index}") for index, name in enumerate(names)}


def _split(text: str, outline_values: dict[str, str]) -> Parameters:
    template: list[str] = []
    names: list[str] = []
    values: list[str] = []
    last = 0
    for found in _PART.finditer(text):
        piece = text[found.start() : found.end()]
        if found.group("quoted") is not None and "${" in piece:
            continue  # a secret's placeholder, quoted: part of the sentence
        outline_name = found.group("name")
        quoted = found.group("quoted")
        if outline_name is not None and outline_name not in outline_values:
            continue  # angle brackets that are no placeholder of this outline
        if quoted is not None and _OUTLINE.fullmatch(quoted) and outline_values:
            outline_name = _OUTLINE.fullmatch(quoted).group(1)  # type: ignore[union-attr]
            if outline_name not in outline_values:
                outline_name = None
        template.append(text[last : found.start()])
        if quoted is not None:
            template.append(f'"{MARK}"')
            value = outline_values[outline_name] if outline_name else quoted.replace('\\"', '"')
            base = outline_name or named_by(text[: found.start()], text[found.end() :])
        elif outline_name is not None:
            template.append(MARK)
            value, base = outline_values[outline_name], outline_name
        else:
            template.append(MARK)
            value, base = found.group("number"), "number"
        names.append(_unique(_identifier(base), names))
        values.append(value)
        last = found.end()
    template.append(text[last:])
    return Parameters("".join(template), tuple(names), tuple(values))


# What a sentence calls a quoted value, said right beside it (``the "Name" field``, ``the
# button "Save"``): the parameter's name, which the code and an exported pattern read.
KIND_NOUNS = words(
    "field input box textbox textarea button link tab item product option label heading title"
    " message name email password user username column row page menu checkbox radio dropdown"
    " select list section card tag category placeholder url city country date time price amount"
    " quantity count text file status error value"
)
_TEST_ID = re.compile(r"^(?:data-?)?test-?id$|^data-test$|^data-cy$", re.IGNORECASE)
_WORDS = re.compile(r"[\w-]+")


def named_by(before: str, after: str) -> str:
    """The name a sentence gives the quoted value between ``before`` and ``after``: a test id
    attribute just before it (``data-testid "x"``: ``test_id``), else a kind of thing said just
    after it (``"Name" input field``: ``field``) or just before it (``button "Save"``:
    ``button``); ``text`` when it says none."""
    preceding = _WORDS.findall(before)[-1:]
    following = [w.lower() for w in _WORDS.findall(after)[:2]]
    if preceding and _TEST_ID.match(preceding[0]):
        return "test_id"
    nouns = list(itertools.takewhile(KIND_NOUNS.__contains__, following))
    if nouns:
        return nouns[-1]
    if preceding and preceding[0].lower() in KIND_NOUNS:
        return preceding[0].lower()
    return "text"


def _identifier(name: str) -> str:
    word = re.sub(r"\W+", "_", name.strip().lower()).strip("_") or "value"
    return f"value_{word}" if word[0].isdigit() else word


def _unique(name: str, taken: list[str]) -> str:
    if name not in taken and name not in RESERVED:
        return name
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


# Names a parameter cannot take: what step code is given, and what it may call.
RESERVED = frozenset({"page", "expect", "re", "secret"})
