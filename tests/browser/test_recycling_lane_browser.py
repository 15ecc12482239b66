"""Token Recycling's lane in a real browser: a short race with it draws its line in its own colour,
the verdict names it, and "Method explored" opens its steps, whose draft tree has recycled boxes and
whose key names them; the checkbox and the lane choice fit at 1440 px and at 390 px (a phone).

Screenshots go to artifacts/browser/ (recycling-desktop.png, recycling-phone.png).
"""
from __future__ import annotations

import pytest

from helpers.browser import DESKTOP, next_step, resize, settle, shot, text_of
from test_fit_browser import PHONE, assert_fits
from test_race_passes_browser import PLOTS, RACE_TOKENS, inside, race_code_example
from logitspec.analysis.lanes import label
from visual.style import PALETTE

pytestmark = [pytest.mark.browser, pytest.mark.slow]


LINES_JS = """() => { const gd = document.querySelector('#race-passes-plot .js-plotly-plot');
  return gd.data.filter((d) => d.name && d.mode === 'lines').map((d) => ({name: d.name, color: d.line.color})); }"""
TREE_LINES_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  return (gd.layout.shapes || []).map((s) => s.line && s.line.color); }"""


@pytest.fixture(scope="module")
def raced(browser, app_url):
    """A desktop page after a 24-token race of vanilla, LogitSpec and Token Recycling."""
    page = race_code_example(browser, app_url, "with-recycling")
    yield page
    page.context.close()


def test_the_recycling_lane_has_its_own_colour_and_the_verdict_names_it(raced):
    lines = raced.evaluate(LINES_JS)
    assert len(lines) == 3, lines
    recycling = [ln for ln in lines if ln["name"].startswith(label("recycling"))]
    assert len(recycling) == 1 and recycling[0]["color"] == PALETTE["recycling"], lines
    assert len({ln["color"] for ln in lines}) == 3, lines
    verdict = text_of(raced, "#counters .verdict")
    assert "for Token Recycling (cost tree)" in verdict and "identical to vanilla" in verdict and "DIFFERENT" not in verdict


def test_lane_explored_opens_the_recycling_lanes_steps(raced):
    from playwright.sync_api import expect

    raced.locator("#explore-lane").get_by_label(label("recycling"), exact=True).check()
    expect(raced.locator("#step-label")).to_contain_text(label("recycling"), timeout=60_000)
    settle(raced)
    for _ in range(RACE_TOKENS):  # a first step may find no row in the matrix yet; a later one does
        if PALETTE["recycled"] in raced.evaluate(TREE_LINES_JS):
            break
        next_step(raced)
    assert PALETTE["recycled"] in raced.evaluate(TREE_LINES_JS)
    assert "recycled: from the matrix" in text_of(raced, "#tree-row")


def test_the_checkbox_and_the_lane_choice_fit_a_desktop_and_a_phone(raced):
    for sel in ("#with-recycling", "#explore-lane"):
        inside(raced, sel, DESKTOP["width"])
    shot(raced, "recycling-desktop", "#explore-lane", 1300)
    resize(raced, PHONE)
    assert_fits(raced, PLOTS, "phone after the race")
    for sel in ("#with-recycling", "#explore-lane", "#counters .verdict"):
        inside(raced, sel, PHONE["width"])
    assert raced.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    shot(raced, "recycling-phone", "#with-recycling", 1800)
