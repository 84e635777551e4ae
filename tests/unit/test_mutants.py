"""The mutant list keeps up with the code: a refactoring that moves a mutant's text away shows
here, in every run, not only when someone runs the mutants."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutants import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.name)
def test_each_mutant_edits_one_place_and_names_tests_that_exist(mutant: Mutant) -> None:
    assert mutant.places() == 1
    assert mutant.before != mutant.after
    missing = [test for test in mutant.tests if not (ROOT / test.split("::")[0]).exists()]
    assert not missing, missing
