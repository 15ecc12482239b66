"""The paper's baselines' lanes in a real browser: a short race with Lookahead decoding and REST
ticked draws each in its own colour in the race figure and the counters; the verdict names them
and says their output is vanilla's; "Method explored" opens each lane's steps, whose window and
pool, or retrieved continuations, are drawn beside the tree; and all of it fits at 1440 px and
at 390 px (a phone).

REST's datastore (the standard library, a few seconds to build) is made at its first race and kept on
disk. Screenshots go to artifacts/browser/ (baselines-lookahead-desktop.png,
baselines-rest-desktop.png, baselines-phone.png).
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, next_step, resize, settle, shot, text_of
from test_fit_browser import PHONE, assert_fits, assert_no_text_over_text, wait_for_plots
from test_race_passes_browser import inside, race_code_example
from logitspec.analysis.lanes import label
from visual.style import PALETTE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE_TOKENS = 16  # enough for Lookahead's window to warm up, and for a speed-up (MIN_COMPARED_TOKENS)
BASELINES = {"lookahead": "Lookahead", "rest": "REST"}
PLOTS = ("race-plot",)

LINES_JS = """() => { const gd = document.querySelector('#race-plot .js-plotly-plot');
  return gd.data.filter((d) => d.name && d.mode === 'lines').map((d) => ({name: d.name, color: d.line.color})); }"""
# The figure beside the tree: its caption's title, its rows' names and its boxes' colours.
BESIDE_JS = """() => { const gd = document.querySelector('#cand-plot .js-plotly-plot');
  const cap = document.querySelector('#cand-plot-caption .fig-title');
  return {title: cap ? cap.innerText.trim() : '', rows: (gd.layout.yaxis.ticktext || []).map(String),
          colours: (gd.layout.shapes || []).flatMap((s) => [s.fillcolor, s.line && s.line.color])}; }"""


@pytest.fixture(scope="module")
def raced(browser, app_url):
    """A desktop page after a short race of the Code example with Lookahead decoding and REST ticked."""
    page = race_code_example(browser, app_url, *(f"with-{lane}" for lane in BASELINES), tokens=RACE_TOKENS,
                             plots=PLOTS)
    yield page
    page.context.close()


def test_each_baseline_has_its_own_colour_and_the_verdict_names_them(raced):
    lines = raced.evaluate(LINES_JS)
    colours = {ln["name"].split(":")[0].split("<")[0].strip(): ln["color"] for ln in lines}
    for lane in BASELINES:
        assert colours.get(label(lane)) == PALETTE[lane], lines
    assert len(set(colours.values())) == len(colours), lines
    counters = raced.locator("#counters").inner_html()
    for lane in BASELINES:
        assert re.search(rf"color:\s*{PALETTE[lane]}[^>]*>■</span>\s*{re.escape(label(lane))}", counters, re.I), lane
    verdict = text_of(raced, "#counters .verdict")
    assert "for Lookahead decoding" in verdict and "for REST" in verdict, verdict
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict, verdict


ORIGIN = {"lookahead": "pool", "rest": "retrieved"}


def _explore(page, lane: str) -> dict:
    """Open `lane`'s steps in the explorer; step on until its drawing holds a drafted branch in its
    origin's colour. Which step that is depends on the text the CPU's arithmetic decoded (an AVX2
    CPU's run verified no pool n-gram at the step another CPU's did), so it is searched for."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#explore-lane").get_by_label(label(lane), exact=True).check()
    expect(page.locator("#step-label")).to_contain_text(label(lane), timeout=60_000)
    settle(page)
    branch = "pool n-gram 1" if lane == "lookahead" else "continuation 1"
    for _ in range(RACE_TOKENS):
        got = page.evaluate(BESIDE_JS)
        if branch in got["rows"] and PALETTE[ORIGIN[lane]] in got["colours"]:
            break
        next_step(page)
    return got


@pytest.mark.parametrize("lane", list(BASELINES))
def test_lane_explored_draws_the_baselines_steps_beside_the_tree(raced, lane):
    got = _explore(raced, lane)
    assert got["title"].startswith(BASELINES[lane]), got["title"]
    assert PALETTE[ORIGIN[lane]] in got["colours"], got
    if lane == "lookahead":
        assert "window level 0" in got["rows"] and PALETTE["window"] in got["colours"], got["rows"]
    branch = "pool n-gram 1" if lane == "lookahead" else "continuation 1"
    assert branch in got["rows"], got["rows"]
    assert_fits(raced, ("cand-plot", "tree-plot"), f"{lane} explored on a desktop")
    assert_no_text_over_text(raced, ("cand-plot",), f"{lane} explored on a desktop")
    shot(raced, f"baselines-{lane}-desktop", "#tree-row", 1500)


def test_the_baselines_drawing_fits_a_phone(raced):
    _explore(raced, "lookahead")
    resize(raced, PHONE)
    assert_fits(raced, ("cand-plot", "tree-plot"), "phone, Lookahead explored")
    assert_no_text_over_text(raced, ("cand-plot",), "phone, Lookahead explored")
    for sel in ("#cand-plot", "#explore-lane"):
        inside(raced, sel, PHONE["width"])
    assert raced.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    shot(raced, "baselines-phone", "#cand-plot-caption", 1400)
    raced.set_viewport_size(DESKTOP)
