"""Answers shaped the way models of every size write them: reasoning blocks, code without a
fence or in odd fences, verdicts in prose, with JSON slips and capitalised labels."""

from __future__ import annotations

import contextlib
import json
import time

import pytest

from prettyplay_behave.llm.answers import (
    MAX_ANSWER_CHARS,
    REPAIR_MAX_CHARS,
    Finding,
    GateVerdict,
    UnparseableAnswer,
    Verdict,
    extract_code,
    without_reasoning,
)
from prettyplay_behave.llm.purposes import read_answer
from prettyplay_behave.vocabulary import GroupLabel, StepLabel

CODE = 'def step(page) -> None:\n    page.get_by_role("button", name="Checkout").click()\n'
DRAFT = 'def step(page) -> None:\n    page.get_by_text("Checkout").click()\n'
CLASSIFY = {"label": "rot", "explanation": "the button was renamed", "recommendation": "heal"}
ROT = Verdict(StepLabel.ROT, "the button was renamed", "heal")


def code_reason(text: str) -> str:
    with pytest.raises(UnparseableAnswer) as caught:
        extract_code(text)
    return caught.value.reason


def verdict_reason(text: str, purpose: str) -> str:
    with pytest.raises(UnparseableAnswer) as caught:
        read_answer(text, purpose)
    return caught.value.reason


# -- reasoning blocks ---------------------------------------------------------------------------


def test_a_draft_block_inside_the_reasoning_is_never_the_code() -> None:
    text = (
        "<think>\nThe button may be a link. A first try:\n```python\n" + DRAFT + "```\n"
        "No, the snapshot shows a button.\n</think>\n\n```python\n" + CODE + "```"
    )
    assert extract_code(text) == CODE


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("<think>", "</think>"),
        ("<THINK>", "</THINK>"),
        ("<thinking>", "</thinking>"),
        ("<reasoning>", "</reasoning>"),
        ("<thought>", "</thought>"),
        ("<|thinking|>", "<|/thinking|>"),
        ("<|begin_of_thought|>", "<|end_of_thought|>"),
        ("[THINK]", "[/THINK]"),
    ],
)
def test_every_spelling_of_a_reasoning_block_is_dropped(opening: str, closing: str) -> None:
    text = f"{opening}\nI could write:\n```python\n{DRAFT}```\n{closing}\n```python\n{CODE}```"
    assert extract_code(text) == CODE


def test_a_closing_tag_alone_ends_reasoning_the_server_opened() -> None:
    # a chat template that opens <think> in the prompt leaves only its end in the answer
    text = f"Let me draft:\n```python\n{DRAFT}```\nDone.\n</think>\n\n```python\n{CODE}```"
    assert extract_code(text) == CODE


def test_the_final_channel_of_the_harmony_format_is_the_answer() -> None:
    text = (
        "<|channel|>analysis<|message|>```python\n" + DRAFT + "```<|end|>"
        "<|start|>assistant<|channel|>final<|message|>```python\n" + CODE + "```<|return|>"
    )
    assert extract_code(text) == CODE


def test_nested_reasoning_blocks_are_dropped_whole() -> None:
    text = f"<think>a <think>b</think> c\n```python\n{DRAFT}```\n</think>\n{CODE}"
    assert extract_code(text) == CODE


def test_an_unclosed_reasoning_block_is_a_reasoning_only_answer() -> None:
    text = f"<think>\nLet me look at the page.\n```python\n{DRAFT}```\nHmm, maybe"
    reason = code_reason(text)
    assert reason == (
        "the answer is only reasoning: its <think> block is never closed (the answer looks cut off)"
    )
    assert verdict_reason('<think>{"label": "rot", ', "classify") == reason


def test_a_closed_reasoning_block_with_nothing_after_it() -> None:
    assert code_reason(f"<think>\n```python\n{DRAFT}```\n</think>\n\n") == (
        "the answer is only reasoning: nothing follows its reasoning block"
    )


def test_the_answer_before_an_unclosed_reasoning_block_is_read() -> None:
    assert extract_code(f"```python\n{CODE}```\n<think>was that right") == CODE


def test_without_reasoning_keeps_answers_without_tags_as_they_are() -> None:
    text = "a <b>bold</b> claim, x < y > z, [link](x) and <thinker>"
    assert without_reasoning(text) == text


# -- code answers -------------------------------------------------------------------------------


def test_code_without_any_fence_is_the_whole_answer() -> None:
    assert extract_code("\n" + CODE + "\n\n") == CODE


def test_a_stray_closing_fence_after_bare_code() -> None:
    assert extract_code(CODE + "```\n") == CODE


@pytest.mark.parametrize(
    "mark", ["Python", "PY", "py3", "python3", "python title=step.py", "{.python}"]
)
def test_python_marks_in_any_spelling(mark: str) -> None:
    assert extract_code(f"```{mark}\n{CODE}```") == CODE


def test_a_tilde_fence() -> None:
    assert extract_code(f"~~~python\n{CODE}~~~") == CODE
    # a tilde fence may hold backtick fences, and the other way round
    inner = 'def step(page) -> None:\n    page.get_by_label("Note").fill("~~~ ```")\n'
    assert extract_code(f"~~~~\n{inner}~~~~") == inner


def test_an_indented_fence_in_a_list_item() -> None:
    indented = "\n".join("   " + line for line in CODE.splitlines())
    assert extract_code(f"1. The step:\n   ```python\n{indented}\n   ```\n") == CODE


def test_an_explanation_block_beside_the_code_block() -> None:
    text = (
        f"```python\n{CODE}```\n\n```text\nThis clicks the Checkout button.\n```\n"
        "Usage:\n```python\nstep(page)\n```"
    )
    assert extract_code(text) == CODE


def test_a_broken_draft_beside_the_code_block() -> None:
    broken = 'def step(page) -> None:\n    page.get_by_role("button", name="Che\n'
    assert extract_code(f"```python\n{broken}```\nFixed:\n```python\n{CODE}```") == CODE


def test_two_blocks_defining_step_outside_reasoning_are_refused() -> None:
    text = f"A first idea:\n```python\n{DRAFT}```\nBetter:\n```py\n{CODE}```"
    assert code_reason(text) == (
        "the answer holds 2 code blocks that define step; expected exactly one"
    )


def test_blocks_none_of_which_defines_step() -> None:
    reason = code_reason("```python\npage.goto('/')\n```\n```python\nx = (\n```")
    assert reason.startswith("none of the 2 code blocks defines step(page): block 1: ")
    assert "block 2: the code does not parse: line 1" in reason


def test_blocks_in_other_languages_only() -> None:
    reason = code_reason("```js\nawait page.click('a')\n```\n```bash\nnpx playwright\n```")
    assert reason == "the code blocks are marked 'js', 'bash'; expected one python block"


def test_a_truncated_block_after_a_good_one_is_still_truncated() -> None:
    text = f"```python\n{CODE}```\nAlso:\n```python\ndef step(page) -> None:\n    page.go"
    assert "never closed" in code_reason(text)


def test_a_wrong_parameter_list_in_the_one_defining_block() -> None:
    text = "```text\nnotes\n```\n```python\ndef step(*pages) -> None:\n    pass\n```"
    assert "step must take page, then the step's parameters" in code_reason(text)


# -- verdicts -----------------------------------------------------------------------------------


def test_a_verdict_in_prose() -> None:
    text = f"Sure, here is my review: {json.dumps(CLASSIFY)} Let me know if you need more."
    assert read_answer(text, "classify") == ROT


def test_a_verdict_in_a_json_fence_with_slips() -> None:
    text = (
        "```json\n{\n  'label': 'Rot',\n  'explanation': \"the button was renamed\",\n"
        "  'recommendation': 'heal',\n}\n```"
    )
    assert read_answer(text, "classify") == ROT


@pytest.mark.parametrize(
    "label",
    ["Product Defect", "product-defect", "PRODUCT_DEFECT", "ProductDefect", " product defect. "],
)
def test_labels_match_whatever_their_case_and_separators(label: str) -> None:
    verdict = read_answer(json.dumps({**CLASSIFY, "label": label}), "classify")
    assert isinstance(verdict, Verdict)
    assert verdict.label is StepLabel.PRODUCT_DEFECT


def test_field_names_match_whatever_their_case() -> None:
    answer = (
        '{"Label": "Recoverable", "Root Step": "fill the email", "Explanation": "e", '
        '"recommendation": "r"}'
    )
    assert read_answer(answer, "diagnose") == Verdict(
        GroupLabel.RECOVERABLE, "e", "r", root_step="fill the email"
    )


def test_an_unknown_label_is_still_refused() -> None:
    reason = verdict_reason(json.dumps({**CLASSIFY, "label": "Flaky"}), "classify")
    assert reason == (
        "the verdict: label 'Flaky' is not one of product_defect, rot, fixable, incurable"
    )


def test_the_first_object_that_fits_is_the_verdict() -> None:
    text = (
        "The template asks for {label, explanation, recommendation}. The failing step shows "
        '{"url": "/cart"}. My verdict: ' + json.dumps({**CLASSIFY, "label": "Fixable"}) + " and "
        "not " + json.dumps({**CLASSIFY, "label": "product_defect"})
    )
    verdict = read_answer(text, "classify")
    assert isinstance(verdict, Verdict) and verdict.label is StepLabel.FIXABLE


def test_no_object_fits() -> None:
    text = '{"url": "/cart"} and {"label": "rot"}'
    assert verdict_reason(text, "classify") == (
        "the verdict lacks the field 'label' (and none of the other 1 fits either)"
    )


def test_braces_inside_strings_do_not_end_the_object() -> None:
    answer = json.dumps({**CLASSIFY, "explanation": 'the text "}{" was renamed'})
    verdict = read_answer(f"Verdict: {answer}", "classify")
    assert isinstance(verdict, Verdict) and verdict.explanation == 'the text "}{" was renamed'


def test_a_draft_verdict_inside_the_reasoning_is_never_the_verdict() -> None:
    draft = json.dumps(
        {"findings": [{"dimension": "adequacy", "severity": "high", "message": "x"}]}
    )
    text = f"<think>\nFirst thought: {draft}\nBut it does click the button.\n</think>\n" + (
        '{"findings": []}'
    )
    assert read_answer(text, "gate") == GateVerdict(())


def test_gate_findings_in_any_case() -> None:
    finding = '{"Dimension": "Adequacy", "Severity": "High", "message": "m"}'
    text = f'```json\n{{"findings": [{finding},]}}\n```'
    verdict = read_answer(text, "gate")
    assert verdict == GateVerdict((Finding("adequacy", "high", "m"),))
    assert verdict.blocking


def test_a_truncated_verdict_is_never_completed() -> None:
    # a repair would complete each of these into a verdict that fits
    cut = '{"label": "rot", "recommendation": "heal", "explanation": "the butt'
    assert verdict_reason(cut, "classify") == (
        "the answer is not valid JSON: an object is never closed (the answer looks truncated)"
    )
    low = '{"dimension": "adequacy", "severity": "low", "message": "m"}'
    for gate in ('{"findings": [' + low, '{"findings": [' + low + ', {"dimen'):
        # what was cut off may be a blocking finding
        assert verdict_reason(gate, "gate").startswith("the answer is not valid JSON: an object")


def test_a_repair_that_would_lose_a_finding_is_refused() -> None:
    broken = (
        '{"findings": [{"dimension": "adequacy", "severity": "low", "message": "style"}, '
        '["dimension": "adequacy", "severity": "high", "message": "asserts nothing"}]}'
    )
    assert "repair loses findings" in verdict_reason(broken, "gate")


def test_a_long_broken_object_is_not_repaired() -> None:
    long = {**CLASSIFY, "explanation": "x" * REPAIR_MAX_CHARS}
    broken = json.dumps(long)[:-1] + ",}"
    assert verdict_reason(broken, "classify").startswith("the answer is not valid JSON: ")
    assert read_answer(json.dumps(long)[:-1] + "}", "classify") is not None  # valid: no repair


def test_prose_in_braces_is_not_an_object() -> None:
    assert verdict_reason("I used {placeholder} syntax.", "classify").startswith(
        "the answer is not valid JSON"
    )


# -- bounds -------------------------------------------------------------------------------------

NEAR_LIMIT = MAX_ANSWER_CHARS - 10
ADVERSARIAL = {
    "open braces": "{" * NEAR_LIMIT,
    "closed braces": "{}" * (NEAR_LIMIT // 2),
    "nested": "{" * (NEAR_LIMIT // 2) + "}" * (NEAR_LIMIT // 2),
    "escapes": '{"a": "' + "\\" * (NEAR_LIMIT - 8) + '"}',
    "unquoted keys": "{" + "a: b, " * (NEAR_LIMIT // 6) + "}",
    "many objects": "{a: b} " * (NEAR_LIMIT // 7),
    "fence line": "```" + "a" * (NEAR_LIMIT - 4) + "`",
    "fences": "```\n" * (NEAR_LIMIT // 4),
    "think tags": "<think>" * (NEAR_LIMIT // 7),
    "closing tags": "</think>" * (NEAR_LIMIT // 8),
    "almost tags": "<|think" * (NEAR_LIMIT // 7),
    "a same-as line of blanks": "SAME AS" + " " * (NEAR_LIMIT - 9) + "x",
    "a same-as and lines of blanks": "SAME AS 1\n" + (" " * 99 + "\n") * (NEAR_LIMIT // 101),
}


@pytest.mark.parametrize("shape", sorted(ADVERSARIAL))
def test_reading_an_answer_at_the_size_limit_ends(shape: str) -> None:
    text = ADVERSARIAL[shape]
    assert len(text) <= MAX_ANSWER_CHARS
    started = time.monotonic()
    for read in (extract_code, lambda t: extract_code(t, 1), lambda t: read_answer(t, "gate")):
        with contextlib.suppress(UnparseableAnswer):
            read(text)
    # generous: the figures are in bench/answer_reading.py; this shows that reading ends
    assert time.monotonic() - started < 10


def test_a_repaired_gate_verdict_with_capitalised_names_keeps_its_findings() -> None:
    text = '{"Findings": [{"Dimension": "Adequacy", "Severity": "Low", "message": "m"},]}'
    assert read_answer(text, "gate") == GateVerdict((Finding("adequacy", "low", "m"),))
