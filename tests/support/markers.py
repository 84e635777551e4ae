"""What the page-state tests assert of text that was neutralised: no marker of the untrusted
block is left in it, however it is spelled."""

from __future__ import annotations

import re
import unicodedata

from prettyplay_behave.browser.snapshot import QUOTED_MARKER

# Anything that could read as the block's opening or closing marker, after the same folding a
# reader's eye (or a model) does: width, case, accents, invisible characters, look-alike letters.
LOOK_ALIKE = re.compile(r"[<＜﹤]\s*/?\s*untrusted\W*page\W*data|untrusted[-_]page[-_]data")


def folded(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text).casefold()
    return "".join(c for c in decomposed if unicodedata.category(c) not in ("Mn", "Cf"))


def assert_marker_proof(text: str) -> None:
    assert not LOOK_ALIKE.search(folded(text)), text
    without_quoted = folded(text).replace(QUOTED_MARKER, "")
    assert not re.search(r"untrusted\W*page\W*data", without_quoted), text
