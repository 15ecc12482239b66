"""RACER and SuffixDecoding in a real browser: a short greedy race of the Code example with both
ticked ends with the verdict finding every lane's output identical to vanilla's (sampled with a
seed: tests/lossless/test_rivals.py, in process; the page's sampling path: test_sampled_race_browser.py); "Method explored" opens each rival's steps, whose tree names where its nodes came
from (automaton match and copied logits, prompt tree and output tree) and whose retrieval view
says what each source found. Screenshot: artifacts/browser/rivals-<lane>-desktop.png.
"""
from __future__ import annotations

import pytest

from helpers.browser import next_step, settle, shot, text_of
from test_race_passes_browser import race_code_example
from logitspec.analysis.lanes import label, sources_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE_TOKENS = 24  # few tokens: the machine is slow, and past the speed-up's threshold
RIVALS = {"racer": "automaton", "suffix": "prompt tree"}  # a lane, and a source its retrieval view names
BOXES = tuple(f"with-{lane}" for lane in RIVALS)
PLOTS = ("race-plot",)
TREE_NAMES_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  return gd && gd.data ? gd.data.map((d) => d.name || '') : []; }"""


def _identical(page) -> None:
    verdict = text_of(page, "#counters .verdict")
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict, verdict
    counters = text_of(page, "#counters")
    assert all(label(lane) in counters for lane in RIVALS), counters


def _explore(page, lane: str) -> tuple[list[str], str]:
    """Open `lane`'s steps; step on until its tree holds a drafted node. The tree's trace names and
    the retrieval view's text."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#explore-lane").get_by_label(label(lane), exact=True).check()
    expect(page.locator("#step-label")).to_contain_text(label(lane), timeout=60_000)
    settle(page)
    drafted = {src.legend for src in sources_of(lane)[1:]}
    for _ in range(RACE_TOKENS):
        names = page.evaluate(TREE_NAMES_JS)
        if drafted & set(names):
            break
        next_step(page)
    return names, text_of(page, "#retrieval")


@pytest.fixture(scope="module")
def raced(browser, app_url):
    """A desktop page after the greedy race of the Code example with both rivals ticked: the
    sampled race below runs on it again (one page load less)."""
    page = race_code_example(browser, app_url, *BOXES, tokens=RACE_TOKENS, plots=PLOTS)
    yield page
    page.context.close()


def test_the_rivals_race_greedy_identical_to_vanilla_and_their_steps_are_drawn(raced):
    page = raced
    _identical(page)
    for lane, source in RIVALS.items():
        names, retrieval = _explore(page, lane)
        assert {src.legend for src in sources_of(lane)[1:]} & set(names), (lane, names)
        assert "what its sources found" in retrieval and f"{source}:" in retrieval, retrieval
        shot(page, f"rivals-{lane}-desktop", "#tree-row", 1500)



