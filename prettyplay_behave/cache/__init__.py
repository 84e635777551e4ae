"""The cache: one step library per project, kept as Python source and replayed without an LLM.

The library lies under the cache folder (``<cache_dir>/steps/``), one file per step (kind,
sentence template, data), whatever feature uses it; the file is named by a slug of the template
and a hash of the step (``action-i-add-the-to-the-cart-3f2a9c1b0d.py``), so two steps never
share a file and adding a step adds a file. A sentence's quoted strings, numbers and Outline
placeholders are its parameters (:mod:`..parameters`): the template ``I add the "{}" to the
cart`` is one entry for every product, its code taking the product as a parameter. Every entry
of the step is in its file, as a step function under a decorator holding its metadata::

    # prettyplay step library (format 3): read by prettyplay without importing it.


    @step(
        kind='action',
        sentence='I add the "{}" to the cart',
        origin='generated',
        model='gpt-4.1-mini',
        written='2026-12-02',
    )
    def step(page, text):
        page.get_by_role("listitem").filter(has_text=text).get_by_role("button").click()

An entry may be narrower:

- **specific to values** (``values``): its code spells the values out, so it serves only them;
- **pinned to a scenario** (``feature``, ``scenario``, ``occurrence``): the same sentence needs
  other code in that scenario of that feature file (its occurrence-th step with that sentence),
  or the step was judged red there; a test of the Python API names itself as both;
- **a feature's own** (``feature`` alone): code that served one feature where the others had
  another (a migration keeps both);
- **red** (``verdict``, ``explanation``, ``recommendation``): judged ``product_defect`` or
  ``incurable``; a replay that is still red fails with the stored verdict, with no LLM request,
  and a green one turns the entry green.

A step finds its entry in this order (:func:`..address.lookup`): its scenario's pin, its
feature's own entry, an entry specific to its values, the template's entry, and an entry of its
sentence as written (a format-1 entry of an Outline row). A file is read with :mod:`ast`, never
imported: only the decorator's literal keyword values are evaluated, the function's text is the
entry's code and the code policy checks it; anything else at the top of the file is refused.

The per-feature JSON files of formats 1 and 2 (``<cache_dir>/shop/checkout.feature.json``) are
read as the library they migrate to, and moved into it, nothing lost, by the first write of a
run or by ``prettyplay cache migrate``: a step's equal code in several features becomes one
entry, other code stays its feature's. Writes are locked per file (``<file>.lock``) and atomic;
every load checks the syntax, the format, each entry's shape and its code.

A file is input nobody vouches for (it comes in with a pull request): whatever it holds, a load
raises a CacheError naming the file, never another exception (a syntax error, a conflict
marker, a value too big or too deep to print in the message), and a named pipe or a device in
its place is refused unread. The text an entry only describes itself with (a red verdict's
explanation and recommendation, ``model``, ``written``) is read with its control characters
escaped, so no output shows them raw; the text a step is matched by (sentence, data, values,
scenario) is kept as written and escaped where it is shown. Nothing of the cache is listed,
read, written or deleted through a symbolic link, the cache folder's own name included, and no
cache or lock file is opened when another name shares its file: such a path is refused with a
CacheError naming the link and where it points, and what it points to is untouched
(:mod:`.paths`). A green record, which a failing step's evidence reads the page with, is
refused past its bounds (``record_problem``: its number of locators, the length of each text,
the patterns a locator may hold).
"""

from .library import (
    FIELD_CHARS,
    FORMAT,
    MAX_FOUND,
    ORIGINS,
    READS,
    RED_LABELS,
    CacheKey,
    CacheWrite,
    Found,
    GreenRecord,
    Library,
    RedVerdict,
    StepEntry,
    Validate,
    closest,
    locate,
    locator_problem,
    record_problem,
)
from .paths import STEPS_FOLDER, files_in, unlinked
from .source import file_name, load_file, parse, parse_steps, render_steps
from .store import (
    CACHE_FOLDER,
    DEFAULT_CACHE_DIR,
    CacheStore,
    cache_files,
    library_files,
    merged,
    old_files,
    today,
    update,
)

__all__ = [
    "CACHE_FOLDER",
    "DEFAULT_CACHE_DIR",
    "FIELD_CHARS",
    "FORMAT",
    "MAX_FOUND",
    "ORIGINS",
    "READS",
    "RED_LABELS",
    "STEPS_FOLDER",
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
    "file_name",
    "files_in",
    "library_files",
    "load_file",
    "locate",
    "locator_problem",
    "merged",
    "old_files",
    "parse",
    "parse_steps",
    "record_problem",
    "render_steps",
    "today",
    "unlinked",
    "update",
]
