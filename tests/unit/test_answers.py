"""Reading code answers and verdict answers."""

from __future__ import annotations

import json
import re

import pytest

from prettyplay_behave.errors import CodePolicyError
from prettyplay_behave.llm.answers import (
    MAX_ANSWER_CHARS,
    Finding,
    GateVerdict,
    SameAs,
    UnparseableAnswer,
    Verdict,
    extract_code,
)
from prettyplay_behave.llm.purposes import read_answer
from prettyplay_behave.safety.step_code import check_code
from prettyplay_behave.vocabulary import GroupLabel, StepLabel

CODE = 'def step(page) -> None:\n    page.get_by_role("button", name="Checkout").click()\n'


def fenced(code: str, info: str = "python") -> str:
    return f"```{info}\n{code}```"


def reason_of(text: str) -> str:
    with pytest.raises(UnparseableAnswer) as caught:
        extract_code(text)
    return caught.value.reason


# -- code answers ------------------------------------------------------------------------------


def test_one_python_block_is_the_code():
    assert extract_code(fenced(CODE)) == CODE


def test_the_annotations_of_parameters_are_read_off_and_the_code_passes_the_policy():
    annotated = (
        "def step(page: Page, product: str, count: 'int') -> None:\n"
        "    page.get_by_label(product).fill(str(count))  # product: a label\n"
    )
    code = extract_code(fenced(annotated))
    assert code == (
        "def step(page, product, count) -> None:\n"
        "    page.get_by_label(product).fill(str(count))  # product: a label\n"
    )
    check_code(code)
    with pytest.raises(CodePolicyError, match="must not be annotated"):
        check_code(annotated)  # a cache file's code is read as it is written


def test_an_annotation_is_read_off_a_name_that_python_normalises():
    code = extract_code(fenced("def step(page, ﬁle: str) -> None:\n    page.goto(ﬁle)\n"))
    assert code == "def step(page, ﬁle) -> None:\n    page.goto(ﬁle)\n"  # "ﬁle" is file
    check_code(code)


def test_a_return_annotation_other_than_none_is_still_refused():
    code = extract_code(fenced("def step(page: Page) -> str:\n    return\n"))
    assert code == "def step(page) -> str:\n    return\n"
    with pytest.raises(CodePolicyError, match="may only be annotated `-> None`"):
        check_code(code)


def test_prose_around_the_block_is_fine():
    text = f"The button is labelled Checkout.\n\n{fenced(CODE)}\n\nThis clicks it."
    assert extract_code(text) == CODE


def test_an_untagged_block_and_crlf_line_ends_are_fine():
    assert extract_code(fenced(CODE, info="").replace("\n", "\r\n")) == CODE


def test_a_longer_fence_may_hold_triple_backticks():
    code = 'def step(page) -> None:\n    page.get_by_label("Note").fill("```")\n'
    assert extract_code(f"````python\n{code}````") == code


def test_no_block_but_the_whole_answer_is_step_code():
    # read since answers may come from any model: a bare answer that is step code is the code
    assert extract_code("def step(page):\n    pass\n") == "def step(page):\n    pass\n"


def test_no_block_and_prose_around_the_code():
    reason = reason_of("Here it is:\ndef step(page):\n    pass\n")
    assert reason.startswith("the answer holds 0 code blocks and is not step code itself")


def test_two_blocks():
    assert reason_of(fenced(CODE) + "\nor\n" + fenced(CODE)) == (
        "the answer holds 2 code blocks that define step; expected exactly one"
    )


def test_a_block_without_def_step():
    assert "does not define the function step(page)" in reason_of(fenced("page.goto('/')\n"))


def test_step_must_take_the_page():
    assert "step must take page" in reason_of(fenced("def step() -> None:\n    pass\n"))


def test_truncated_code_does_not_parse():
    truncated = 'def step(page) -> None:\n    page.get_by_role("button", name="Che\n'
    assert reason_of(fenced(truncated)).startswith("the code does not parse: line 2")


def test_an_unclosed_block_is_a_truncated_answer():
    assert "never closed" in reason_of("```python\n" + CODE)


def test_a_block_in_another_language():
    assert "marked 'javascript'" in reason_of(fenced("await page.click('a')\n", "javascript"))


def test_a_refusal():
    assert "0 code blocks" in reason_of("I'm sorry, but I can't help with that.")


def test_an_empty_answer():
    assert "0 code blocks" in reason_of("")


@pytest.mark.parametrize(
    "answer",
    [
        "SAME AS 2",
        "same as 2\n",
        "**SAME AS: 2**",
        "Step 2 already does this: it checks the list.\n\nSAME AS step 2.",
        "<think>SAME AS 1 or 2?</think>\nSAME AS #2",
        # a draft in the reasoning, code named in prose: no code given beside the line
        f"<think>\n{CODE}</think>\nSAME AS 2",
        "Step 2 already does it (its def step(page) clicks Checkout).\n\nSAME AS 2",
    ],
)
def test_a_line_naming_a_listed_step_is_its_number(answer: str) -> None:
    assert extract_code(answer, listed=3) == SameAs(2)


@pytest.mark.parametrize(
    ("answer", "listed", "reason"),
    [
        ("SAME AS 4", 3, "the answer names step 4 (SAME AS 4), but the request listed 3"),
        ("SAME AS 0", 3, "the answer names step 0 (SAME AS 0), but the request listed 3"),
        ("SAME AS 1", 0, "the answer names a listed step (SAME AS 1), but the request listed none"),
        ("SAME AS 1\n\nSAME AS 2", 3, "the answer names 2 listed steps (SAME AS 1, SAME AS 2)"),
    ],
)
def test_a_same_as_answer_that_names_no_single_listed_step_is_unparseable(
    answer: str, listed: int, reason: str
) -> None:
    with pytest.raises(UnparseableAnswer, match=re.escape(reason)):
        extract_code(answer, listed)


BOTH = "the answer both names a listed step (SAME AS 1) and gives code that defines step"


@pytest.mark.parametrize(
    "answer",
    [
        f"SAME AS 1\n{fenced(CODE)}",
        f"{fenced(CODE, '')}\n\nSAME AS 1",
        f"SAME AS 1\n{CODE}",  # no fence: the code was dropped without a word
        f"{CODE}\nSAME AS 1",
        f"SAME AS 1\n\nOr, written out:\n\n{CODE.replace('def step(', 'def  step (')}",
        "SAME AS 1\n~~~\ndef step(page) -> None\n    pass\n~~~\n",  # does not parse
    ],
    ids=["fenced after", "fenced before", "after", "before", "in prose", "broken"],
)
def test_a_same_as_beside_code_that_defines_step_is_unparseable_saying_both_were_given(
    answer: str,
) -> None:
    with pytest.raises(UnparseableAnswer, match=re.escape(BOTH)):
        extract_code(answer, listed=3)


def test_a_same_as_in_prose_or_code_is_no_answer_of_its_own() -> None:
    prose = "It is not the same as step 2, which opens the cart.\n\n" + fenced(CODE)
    assert extract_code(prose, listed=3) == CODE


def test_a_huge_answer_is_refused():
    huge = fenced(CODE + "    # padding\n" * 80_000)
    assert len(huge) > 1_000_000
    assert reason_of(huge) == (
        f"the answer is {len(huge):,} characters long; the limit is {MAX_ANSWER_CHARS:,}"
    )


# -- verdicts ----------------------------------------------------------------------------------

CLASSIFY = {"label": "rot", "explanation": "the button was renamed", "recommendation": "heal"}
DIAGNOSE = {
    "label": "recoverable",
    "root_step": "fill the email field",
    "explanation": "the email went to the wrong field",
    "recommendation": "use the field labelled Email",
}


def verdict_reason(text: str, purpose: str) -> str:
    with pytest.raises(UnparseableAnswer) as caught:
        read_answer(text, purpose)
    return caught.value.reason


def test_bare_json_verdict():
    assert read_answer(f"  {json.dumps(CLASSIFY)}\n", "classify") == Verdict(
        StepLabel.ROT, "the button was renamed", "heal"
    )


def test_fenced_json_verdict_with_prose():
    text = f"Here is my verdict:\n```json\n{json.dumps(DIAGNOSE, indent=2)}\n```\n"
    assert read_answer(text, "diagnose") == Verdict(
        GroupLabel.RECOVERABLE,
        "the email went to the wrong field",
        "use the field labelled Email",
        root_step="fill the email field",
    )


def test_a_non_recoverable_diagnosis_may_leave_the_root_empty():
    verdict = read_answer(
        json.dumps({**DIAGNOSE, "label": "incurable", "root_step": None}), "diagnose"
    )
    assert isinstance(verdict, Verdict)
    assert (verdict.label, verdict.root_step) == ("incurable", None)


def test_truncated_json():
    assert verdict_reason(json.dumps(CLASSIFY)[:30], "classify").startswith(
        "the answer is not valid JSON"
    )


def test_wrong_label():
    reason = verdict_reason(json.dumps({**CLASSIFY, "label": "flaky"}), "classify")
    assert reason == (
        "the verdict: label 'flaky' is not one of product_defect, rot, fixable, incurable"
    )


def test_missing_field():
    answer = json.dumps({"label": "rot", "explanation": "x"})
    assert verdict_reason(answer, "classify") == "the verdict lacks the field 'recommendation'"


def test_wrong_field_type():
    answer = json.dumps({**CLASSIFY, "explanation": ["x"]})
    assert "'explanation' must be a string" in verdict_reason(answer, "classify")


def test_labels_belong_to_their_purpose():
    assert "not one of recoverable" in verdict_reason(
        json.dumps({**DIAGNOSE, "label": "rot"}), "diagnose"
    )
    assert "not one of product_defect" in verdict_reason(
        json.dumps({**CLASSIFY, "label": "recoverable"}), "classify"
    )


def test_a_recoverable_diagnosis_needs_its_root():
    answer = json.dumps({**DIAGNOSE, "root_step": ""})
    assert "must name its root_step" in verdict_reason(answer, "diagnose")


def test_not_an_object():
    assert "a JSON list" in verdict_reason("[1, 2]", "classify")
    assert "empty" in verdict_reason("   ", "gate")


def test_a_clean_gate():
    verdict = read_answer('{"findings": []}', "gate")
    assert verdict == GateVerdict(())
    assert not verdict.blocking


def test_gate_findings_block_only_when_high():
    findings = [
        {"dimension": "adequacy", "severity": "medium", "message": "brittle locator"},
        {"dimension": "instructions", "severity": "low", "message": "style"},
    ]
    verdict = read_answer(json.dumps({"findings": findings}), "gate")
    assert isinstance(verdict, GateVerdict)
    assert verdict.findings[0] == Finding("adequacy", "medium", "brittle locator")
    assert not verdict.blocking

    findings.append({"dimension": "adequacy", "severity": "HIGH", "message": "asserts nothing"})
    verdict = read_answer(json.dumps({"findings": findings}), "gate")
    assert isinstance(verdict, GateVerdict)
    assert verdict.blocking
    assert [f.blocking for f in verdict.findings] == [False, False, True]


def test_malformed_gate_findings():
    bad_dimension = {"findings": [{"dimension": "style", "severity": "low", "message": "m"}]}
    assert "dimension 'style'" in verdict_reason(json.dumps(bad_dimension), "gate")
    assert "must be a list" in verdict_reason('{"findings": "none"}', "gate")
    assert "lacks the field 'findings'" in verdict_reason("{}", "gate")


def test_a_huge_verdict_is_refused():
    answer = json.dumps({**CLASSIFY, "explanation": "x" * 1_000_000})
    assert "characters long" in verdict_reason(answer, "classify")


def test_a_code_purpose_reads_a_verdict_as_no_code():
    with pytest.raises(UnparseableAnswer, match="is not step code itself"):
        read_answer(json.dumps(CLASSIFY), "generate")
