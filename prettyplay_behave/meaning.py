"""What a step's sentence asks of its code: perform an action, make a stated condition hold, or
check.

A check (``Then``) asserts its sentence. A sentence under ``Given``/``When``/``And`` is an action
unless it states a condition (``the cart is empty``, ``I am logged in``, ``the user sees 0 seats
selected``): then it is a *precondition*, whose code may set the condition up or assert that it
holds, and which the gate judges by whether the condition holds afterwards, not by whether the
page changed. A sentence states a condition when its first verb is one of being, having or
seeing: with ``I``/``we`` as subject the verb comes right after it; with any other subject, no
common action verb comes before it. The rule reads the sentence without its quoted values.
"""

from __future__ import annotations

import re

from .vocabulary import Kind, Meaning, words

STATE_VERBS = words(
    "am is are was were be been isn't aren't has have hasn't haven't see sees shows show"
    " displays display contains contain lists remains remain stays stay exists exist should"
    " shouldn't must can't cannot does doesn't do don't"
)
ACTION_VERBS = words(
    "accept accepts add adds apply applies book books buy buys cancel cancels check checks"
    " choose chooses clear clears click clicks close closes complete completes confirm confirms"
    " create creates delete deletes dismiss dismisses download downloads drag drags edit edits"
    " enter enters fill fills go goes hover hovers leave leaves load loads log logs mark marks"
    " move moves navigate navigates open opens order orders pay pays pick picks press presses"
    " refresh refreshes reload reloads remove removes rename renames reset resets save saves"
    " scroll scrolls search searches select selects send sends set sets sign signs sort sorts"
    " submit submits switch switches tap taps toggle toggles type types uncheck unchecks upload"
    " uploads visit visits wait waits"
)
SUBJECTS = words("i we")
_QUOTED = re.compile(r'"[^"]*"|\'[^\']*\'|<[^<>]*>')
_WORD = re.compile(r"[\w']+")


def meaning_of(kind: Kind, sentence: str) -> Meaning:
    """What the code of a step of ``kind`` is asked to do for ``sentence``."""
    if kind is Kind.CHECK:
        return Meaning.CHECK
    return Meaning.PRECONDITION if states_a_condition(sentence) else Meaning.ACTION


def states_a_condition(sentence: str) -> bool:
    """Whether ``sentence`` states a condition rather than an action (see the module)."""
    tokens = [t.lower() for t in _WORD.findall(_QUOTED.sub(" ", sentence))]
    if not tokens:
        return False
    if tokens[0] in SUBJECTS:
        return len(tokens) > 1 and tokens[1] in STATE_VERBS
    for token in tokens:
        if token in ACTION_VERBS:
            return False
        if token in STATE_VERBS:
            return True
    return False


# Words of a sentence that expects the page to be an error page (a 404, "access denied").
_ERROR_PAGE = re.compile(
    r"\b(?:[45]\d\d|errors?|not found|forbidden|unauthori[sz]ed|denied|unavailable|gone)\b",
    re.IGNORECASE,
)


def expects_error_page(sentence: str) -> bool:
    """Whether ``sentence`` expects its page to be an HTTP error document (``I see a 404
    page``, ``access is denied``): only then may a step end green on one."""
    return bool(_ERROR_PAGE.search(sentence))
