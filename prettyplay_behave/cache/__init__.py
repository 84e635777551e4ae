"""The cache files: a step library per feature, replayed without an LLM.

One JSON file per feature file mirrors its path under the cache folder
(``<cache_dir>/shop/checkout.feature.json``); a test of the Python API, whose name has no
``::``, has ``<cache_dir>/<name>.json``. A file (format 2) is the feature's **step library**: an
entry per step (kind, sentence template, data), shared by every scenario of the feature that
has the step. A sentence's quoted strings, numbers and Outline placeholders are its parameters
(:mod:`..parameters`): the template ``I add the "{}" to the cart`` is one entry for every
product, its code taking the product as a parameter. An entry may be narrower:

- **specific to values** (``values``): its code spells the values out, so it serves only them;
- **pinned to a scenario** (``scenario``, ``occurrence``): the same sentence needs other code
  in that scenario (its occurrence-th step with that sentence), or the step was judged red there;
- **red** (``verdict``): judged ``product_defect`` or ``incurable``; a replay that is still red
  fails with the stored verdict, with no LLM request, and a green one turns the entry green.

::

    {
      "format": 2,
      "steps": [
        {
          "code": [
            "def step(page, text) -> None:",
            "    page.get_by_role('listitem').filter(has_text=text).get_by_role('button').click()"
          ],
          "kind": "action",
          "model": "gpt-4.1-mini",
          "origin": "generated",
          "parameters": ["text"],
          "sentence": "I add the \\"{}\\" to the cart",
          "written": "2026-12-02"
        }
      ]
    }

A step finds its entry in this order: its scenario's pin, an entry specific to its values, the
template's entry, and an entry of its sentence as written (a format-1 entry of an Outline row).
Format 1 (an entry per scenario and occurrence) is read as before and rewritten as format 2 on
the first write or by ``prettyplay cache migrate``, nothing lost: equal code of the same step
becomes one entry, other code a pin of its scenario. Writes are locked (``<file>.lock``) and
atomic; every load checks the syntax, the format, each entry's shape and its code.

A file is input nobody vouches for (it comes in with a pull request): whatever it holds, a load
raises a CacheError naming the file, never another exception (JSON nested past any stack, a
value too big or too deep to print in the message), and a named pipe or a device in its place is
refused unread. The text an entry only describes itself with (a red verdict's explanation and
recommendation, ``model``, ``written``) is read with its control characters escaped, so no
output shows them raw; the text a step is matched by (sentence, data, values, scenario) is kept
as written and escaped where it is shown. A lock file is never followed through a symbolic link
(nor opened when another name shares its file): such a lock is refused with a CacheError naming
it, and the file it points to is untouched.
"""

from .format import FORMAT, READS, load_file, parse, render
from .library import (
    ORIGINS,
    RED_LABELS,
    SEPARATOR,
    CacheKey,
    CacheWrite,
    Found,
    GreenRecord,
    Library,
    RedVerdict,
    StepEntry,
    Validate,
    closest,
    feature_of,
    locate,
)
from .store import CACHE_FOLDER, DEFAULT_CACHE_DIR, CacheStore, cache_files, today, update

__all__ = [
    "CACHE_FOLDER",
    "DEFAULT_CACHE_DIR",
    "FORMAT",
    "ORIGINS",
    "READS",
    "RED_LABELS",
    "SEPARATOR",
    "CacheKey",
    "CacheStore",
    "CacheWrite",
    "Found",
    "GreenRecord",
    "Library",
    "RedVerdict",
    "StepEntry",
    "Validate",
    "cache_files",
    "closest",
    "feature_of",
    "load_file",
    "locate",
    "parse",
    "render",
    "today",
    "update",
]
