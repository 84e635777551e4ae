"""A failure's traceback: the step code's own lines where it raised, prettyplay's frames hidden
(``full_tracebacks`` shows them all); in the Python API and in behave's output."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from prettyplay_behave import IncurableStepError, PrettyConfig, PrettyPlay
from tests.conftest import BehaveProject
from tests.support.caches import plant
from tests.support.shop_steps import OPEN_SHOP

BROKEN = (
    "def step(page) -> None:\n"
    '    heading = page.get_by_role("heading", level=1).inner_text()\n'
    '    expect(page.get_by_role("heading", level=1)).to_have_text(heading)\n'
    '    page.get_by_role("button", name="Consent").click(timeout=300)\n'
)


def planted(tmp_path: Path, test: str) -> Path:
    cache = tmp_path / "cache"
    plant(cache, test, ("step", "open the shop", OPEN_SHOP))
    plant(cache, test, ("step", "I greet the shop", BROKEN))
    return cache


@pytest.mark.parametrize("full", [False, True], ids=["short", "full"])
def test_a_failure_shows_the_step_code_line_and_hides_the_engine(
    full: bool, shop, tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = PrettyConfig(base_url=shop.url, cache_dir=str(planted(tmp_path, "t")),
                          full_tracebacks=full)  # fmt: skip
    with PrettyPlay("t", config, browser=browser) as t:
        t.step("open the shop")
        with pytest.raises(IncurableStepError) as caught:
            t.step("I greet the shop")
    shown = "".join(traceback.format_exception(caught.value))
    cause = caught.value.__cause__
    assert type(cause).__name__ == "StepCodeError"
    assert 'page.get_by_role("button", name="Consent").click(timeout=300)' in shown
    assert ", line 4, in step\n" in shown and 'File "<step code ' in shown
    assert ("prettyplay_behave/engine/cycle.py" in shown) is full
    # the step's locals (what it read from the page) are gone from its frame, whatever a reader
    # asks for
    assert cause is not None
    frames = traceback.TracebackException.from_exception(cause, capture_locals=True).stack
    assert [frame.name for frame in frames] == ["step"]
    assert not frames[0].locals
    assert "Demo Shop" not in str(frames)


@pytest.mark.slow
def test_behave_shows_the_step_code_line_where_it_raised(
    project: BehaveProject, shop, tmp_path: Path
) -> None:
    project.write(
        "features/shop.feature",
        "Feature: Shop\n  Scenario: Greet\n    Given open the shop\n    When I greet the shop\n",
    )
    plant(project.cache_dir, "shop.feature::Greet", ("step", "open the shop", OPEN_SHOP))
    plant(project.cache_dir, "shop.feature::Greet", ("step", "I greet the shop", BROKEN))
    result = project.run("-D", f"prettyplay.base_url={shop.url}")
    assert result.returncode == 1, result
    assert 'page.get_by_role("button", name="Consent").click(timeout=300)' in result.output
    assert 'File "<step code ' in result.output, result
    # an error is shown as a failure is: no frame of behave's or of prettyplay's
    assert "When I greet the shop ... error" in result.output, result
    assert "prettyplay_behave/" not in result.output, result
    assert "behave/model.py" not in result.output and "raise shown_error" not in result.output
    assert "IncurableStepError: the cached step failed" in result.output
