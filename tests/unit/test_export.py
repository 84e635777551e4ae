"""``prettyplay export``: the patterns, the step definitions and the choice of an entry, without
a browser; tests/integration/test_export.py runs an export with behave alone."""

from __future__ import annotations

import ast
import io
import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import parse
import pytest
from behave.matchers import register_type
from behave.step_registry import AmbiguousStep, StepRegistry

from prettyplay_behave import address
from prettyplay_behave.cache import RedVerdict, StepEntry, file_name, render_steps
from prettyplay_behave.cli import main
from prettyplay_behave.export import (
    SUPPORTED,
    TYPE_PATTERNS,
    definitions,
    export,
    plain_code,
    plain_feature,
    steps_module,
    unfaithful,
)
from prettyplay_behave.resources import templates_folder
from prettyplay_behave.safety.step_code import step_code
from tests.support.caches import plant
from tests.support.exported import support_module
from tests.support.outside import Outside


def support() -> ModuleType:
    """The support module an export writes beside its steps, loaded as behave would import it."""
    with tempfile.TemporaryDirectory() as folder:
        return support_module(Path(folder) / "steps")


STEP_SUPPORT = support()
TYPES = {"Quoted": STEP_SUPPORT.Quoted, "Number": STEP_SUPPORT.Number}


def action(sentence: str, code: str = "", **fields: Any) -> StepEntry:
    return StepEntry(
        "action",
        sentence,
        code or "def step(page) -> None:\n    page.goto('/')",
        "generated",
        **fields,
    )


def check(sentence: str, **fields: Any) -> StepEntry:
    code = "def step(page) -> None:\n    expect(page).to_have_title('Shop')"
    return StepEntry("check", sentence, code, "generated", **fields)


def matched(pattern: str, sentence: str) -> dict[str, Any] | None:
    found = parse.compile(pattern, extra_types=TYPES).parse(sentence)
    return None if found is None else dict(found.named)


# -- patterns --------------------------------------------------------------------------------------


def test_a_quoted_parameter_matches_any_text_between_quotes_and_unescapes_it() -> None:
    (definition,) = definitions(
        [("shop.feature", action('I add the "{}" to the cart', values=("Mug",)))]
    )
    assert definition.pattern == 'I add the "{text:Quoted}" to the cart'
    assert matched(definition.pattern, r'I add the "Blue \"Mug\"" to the cart') == {
        "text": 'Blue "Mug"'
    }
    assert matched(definition.pattern, "I add the Mug to the cart") is None


def test_a_number_parameter_matches_numbers_only() -> None:
    (definition,) = definitions([("cart.feature", check("the cart shows {} items", values=("3",)))])
    assert definition.pattern == "the cart shows {number:Number} items"
    assert matched(definition.pattern, "the cart shows -2.5 items") == {"number": "-2.5"}
    assert matched(definition.pattern, "the cart shows many items") is None


def test_an_outline_placeholder_takes_any_text_and_the_code_names_the_fields() -> None:
    general = action(
        "the page greets {} as {}",
        "def step(page, name, role) -> None:\n    page.goto('/' + name + role)",
        parameters=("name", "role"),
    )
    specific = action("the page greets {} as {}", values=("ann", "admin"))
    (definition,) = definitions([("login.feature", general), ("login.feature", specific)])
    assert definition.pattern == "the page greets {name} as {role}"
    assert matched(definition.pattern, "the page greets Ann Lee as a guest") == {
        "name": "Ann Lee",
        "role": "a guest",
    }


def test_braces_of_a_sentence_are_literal_in_its_pattern() -> None:
    (definition,) = definitions([("a.feature", action("I send {json} with {}", values=("1",)))])
    assert definition.pattern == "I send {{json}} with {number:Number}"
    assert matched(definition.pattern, "I send {json} with 1") == {"number": "1"}


def test_actions_match_under_given_and_when_checks_under_then() -> None:
    made = definitions(
        [("a.feature", check("the cart is empty")), ("a.feature", action("I open the cart"))]
    )
    assert [(d.template, d.keywords) for d in made] == [
        ("I open the cart", ("given", "when")),
        ("the cart is empty", ("then",)),
    ]


def test_behave_registers_every_pattern_without_an_ambiguity() -> None:
    """A wide pattern that matches a narrower one's text comes after it: behave refuses a new
    pattern an earlier one matches, and runs a step with the first pattern that matches it."""
    made = definitions(
        [
            ("a.feature", action("I pick {}", values=("<pick>",))),  # an Outline's: any text
            ("a.feature", action('I pick "{}"', values=("tea",))),
            ("b.feature", action("I pick {} of {}", values=("3", "tea"))),
            ("a.feature", action("I pick it")),
        ]
    )
    assert [d.pattern for d in made] == [
        'I pick "{text:Quoted}"',
        "I pick it",
        "I pick {number:Number} of {value}",
        "I pick {value}",
    ]
    register_type(**TYPES)
    registry = StepRegistry()
    for definition in made:
        registry.add_step_definition("when", definition.pattern, lambda context: None)
    step = SimpleNamespace(step_type="when", name='I pick "tea"', location=None)
    assert registry.find_step_definition(step).pattern == 'I pick "{text:Quoted}"'
    wide_first = StepRegistry()
    wide_first.add_step_definition("when", made[-1].pattern, lambda context: None)
    with pytest.raises(AmbiguousStep):  # the other way round
        wide_first.add_step_definition("when", made[0].pattern, lambda context: None)


def test_the_support_module_matches_the_parameters_as_the_export_types_them() -> None:
    for name, pattern in TYPE_PATTERNS.items():
        assert TYPES[name].pattern == pattern
    assert set(STEP_SUPPORT.__all__) == SUPPORTED


# -- step definitions ------------------------------------------------------------------------------


def test_the_same_code_in_several_features_is_one_function_serving_them_all() -> None:
    shared = action("I open the shop")
    (definition,) = definitions([("a.feature", shared), ("shop/b.feature", shared)])
    (variant,) = definition.variants
    assert variant.features == ["a.feature", "shop/b.feature"]
    assert variant.function == "i_open_the_shop"


def test_other_code_of_one_template_is_one_more_function_of_the_same_definition() -> None:
    blue = action('I add the "{}" to the cart', values=("Blue Mug",))
    green = action(
        'I add the "{}" to the cart',
        "def step(page) -> None:\n    page.goto('/tea')",
        values=("Green Tea",),
    )
    (definition,) = definitions([("a.feature", blue), ("a.feature", green)])
    assert [v.function for v in definition.variants] == [
        "i_add_the_to_the_cart_1",
        "i_add_the_to_the_cart_2",
    ]
    text = steps_module([definition])
    assert text.count("@given(") == text.count("@when(") == 1
    assert "def i_add_the_to_the_cart_2(page) -> None:\n    page.goto('/tea')" in text
    assert 'values=("Green Tea",)' in text


def test_the_steps_module_is_valid_python_that_names_only_what_it_uses(tmp_path: Path) -> None:
    red = check(
        "the total is {}",
        values=("12",),
        scenario="Pay",
        occurrence=2,
        verdict=RedVerdict("product_defect", "the total shows 13"),
    )
    entries = [("a.feature", action("I open the shop")), ("a.feature", red)]
    text = steps_module(definitions(entries))
    compile(text, "exported_steps.py", "exec")
    # the red entry's code uses expect: imported like any code's names
    assert "from step_support import (\n    Entry,\n    Number,\n    expect,\n    run,\n)" in text
    assert 'scenario="Pay",\n                occurrence=2,' in text


def test_a_red_entry_is_exported_as_code_that_runs_its_verdict_a_comment_above_it() -> None:
    """A red entry's step runs its code, so it passes once the app is fixed; the verdict it had
    is a comment, and its function is its cached code as any other's."""
    green = action('I pay "{}"', "def step(page, text) -> None:\n    page.goto(text)")
    red = action(
        'I pay "{}"',
        "def step(page) -> None:\n    page.goto('/pay')  # the button\n",
        values=("13",),
        scenario="Pay",
        verdict=RedVerdict("product_defect", "the total shows 13"),
    )
    (definition,) = definitions([("a.feature", green), ("a.feature", red)])
    assert [v.refused for v in definition.variants] == ["", ""]
    text = steps_module([definition])
    assert (
        "# red when exported: product_defect: the total shows 13\n"
        "def i_pay_2(page) -> None:\n    page.goto('/pay')  # the button\n"
    ) in text
    entries = text.split("[\n", 1)[1]
    assert entries.count("code=i_pay_1,") == entries.count("code=i_pay_2,") == 1
    assert "failure=" not in text and "judged red when exported" not in text


def test_upload_names_come_from_the_files_folder() -> None:
    code = (
        "def step(page, name) -> None:\n"
        '    page.set_input_files("#receipt", "réçu.pdf")\n'
        '    page.get_by_label("Photo").set_input_files(["a.png", name])\n'
        '    page.get_by_label("Scan").set_input_files(files="b.png", timeout=1000)\n'
    )
    assert plain_code(code, "attach") == (
        "def attach(page, name) -> None:\n"
        '    page.set_input_files("#receipt", upload("réçu.pdf"))\n'
        '    page.get_by_label("Photo").set_input_files(upload(["a.png", name]))\n'
        '    page.get_by_label("Scan").set_input_files(files=upload("b.png"), timeout=1000)\n'
    )


# Characters that end a line for str.splitlines and none for Python's parser.
NO_LINE_BREAKS = "\u2028\x1c\x1d\x1e\x85\u2029\x0b\x0c"


def test_an_upload_after_characters_python_ends_no_line_at_is_named_where_it_stands() -> None:
    odd = NO_LINE_BREAKS
    code = (
        "def step(page) -> None:\n"
        f'    note = "a{odd}b"  # c{odd}d\n'
        '    page.set_input_files("#receipt", "receipt.pdf")\n'
        f'    page.get_by_label("Scan").set_input_files(["a.png", "b{odd}.png"])  # {odd}\n'
    )
    assert step_code(code).passes
    exported = plain_code(code, "attach")
    assert exported == (
        "def attach(page) -> None:\n"
        f'    note = "a{odd}b"  # c{odd}d\n'
        '    page.set_input_files("#receipt", upload("receipt.pdf"))\n'
        f'    page.get_by_label("Scan").set_input_files(upload(["a.png", "b{odd}.png"]))  # {odd}\n'
    )
    assert unfaithful(exported, code, "attach") == ""


@pytest.mark.parametrize(
    ("code", "exported"),
    [
        ("# opens it\ndef step(page) -> None:\n", "# opens it\ndef open_it(page) -> None:\n"),
        ("def step (page) -> None:\n", "def open_it (page) -> None:\n"),
        ("\ndef  step(page) -> None:\n", "\ndef  open_it(page) -> None:\n"),
        ("def \\\n    step(page) -> None:\n", "def \\\n    open_it(page) -> None:\n"),
        # the line endings a code of an old JSON file may hold
        ("# step\r\ndef step(page) -> None:\r", "# step\r\ndef open_it(page) -> None:\r"),
    ],
    ids=["a comment first", "a space before (", "a blank line first", "continued", "CR"],
)
def test_the_def_of_step_is_renamed_wherever_comments_blank_lines_or_spaces_put_it(
    code: str, exported: str
) -> None:
    body = '    page.goto("/step")  # step(page)\n'
    assert step_code(code + body).passes
    assert plain_code(code + body, "open_it") == exported + body
    assert unfaithful(exported + body, code + body, "open_it") == ""


def test_an_upload_in_the_argument_of_another_is_named_through_upload_too() -> None:
    code = (
        "def step(page) -> None:\n"
        '    page.set_input_files("#a", page.set_input_files("#b", "b.pdf"))\n'
    )
    exported = plain_code(code, "attach")
    assert exported == (
        "def attach(page) -> None:\n"
        '    page.set_input_files("#a", upload(page.set_input_files("#b", upload("b.pdf"))))\n'
    )
    assert unfaithful(exported, code, "attach") == ""


CODE = (
    "# attaches it\n"
    "def step(page) -> None:\n"
    '    note = "a\u2028b"  # c\x1cd\n'
    '    page.set_input_files("#receipt", "receipt.pdf")\n'
)


@pytest.mark.parametrize(
    ("exported", "problem"),
    [
        (  # upload( and ) put where str.splitlines has the lines
            CODE.replace("def step", "def attach").replace(
                'page.set_input_files("#receipt", "receipt.pdf")',
                'page.set_input_fiupload(les("#receipt", "rece)ipt.pdf")',
            ),
            "it does not parse (line 4: ",
        ),
        (CODE, "it does not define the one function attach"),  # not renamed
        (CODE.replace("def step", "def attach") + "def attach_2(page):\n    pass\n", "one"),
        (CODE.replace("def step", "def attach"), "not named through upload ('receipt.pdf')"),
        (
            CODE.replace("def step", "def attach").replace(
                '"receipt.pdf"', 'upload( "receipt.pdf")'
            ),
            "a file it uploads is not named through upload",
        ),
        (
            CODE.replace("def step", "def attach")
            .replace('"receipt.pdf"', 'upload("receipt.pdf")')
            .replace("\x1c", "\n#"),
            "it differs from the cached code in more than its name and its uploads",
        ),
    ],
    ids=["cut elsewhere", "not renamed", "another function", "not wrapped", "spaced", "other"],
)
def test_a_function_that_is_not_the_cached_code_renamed_and_wrapped_is_told_apart(
    exported: str, problem: str
) -> None:
    assert problem in unfaithful(exported, CODE, "attach")
    right = plain_code(CODE, "attach")
    assert unfaithful(right, CODE, "attach") == ""


# -- which entry a step runs -----------------------------------------------------------------------


def at(feature: str, scenario: str, occurrence: int) -> Any:
    return STEP_SUPPORT.Position(feature, scenario, occurrence)


def entry(**fields: Any) -> Any:
    return STEP_SUPPORT.Entry(code=lambda page: None, features=("a.feature",), **fields)


def test_a_pin_of_the_scenario_and_occurrence_comes_first_then_values_then_general() -> None:
    general = entry(takes=1)
    specific = entry(values=("tea",))
    pinned = entry(takes=1, scenario="Pay", occurrence=2)
    entries = [general, specific, pinned]
    choose = STEP_SUPPORT.choose
    assert choose(entries, at("a.feature", "Pay", 2), ("tea",), "") is pinned
    assert choose(entries, at("a.feature", "Pay", 1), ("tea",), "") is specific
    assert choose(entries, at("a.feature", "Browse", 2), ("mug",), "") is general
    assert choose(entries, at("b.feature", "Pay", 2), ("tea",), "") is None  # another feature's


def test_a_features_own_entry_comes_before_the_one_every_feature_shares() -> None:
    own = entry(takes=1)
    shared = STEP_SUPPORT.Entry(code=lambda page: None, takes=1)
    shared_specific = STEP_SUPPORT.Entry(code=lambda page: None, values=("tea",))
    choose = STEP_SUPPORT.choose
    assert choose([shared, own], at("a.feature", "Pay", 1), ("mug",), "") is own
    assert choose([shared_specific, own], at("a.feature", "Pay", 1), ("tea",), "") is own
    assert choose([shared, own], at("b.feature", "Pay", 1), ("mug",), "") is shared
    assert choose([shared_specific, shared], at("b.feature", "Pay", 1), ("tea",), "") is (
        shared_specific
    )


def test_code_without_parameters_serves_only_its_values_and_its_data() -> None:
    table = "| field | value |\n| Email | ann@example.com |"
    spelled = entry(values=("tea",), data=table)
    choose = STEP_SUPPORT.choose
    assert choose([spelled], at("a.feature", "Pay", 1), ("tea",), table) is spelled
    assert choose([spelled], at("a.feature", "Pay", 1), ("mug",), table) is None
    assert choose([spelled], at("a.feature", "Pay", 1), ("tea",), "") is None


def behave_context(scenario: str = "Pay", table: Any = None) -> Any:
    return SimpleNamespace(
        feature=SimpleNamespace(filename="/project/features/a.feature"),
        config=SimpleNamespace(base_dir="/project/features"),
        scenario=SimpleNamespace(name=scenario),
        table=table,
        text=None,
    )


def test_a_step_no_entry_fits_says_so() -> None:
    with pytest.raises(AssertionError, match=r"no exported code fits 'the total is \{\}'"):
        STEP_SUPPORT.run(behave_context(), "check", "the total is {}", ("12",), [])


def test_a_table_is_keyed_as_prettyplay_keys_it() -> None:
    table = SimpleNamespace(
        headings=["field", "value"], rows=[SimpleNamespace(cells=["Email", "ann@example.com"])]
    )
    assert STEP_SUPPORT.step_data(behave_context(table=table)) == (
        "| field | value |\n| Email | ann@example.com |"
    )


# -- the feature files and the command -------------------------------------------------------------


def test_a_copied_feature_loses_its_step_annotations_and_keeps_everything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    features = tmp_path / "features"
    (features / "files").mkdir(parents=True)
    text = (
        "Feature: Pay\n"
        "  @prettyplay.storage_state=features/files/ann.json @slow\n"
        "  Scenario: Pay\n"
        "    Given I pay [tries=2]  \n"
        '    Then the page says "done [tries=3]"\n'
        "      | a [tries=2] |\n"
    )
    (features / "pay.feature").write_text(text, encoding="utf-8")
    copied, removed = plain_feature(features / "pay.feature", features)
    assert removed == 1
    assert copied == text.replace(" [tries=2]  \n", "\n", 1).replace(
        "features/files/ann.json", "files/ann.json"
    )


def test_export_refuses_a_folder_that_is_not_empty_or_mixes_with_the_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    features = tmp_path / "features"
    features.mkdir()
    (features / "a.feature").write_text("Feature: A\n  Scenario: A\n    Given I open the shop\n")
    kept = tmp_path / "out" / "notes.txt"
    kept.parent.mkdir()
    kept.write_text("mine")
    assert main(["export", "out"]) == 2
    assert "out: the folder is not empty (--force" in capsys.readouterr().err
    assert main(["export", "features/exported"]) == 2
    assert "mix with the features folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "a.feature",
        "features",
        "notes.txt",
        "out",
    ]


def test_export_writes_what_exists_and_says_which_steps_have_no_cached_code(
    tmp_path: Path,
) -> None:
    features = tmp_path / "features"
    features.mkdir()
    (features / "a.feature").write_text(
        "Feature: A\n  Scenario: A\n    Given I open the shop\n    Then I see a mug\n"
    )
    plant(
        features / ".prettyplay",
        "a.feature::A",
        ("action", "I open the shop", "def step(page) -> None:\n    page.goto('/')"),
    )
    out = io.StringIO()
    assert export(tmp_path / "out", features, out=out) == 0  # what exists is written
    assert "no cached code: a.feature:4: I see a mug" in out.getvalue()
    assert "1 step without cached code" in out.getvalue()
    written = sorted(
        p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.*")
    )
    assert written == [
        "a.feature",
        "environment.py",
        "steps/exported_steps.py",
        "steps/step_address.py",
        "steps/step_support.py",
    ]
    # the package's own address module, as it is: an exported step finds its code as a run does
    copied = (tmp_path / "out" / "steps" / "step_address.py").read_bytes()
    assert copied == Path(address.__file__).read_bytes()


def test_function_names_never_hide_an_import_a_keyword_or_each_other() -> None:
    made = definitions(
        [
            ("a.feature", action("run")),
            ("a.feature", action("if")),
            ("a.feature", action("step run")),
            ("a.feature", action("4 items", values=None)),
        ]
    )
    names = sorted(name for d in made for name in (d.name, d.function))
    assert names == sorted(
        [
            "run_2",
            "step_run_2",
            "if_",
            "step_if_",
            "step_run",
            "step_step_run",
            "step_4_items",
            "step_step_4_items",
        ]
    )
    compile(steps_module(made), "exported_steps.py", "exec")


def test_a_files_folder_elsewhere_is_copied_as_the_exports_files(tmp_path: Path) -> None:
    features = tmp_path / "features"
    features.mkdir()
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "receipt.pdf").write_bytes(b"%PDF")
    out = io.StringIO()
    assert export(tmp_path / "out", features, out=out, files_dir=uploads) == 0
    assert (tmp_path / "out" / "files" / "receipt.pdf").read_bytes() == b"%PDF"
    assert f"copied {uploads} to files/" in out.getvalue()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "Feature: A\n  Scenario: A\n    Given I pay [speed=2]\n",
            "unknown step parameter 'speed'",
        ),
        ("Scenario: A\n  Given I pay\n", "behave cannot read it"),
    ],
)
def test_a_feature_file_behave_or_prettyplay_cannot_read_stops_the_export_before_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    features = tmp_path / "features"
    features.mkdir()
    (features / "a.feature").write_text(text)
    assert main(["export", str(tmp_path / "out"), "--features", str(features)]) == 2
    error = capsys.readouterr().err
    assert f"{features / 'a.feature'}: " in error and problem in error
    assert not (tmp_path / "out").exists()


def test_a_copied_feature_keeps_its_line_endings(tmp_path: Path) -> None:
    text = "Feature: Pay\r\n  Scenario: Pay\r\n    Given I pay [tries=2]\r\n    Then I paid\r\n"
    (tmp_path / "pay.feature").write_bytes(text.encode())
    assert plain_feature(tmp_path / "pay.feature", tmp_path) == (text.replace(" [tries=2]", ""), 1)


def test_what_a_cache_file_holds_reaches_the_steps_module_as_data_never_as_code() -> None:
    """A cache file is input nobody vouches for: its sentences, values, data, scenario names and
    verdicts are quoted or escaped, so the module's top level is imports, the types and the
    functions."""
    sneaky = "I pay\nimport os; os.system('touch /tmp/owned')  # "
    entries = [
        ("a.feature", action(sneaky)),
        ("a.feature", action(sneaky, values=('x"""\n',), data="| a |\n| b\r |")),
        (
            "a.feature",
            check(
                'the total is "{}"',
                values=("'\"",),
                scenario="S\nimport os",
                verdict=RedVerdict("incurable", "it\nimport os"),
            ),
        ),
    ]
    tree = ast.parse(steps_module(definitions(entries)))
    top = {type(node).__name__ for node in tree.body}
    assert top == {"Expr", "ImportFrom", "FunctionDef"}  # the docstring and register_type(...)
    calls = [
        n.value for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
    ]
    assert [ast.unparse(call.func) for call in calls] == ["register_type"]
    text = steps_module(definitions(entries))
    assert "# -- action: I pay\\nimport os;" in text
    assert "# red when exported: incurable: it\\nimport os\n" in text


def plant_entries(cache_dir: Path, *planted: StepEntry) -> list[Path]:
    """Library files holding ``planted`` as they are, unchecked (a hand edit, a bad merge)."""
    folder = cache_dir / "steps"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for entry in planted:
        paths.append(folder / file_name(entry.step))
        paths[-1].write_bytes(render_steps([entry]))
    return paths


def feature(features: Path, *steps: str) -> None:
    features.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"    Given {step}\n" for step in steps)
    (features / "a.feature").write_text(f"Feature: A\n  Scenario: A\n{lines}", encoding="utf-8")


def test_values_that_are_not_one_a_mark_leave_their_file_out_by_name_and_the_rest_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    features = tmp_path / "features"
    feature(features, "I open the shop", 'I pay "tea" for "two"')
    short, _ = plant_entries(
        features / ".prettyplay",
        action('I pay "{}" for "{}"', values=("tea",)),
        action("I open the shop"),
    )
    refusal = (
        f"{short}: line 10 (action 'I pay \"{{}}\" for \"{{}}\"' for 'tea'): 'values' holds 1 "
        "value, but its sentence has 2 marks ({})"
    )
    assert main(["check", str(features / ".prettyplay")]) == 1
    assert f"REFUSED {refusal}" in capsys.readouterr().out
    out = io.StringIO()
    assert export(tmp_path / "out", features, out=out) == 1
    said = out.getvalue()
    assert f"left out: {refusal}\n" in said
    assert 'no cached code: a.feature:4: I pay "tea" for "two"' in said
    assert "; 1 cache file left out; 1 step without cached code" in said
    module = (tmp_path / "out" / "steps" / "exported_steps.py").read_text(encoding="utf-8")
    tree = ast.parse(module)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [
        "i_open_the_shop",
        "step_i_open_the_shop",
    ]


def test_an_entry_whose_function_would_not_be_its_cached_code_is_left_out_by_name(
    tmp_path: Path,
) -> None:
    """The export checks each function it writes: ſtep (a long s) is step to Python, so
    the code passes the policy, but no rename of it undoes to the cached code byte for byte."""
    features = tmp_path / "features"
    feature(features, "I open the shop", "I open the cart")
    odd = action("I open the cart", "def \u017ftep(page) -> None:\n    page.goto('/cart')")
    _, path = plant_entries(features / ".prettyplay", action("I open the shop"), odd)
    out = io.StringIO()
    assert export(tmp_path / "out", features, out=out) == 1
    said = out.getvalue()
    assert (
        f"left out: {path} (action 'I open the cart'): its function would not be its cached "
        "code: it differs from the cached code in more than its name and its uploads\n"
    ) in said
    assert "no cached code: a.feature:4: I open the cart" in said
    assert "wrote steps/exported_steps.py (1 step definition of 1 entry)" in said
    assert "; 1 entry left out; 1 step without cached code" in said
    module = (tmp_path / "out" / "steps" / "exported_steps.py").read_text(encoding="utf-8")
    compile(module, "exported_steps.py", "exec")
    assert "cart" not in module


# -- links: the export copies nothing through a link out of its folder, writes through none -------

FEATURE = "Feature: A\n  Scenario: A\n    Given I open the shop\n"


def exportable(tmp_path: Path) -> Path:
    """A features folder whose one step has cached code, and an upload."""
    features = tmp_path / "features"
    (features / "files").mkdir(parents=True)
    (features / "a.feature").write_text(FEATURE)
    (features / "files" / "receipt.pdf").write_bytes(b"%PDF")
    plant(
        features / ".prettyplay",
        "a.feature::A",
        ("action", "I open the shop", "def step(page) -> None:\n    page.goto('/')"),
    )
    return features


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    return Outside.made(tmp_path)


@pytest.mark.parametrize(
    "planted",
    ["files/statement.pdf", "files/shared", "files", "stolen.feature", "shop/notes.txt"],
)
def test_export_copies_nothing_through_a_link_out_of_the_features_folder(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outside: Outside,
    planted: str,
) -> None:
    """A pull request adds a link in the features folder to a file or folder of the user's (an
    upload that is a link to ``~/.ssh/id_rsa``): the export refuses it by name before it
    writes anything, as a run's upload of it is refused, and never reads what it reaches."""
    monkeypatch.chdir(tmp_path)
    features = exportable(tmp_path)
    link = features / planted
    if planted == "files":
        shutil.rmtree(link)
    link.parent.mkdir(exist_ok=True)
    folder = planted in ("files", "files/shared")
    link.symlink_to(outside.folder if folder else outside.file)
    outside.settle()
    assert main(["export", "out"]) == 2
    error = capsys.readouterr().err
    shown = Path("features", planted)
    assert f"{shown}: a symbolic link out of features (to {os.readlink(link)})" in error
    assert "the export copies nothing through one" in error
    assert not (tmp_path / "out").exists()
    outside.untouched()


def test_a_link_that_stays_in_the_features_folder_is_copied_as_what_it_reaches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: links inside the folder (as an upload may follow) are copied as the plain
    file or folder they reach; one that leads back into a folder it lies in is refused."""
    monkeypatch.chdir(tmp_path)
    features = exportable(tmp_path)
    (features / "files" / "v2").mkdir()
    (features / "files" / "v2" / "form.pdf").write_bytes(b"%PDF-2")
    (features / "files" / "latest.pdf").symlink_to("receipt.pdf")
    (features / "files" / "current").symlink_to("v2")
    assert main(["export", "out"]) == 0
    out = tmp_path / "out" / "files"
    assert not (out / "latest.pdf").is_symlink() and (out / "latest.pdf").read_bytes() == b"%PDF"
    assert not (out / "current").is_symlink()
    assert (out / "current" / "form.pdf").read_bytes() == b"%PDF-2"
    (features / "files" / "v2" / "up").symlink_to("..")
    assert main(["export", "again"]) == 2
    error = capsys.readouterr().err
    up = Path("features", "files", "current", "up")
    assert f"{up}: a symbolic link back into a folder it lies in (to ..)" in error
    assert not (tmp_path / "again").exists()


WRITTEN = [
    ".",
    "steps",
    "steps/exported_steps.py",
    "steps/step_support.py",
    "environment.py",
    "a.feature",
    "files",
    "files/receipt.pdf",
]


@pytest.mark.parametrize("planted", WRITTEN)
def test_export_writes_nothing_through_a_link_planted_in_a_kept_folder(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outside: Outside,
    planted: str,
) -> None:
    """DIR is kept (``--force``), perhaps committed, and a link is planted for a file or
    folder the export writes: the export refuses it by name before it writes anything, and the
    file outside (``~/.bashrc``, say) is neither overwritten nor read."""
    monkeypatch.chdir(tmp_path)
    exportable(tmp_path)
    kept = tmp_path / "out"
    link = kept / planted if planted != "." else kept
    if planted != ".":
        (kept / "notes.txt").parent.mkdir()
        (kept / "notes.txt").write_text("mine")
        link.parent.mkdir(parents=True, exist_ok=True)
    folder = planted in (".", "steps", "files")
    link.symlink_to(outside.folder if folder else outside.file)
    before = sorted(p.relative_to(tmp_path) for p in kept.rglob("*"))
    outside.settle()  # after the listing above, which goes through a link to a folder
    assert main(["export", "out", "--force"]) == 2
    error = capsys.readouterr().err
    what = "the export folder" if planted == "." else "a file or folder the export writes"
    shown = Path("out", planted) if planted != "." else Path("out")
    assert f"{shown}: {what} is a symbolic link (to {os.readlink(link)})" in error
    assert "the export never writes through one: delete the link" in error
    outside.untouched()  # before the listing below, which goes through a link to a folder
    assert sorted(p.relative_to(tmp_path) for p in kept.rglob("*")) == before


@pytest.mark.skipif(os.name == "nt", reason="hard links of a test's own files: POSIX")
def test_a_hard_link_in_a_kept_folder_is_replaced_and_the_file_it_shared_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside: Outside
) -> None:
    """The export writes each file anew and renames it into place: a name that was a hard link
    gets a file of its own, and the other name's file is not written. The control too: a kept
    folder with its own files still exports."""
    monkeypatch.chdir(tmp_path)
    exportable(tmp_path)
    kept = tmp_path / "out"
    kept.mkdir()
    os.link(outside.file, kept / "environment.py")
    (kept / "notes.txt").write_text("mine")
    outside.settle()
    assert main(["export", "out", "--force"]) == 0
    template = Path(templates_folder()) / "export" / "environment.py"
    assert (kept / "environment.py").read_bytes() == template.read_bytes()
    assert (kept / "notes.txt").read_text() == "mine"
    assert (kept / "files" / "receipt.pdf").read_bytes() == b"%PDF"
    outside.untouched()


def test_a_files_folder_elsewhere_is_copied_through_no_link_out_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], outside: Outside
) -> None:
    features = tmp_path / "features"
    features.mkdir()
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "receipt.pdf").symlink_to(outside.file)
    outside.settle()
    assert main(["export", str(tmp_path / "out"), "--features", str(features),
                 "--files-dir", str(uploads)]) == 2  # fmt: skip
    error = capsys.readouterr().err
    assert f"{uploads / 'receipt.pdf'}: a symbolic link out of {uploads}" in error
    assert not (tmp_path / "out").exists()
    outside.untouched()
