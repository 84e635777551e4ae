"""The cost of a run in money: prices from the settings or the shipped table, each purpose
priced for the model that served it, in the summary and the HTML report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prettyplay_behave.config import PrettyConfig, resolve_config
from prettyplay_behave.errors import ConfigError
from prettyplay_behave.llm.client import LLMClient, Usage
from prettyplay_behave.llm.prices import Price, format_cost, known_price, price_of
from prettyplay_behave.llm.purposes import Purpose
from prettyplay_behave.report.summary import RunSummary
from tests.conftest import BehaveProject
from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer
from tests.support.shop_steps import OPEN_SHOP

# -- prices -------------------------------------------------------------------------------------


def test_the_shipped_table_knows_the_names_a_model_goes_by() -> None:
    assert known_price("gpt-4.1-mini") == (0.40, 1.60)
    assert known_price("GPT-4.1-mini") == (0.40, 1.60)
    assert known_price("openai/gpt-4o-mini") == (0.15, 0.60)  # a LiteLLM-style prefix
    assert known_price("gpt-4o-2024-08-06") == (2.50, 10.00)  # a snapshot of gpt-4o
    assert known_price("gpt-4o-2024-05-13") == (5.00, 15.00)  # a snapshot priced apart
    assert known_price("gpt-4.1-mini-fast") is None  # never a prefix match
    assert known_price("qwen2.5-coder:14b") is None


def test_settings_override_the_table_half_by_half() -> None:
    assert price_of("gpt-4.1", PrettyConfig()) == Price(2.0, 8.0, "table")
    both = PrettyConfig(price_per_mtok_input=0.5, price_per_mtok_output=1.5)
    assert price_of("gpt-4.1", both) == Price(0.5, 1.5, "settings")
    assert price_of("llama3.1:8b", both) == Price(0.5, 1.5, "settings")
    half = PrettyConfig(price_per_mtok_input=1.0)
    assert price_of("gpt-4.1", half) == Price(1.0, 8.0, "settings and table")
    assert price_of("llama3.1:8b", half) is None  # the output half is known from nowhere
    assert price_of("llama3.1:8b", PrettyConfig()) is None
    free = PrettyConfig(price_per_mtok_input=0, price_per_mtok_output=0)
    assert price_of("llama3.1:8b", free) == Price(0.0, 0.0, "settings")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("-0.1", "expected US dollars per million input tokens, a number >= 0"),
        ("inf", "expected US dollars per million input tokens, a number >= 0"),
        ("nan", "expected US dollars per million input tokens, a number >= 0"),
        ("free", "expected a number"),
    ],
)
def test_a_bad_price_is_refused_at_start(value: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(defines={"prettyplay.price_per_mtok_input": value})
    assert str(caught.value) == (
        f"setting 'price_per_mtok_input' = {value!r} (from command line -D): {problem}"
    )


def test_costs_are_written_for_people() -> None:
    assert [format_cost(c) for c in (0, 0.00004, 0.0123456, 0.5, 12.345, 1234.5)] == [
        "$0", "<$0.0001", "$0.0123", "$0.5000", "$12.35", "$1,234.50",
    ]  # fmt: skip


def test_each_purpose_is_priced_for_the_model_that_served_it(llm: ScriptedLLMServer) -> None:
    llm.on(None, "ok", repeat=True)
    config = PrettyConfig(model="gpt-4.1", classification_model="gpt-4.1-nano")
    client = LLMClient(config, environ=llm.env)
    for purpose in ("generate", "gate"):
        client.ask(
            purpose, step="click Checkout", messages=[{"role": "user", "content": "x" * 4000}]
        )
    usage = client.usage
    assert client.costs == {
        Purpose.GENERATE: (usage[Purpose.GENERATE].prompt_tokens * 2.0
                           + usage[Purpose.GENERATE].completion_tokens * 8.0) / 1e6,
        Purpose.GATE: (usage[Purpose.GATE].prompt_tokens * 0.10
                       + usage[Purpose.GATE].completion_tokens * 0.40) / 1e6,
    }  # fmt: skip
    generate, gate = client.costs[Purpose.GENERATE], client.costs[Purpose.GATE]
    assert generate is not None and gate is not None
    assert generate == pytest.approx(20 * gate)  # the same tokens, a twentieth of the price
    assert set(client.prices) == {"gpt-4.1", "gpt-4.1-nano"}


# -- the summary --------------------------------------------------------------------------------


def summary(costs: dict[Purpose, float | None]) -> RunSummary:
    usage = {Purpose.CLASSIFY: Usage(6, 6000, 412), Purpose.GENERATE: Usage(2, 1500, 200)}
    return RunSummary(usage=usage, costs=costs)


def test_the_summary_line_with_every_purpose_priced() -> None:
    line = summary({Purpose.CLASSIFY: 0.0031, Purpose.GENERATE: 0.0092}).lines()[1]
    assert line == (
        "LLM: 8 requests, 8,112 tokens, $0.0123 (classify 6 (6,412 tokens, $0.0031), "
        "generate 2 (1,700 tokens, $0.0092))"
    )


def test_the_summary_line_with_some_purposes_unpriced() -> None:
    line = summary({Purpose.CLASSIFY: None, Purpose.GENERATE: 0.0092}).lines()[1]
    assert line == (
        "LLM: 8 requests, 8,112 tokens, at least $0.0092 (classify 6 (6,412 tokens), "
        "generate 2 (1,700 tokens, $0.0092))"
    )


def test_the_summary_line_with_nothing_priced_is_the_tokens_alone() -> None:
    unpriced = summary({Purpose.CLASSIFY: None, Purpose.GENERATE: None}).lines()[1]
    assert (
        unpriced
        == summary({}).lines()[1]
        == ("LLM: 8 requests, 8,112 tokens (classify 6 (6,412 tokens), generate 2 (1,700 tokens))")
    )
    assert RunSummary().lines()[1] == "LLM: 0 requests, 0 tokens"


# -- in a behave run ----------------------------------------------------------------------------

FEATURE = """\
Feature: Shop
  Scenario: Visit
    Given I open the shop
"""


def run_once(project: BehaveProject, shop, llm: ScriptedLLMServer, *defines: str) -> str:
    project.write("features/shop.feature", FEATURE)
    llm.on("generate", code_answer(OPEN_SHOP))
    llm.on("gate", CLEAN_GATE)
    args = ["-D", f"prettyplay.base_url={shop.url}", "-D", "prettyplay.report_dir=reports"]
    for define in defines:
        args += ["-D", define]
    result = project.run(*args, env=llm.env)
    assert result.returncode == 0, result
    return next(line for line in result.output.splitlines() if line.startswith("prettyplay: LLM"))


def expected_cost(llm: ScriptedLLMServer, purpose: str, price: tuple[float, float]) -> float:
    """The cost of ``purpose``'s requests from the tokens the scripted server reported."""
    replies = {"generate": code_answer(OPEN_SHOP), "gate": CLEAN_GATE}
    prompt = sum((len(r.text) + 3) // 4 for r in llm.requests_for(purpose))
    completion = (len(replies[purpose]) + 3) // 4 * len(llm.requests_for(purpose))
    return (prompt * price[0] + completion * price[1]) / 1e6


def test_a_priced_model_prints_the_cost_in_the_summary_and_the_report(
    project: BehaveProject, shop, llm: ScriptedLLMServer, browser
) -> None:
    line = run_once(project, shop, llm, "prettyplay.classification_model=gpt-4.1")
    generate = expected_cost(llm, "generate", (0.40, 1.60))  # gpt-4.1-mini, the default model
    gate = expected_cost(llm, "gate", (2.00, 8.00))
    assert re.fullmatch(
        rf"prettyplay: LLM: 2 requests, [\d,]+ tokens, {re.escape(format_cost(generate + gate))} "
        rf"\(gate 1 \([\d,]+ tokens, {re.escape(format_cost(gate))}\), "
        rf"generate 1 \([\d,]+ tokens, {re.escape(format_cost(generate))}\)\)",
        line,
    ), line
    page = browser.new_page()
    page.goto((project.root / "reports" / "report.html").as_uri())
    table = page.locator("table.llm-cost")
    assert table.locator("tr", has_text="gate").locator("td").last.inner_text() == format_cost(gate)
    assert table.locator("tr", has_text="generate").locator("td").last.inner_text() == (
        format_cost(generate)
    )
    notes = page.locator("li.price").all_inner_texts()
    assert notes == [
        "price of gpt-4.1: $2.00 input, $8.00 output per million tokens "
        "(the shipped price table of 2026-12-01)",
        "price of gpt-4.1-mini: $0.40 input, $1.60 output per million tokens "
        "(the shipped price table of 2026-12-01)",
    ]
    assert line.removeprefix("prettyplay: ") in page.locator("ul.summary").inner_text()
    page.close()


def test_an_unpriced_model_prints_tokens_only(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    line = run_once(project, shop, llm, "prettyplay.model=qwen2.5-coder:7b")
    assert re.fullmatch(
        r"prettyplay: LLM: 2 requests, [\d,]+ tokens \(gate 1 \([\d,]+ tokens\), "
        r"generate 1 \([\d,]+ tokens\)\)",
        line,
    ), line
    assert "$" not in line
    report = (project.root / "reports" / "report.html").read_text()
    assert "qwen2.5-coder:7b: no known price (set prettyplay.price_per_mtok_input" in report


def test_price_settings_price_a_local_model(
    project: BehaveProject, shop, llm: ScriptedLLMServer
) -> None:
    line = run_once(
        project, shop, llm, "prettyplay.model=qwen2.5-coder:7b",
        "prettyplay.price_per_mtok_input=1000", "prettyplay.price_per_mtok_output=2000",
    )  # fmt: skip
    total = sum(expected_cost(llm, p, (1000, 2000)) for p in ("generate", "gate"))
    assert f" tokens, {format_cost(total)} (gate 1 (" in line, line


def test_the_repository_summary_example_is_what_the_summary_prints() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = next(line for line in readme.splitlines() if line.startswith("prettyplay: LLM:"))
    usage = {
        Purpose.CLASSIFY: Usage(6, 6000, 412),
        Purpose.DIAGNOSE: Usage(1, 1100, 38),
        Purpose.GATE: Usage(6, 4500, 144),
        Purpose.HEAL: Usage(6, 6900, 846),
    }
    config = PrettyConfig()
    costs = {}
    for purpose, used in usage.items():
        price = price_of(config.model, config)
        assert price is not None
        costs[purpose] = price.cost(used.prompt_tokens, used.completion_tokens)
    assert RunSummary(usage=usage, costs=costs).render(colour=False).splitlines()[1] == example
