"""``prettyplay plan``: what a run would replay, reuse, generate or replay red, read from the
cache alone, before any browser starts; exit 1 under strict when a step needs the LLM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prettyplay_behave.cache import CacheKey, CacheStore, CacheWrite, RedVerdict, StepEntry
from prettyplay_behave.safety.step_code import check_code
from tests.conftest import copy_examples

# the plan in a process of its own, where opening a browser session fails the run
PLAN = """\
import sys
from prettyplay_behave.browser import session

def no_browser(*args, **kwargs):
    raise SystemExit("the plan opened a browser session")

session.BrowserSession.__init__ = no_browser
from prettyplay_behave.cli import main
sys.exit(main(["plan", *sys.argv[1:]]))
"""

NEW_SCENARIO = """
  @new
  Scenario: Two mugs
    When I add the "Blue Mug" to the cart
    And I dance on the counter
    Then the cart link shows 1 item

  @new
  Scenario: Dance again
    When I dance on the counter
"""


def plan(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PLAN, *args], cwd=root, capture_output=True, text=True, timeout=60
    )


def test_the_examples_replay_every_step(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    done = plan(root)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "plan: 4 features, 13 scenarios, 44 steps: 44 replay, 0 reuse, 0 generate" in out, out
    assert "LLM requests: none" in out
    assert "features/shop/cart.feature  (library: features/.prettyplay/steps)" in out
    assert "  A shopper logs in -- @1.2\n" in out  # each row of an Outline
    assert "    replay      And I accept the cookie banner\n" in out  # Background steps too
    strict = plan(root, "--strict")
    assert strict.returncode == 0, strict.stdout  # nothing needs the LLM


def test_a_new_step_is_one_generate_and_fails_a_strict_plan(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    cart = root / "features" / "shop" / "cart.feature"
    cart.write_text(cart.read_text() + NEW_SCENARIO)
    done = plan(root, "features/shop", "--tags", "@new")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "  Two mugs\n" in out and "Add a product to the cart" not in out  # the tag selects
    assert "    replay      Given I open the shop\n" in out
    assert '    replay      When I add the "Blue Mug" to the cart\n' in out
    assert "    generate    And I dance on the counter\n" in out
    # the check is cached for another scenario of the feature's library: a replay
    assert "    replay      Then the cart link shows 1 item\n" in out
    # the same step later in the run replays the entry the first one writes, as a run counts it
    assert (
        "    replay      When I dance on the counter  (the entry an earlier step of the run "
        "writes)\n"
    ) in out, out
    assert "plan: 1 feature, 2 scenarios, 8 steps: 7 replay, 0 reuse, 1 generate, 0 replay red" in (
        out
    ), out
    assert "LLM requests: about 2 (a generation and its gate for the 1 step to generate;" in (out)
    strict = plan(root, "features/shop", "--tags", "@new", "--strict")
    assert strict.returncode == 1, strict.stdout
    assert "    missing     And I dance on the counter  (strict: no cached code" in strict.stdout
    assert "strict: 2 steps have no cached code: the run would fail them" in strict.stdout
    # the run's own strict setting makes the plan strict as well
    defined = plan(root, "features/shop", "-t", "@new", "-D", "prettyplay.strict=true")
    assert defined.returncode == 1, defined.stdout


def test_reuse_red_and_own_steps(tmp_path: Path) -> None:
    """A step another feature wrote replays from the library; another feature's own code is
    reused, by its sentence or a wording of it; a kept verdict replays red; a step
    definition of the project's own is no prettyplay step."""
    root = copy_examples(tmp_path)
    (root / "features" / "steps" / "own_steps.py").write_text(
        "from behave import step\n\n\n@step('I wave')\ndef wave(context):\n    pass\n"
    )
    (root / "features" / "more.feature").write_text(
        "Feature: More\n"
        "  Scenario: Again\n"
        "    Given I open the login page\n"
        "    And I open the secret page\n"
        "    And I go to the secret page\n"
        "    When I wave\n"
        "    Then the heading says Demo Shop\n"
    )
    store = CacheStore(root / "features" / ".prettyplay", validate=check_code)
    red = CacheWrite(
        CacheKey("more.feature::Again", "check", "the heading says Demo Shop"),
        "def step(page) -> None:\n    assert False, 'no heading'\n",
        "generated",
        verdict=RedVerdict("product_defect", "the heading is gone", "fix the shop"),
    )
    store.write(red)
    secret = 'def step(page) -> None:\n    page.goto("/secret")\n'
    store.keep(
        [StepEntry("action", "I open the secret page", secret, "generated", feature="a.feature")]
    )
    opened = store.lookup(CacheKey("a.feature::A", "action", "I open the secret page"))
    assert opened is not None
    going = CacheKey("a.feature::A", "action", "I go to the secret page")
    store.replace(CacheWrite(going, secret, "reused", wording_of=opened), None)
    done = plan(root, "features/more.feature")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "    replay      Given I open the login page\n" in out, out
    assert "    reuse       And I open the secret page  (the entry of a.feature in " in out, out
    assert "    reuse       And I go to the secret page  (the entry of a.feature in " in out, out
    assert "    own step    When I wave  (a step definition of your own)\n" in out
    assert "    replay red  Then the heading says Demo Shop  (kept product_defect)" in out
    assert "5 steps: 1 replay, 2 reuse, 0 generate, 1 replay red, 1 own step" in out, out


def test_features_behave_cannot_read_exit_2(tmp_path: Path) -> None:
    done = plan(tmp_path, "nowhere")
    assert done.returncode == 2
    assert done.stderr.startswith("prettyplay plan: No steps directory in "), done.stderr
