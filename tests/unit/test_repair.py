"""Locator repair without the model: how like what a locator found an element is, when one
candidate is clear, and how a locator call is rewritten in its own style."""

from __future__ import annotations

import pytest

from prettyplay_behave.cache import FIELD_CHARS, Found
from prettyplay_behave.engine.evidence import kept_text, last_call, receiver_of, rewrite
from prettyplay_behave.engine.renames import spelt_in
from prettyplay_behave.engine.repair import Candidate, ranked, score, unambiguous
from prettyplay_behave.safety.secrets import Secrets

ADD = Found('get_by_role("button", name="Add to cart")', "button", "Add to cart", tag="button")


def element(role: str, name: str, test_id: str = "", tag: str = "button") -> Found:
    return Found("", role, name, test_id, name, tag)


def test_an_element_of_another_role_is_no_candidate_and_a_kept_test_id_is_the_element() -> None:
    assert score(ADD, element("link", "Add to cart", tag="a")) == 0
    kept_id = Found(ADD.locator, "button", "Add to cart", "add-mug", tag="button")
    assert score(kept_id, element("button", "Buy now", "add-mug")) == 1.0
    # a label that became a span kept its test id: it is the element itself all the same
    label = Found('get_by_test_id("name-label")', "", "", "name-label", "Name", "label")
    assert score(label, Found("", "", "", "name-label", "Name", "span")) == 1.0
    assert score(ADD, element("button", "Add to basket")) > score(ADD, element("button", "Delete"))


def test_alike_elements_are_one_candidate_and_a_clear_one_stands_out() -> None:
    page = [element("button", "Add to basket")] * 3 + [element("button", "Allow all")]
    candidates = ranked(ADD, page)
    assert [c.element.name for c in candidates] == ["Add to basket", "Allow all"]
    assert unambiguous(candidates) == candidates[0]


@pytest.mark.parametrize(
    "scores",
    [[0.5], [0.8, 0.7]],  # below the floor; two close ones
    ids=["weak", "close"],
)
def test_no_candidate_is_clear_when_weak_or_close(scores: list[float]) -> None:
    assert unambiguous([Candidate(element("button", str(s)), s) for s in scores]) is None


def test_a_chain_names_its_last_locating_call_and_what_it_is_made_on() -> None:
    chain = 'get_by_role("article", name="Blue Mug").get_by_role("button", name="Add").first'
    assert last_call(chain) == 'get_by_role("button", name="Add")'
    assert receiver_of(chain) == 'get_by_role("article", name="Blue Mug")'
    assert receiver_of('get_by_test_id("add").nth(0)') == ""
    assert last_call("eval_on_selector('x')") is None  # no locating call


@pytest.mark.parametrize(
    ("call", "rewritten"),
    [
        ('get_by_role("button", name="Add", exact=True)',
         'get_by_role("button", name="Add to basket", exact=True)'),
        ('get_by_test_id("add-mug")', 'get_by_test_id("add-1")'),
        ('get_by_label("Email")', 'get_by_label("Add to basket")'),
        ('get_by_text("Add to cart")', 'get_by_text("Add to basket now")'),
        ('get_by_role("link", name="Add")', None),  # the element is a button, not a link
        ('locator("#add")', None),  # a CSS locator is not rewritten
        ('get_by_role("button", name=re.compile("^Add"))', None),  # nor a pattern
    ],
)  # fmt: skip
def test_a_call_is_rewritten_in_its_own_style(call: str, rewritten: str | None) -> None:
    found = Found("", "button", "Add to basket", "add-1", "Add to basket now", "button")
    assert rewrite(call, found) == rewritten


def test_the_code_spells_the_call_its_own_way() -> None:
    code = "def step(page) -> None:\n    page.get_by_role('button', name='Add').click()\n"
    assert spelt_in(code, 'get_by_role("button", name="Add")') == (
        "get_by_role('button', name='Add')"
    )
    assert spelt_in(code, 'get_by_role("button", name="Remove")') is None


def test_a_name_that_holds_a_secrets_placeholder_is_never_rewritten_to() -> None:
    """The page shows the secret where the record has its placeholder: a locator spelling the
    placeholder finds nothing there, and code never spells one."""
    shown = Found("", "button", "Found: ${CANARY}", "", "Found: ${CANARY}", "button")
    assert rewrite('get_by_role("button", name="Found it")', shown) is None
    assert rewrite('get_by_text("Found it")', shown) is None
    assert rewrite('get_by_role("button", name="Found it")', ADD) is not None


CANARY = "ppcanary7Hq2Zx9wKd"


@pytest.mark.parametrize("padding", [60, 70, 75, 78, 79, 80, 90])
def test_a_text_is_redacted_before_it_is_cut_so_no_part_of_a_secret_is_kept(padding: int) -> None:
    """The page gives a text with room past the cut; the secret it shows across the cut is
    redacted whole, and the cut never splits its placeholder."""
    secrets = Secrets({"CANARY": CANARY})
    secrets.require(["CANARY"], "s")
    text = "Found: " + "x" * padding + " " + CANARY + " and more"
    kept = kept_text(text, secrets.redact)
    assert len(kept) <= FIELD_CHARS
    shown = kept.replace("${CANARY}", "").lower()
    assert not any(CANARY[i : i + 4].lower() in shown for i in range(len(CANARY) - 3)), kept
    assert kept == text[: len(kept)] or "${CANARY}" in kept
    assert "${" not in kept or "${CANARY}" in kept  # a placeholder whole, or none
    assert kept_text("short " + CANARY, secrets.redact) == "short ${CANARY}"
