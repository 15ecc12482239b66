"""The race in forward passes in a real browser: a short race with the paper's lane shows the
passes figure and a verdict carrying both figures, and the new checkbox and figure fit at
1440 px and at 390 px (a phone).

Screenshots go to artifacts/browser/ (passes-desktop.png, passes-phone.png).
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, MODEL_WAIT_MS, fresh_page, resize, set_max_new, shot, text_of
from logitspec.analysis.lanes import label
from test_fit_browser import PHONE, assert_fits, assert_no_text_over_text, wait_for_plots

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE_TOKENS = 24
PLOTS = ("race-plot", "race-passes-plot")

LINES_JS = """() => { const gd = document.querySelector('#race-passes-plot .js-plotly-plot');
  return gd.data.filter((d) => d.name).map((d) => ({name: d.name, x: d.x[d.x.length - 1], y: d.y[d.y.length - 1]})); }"""


def inside(page, selector: str, width: int) -> None:
    box = page.locator(selector).first.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (selector, box, width)


def race_code_example(browser, app_url, *lane_checkboxes: str, tokens: int = RACE_TOKENS, plots=PLOTS):
    """A desktop page after a race of `tokens` tokens of the Code example with the optional lanes
    of `lane_checkboxes` (their elem ids) ticked, its `plots` drawn."""
    from playwright.sync_api import expect

    page = fresh_page(browser, app_url, DESKTOP)
    wait_for_plots(page, plots)
    page.get_by_role("button", name="Code").first.click()
    expect(page.locator("#prompt textarea")).to_have_value(re.compile("Fibonacci"), timeout=10_000)
    for box in lane_checkboxes:
        page.locator(f"#{box} input[type=checkbox]").check()
    set_max_new(page, tokens)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=MODEL_WAIT_MS + 300_000)
    wait_for_plots(page, plots)
    return page


@pytest.fixture(scope="module")
def raced(browser, app_url):
    """A desktop page after a 24-token race of vanilla, LogitSpec and the paper's tree."""
    page = race_code_example(browser, app_url, "with-static")
    yield page
    page.context.close()


def test_the_passes_view_shows_every_lane_in_counts(raced):
    caption = text_of(raced, "#race-passes-plot-caption")
    assert "against forward passes" in caption and "not time" in caption, caption
    lines = raced.evaluate(LINES_JS)
    names = " ".join(line["name"] for line in lines)
    assert "64 tokens:<br>what a GPU verifies in one pass" in names, names
    assert len(lines) == 3 and all(line["y"] == RACE_TOKENS for line in lines), lines
    passes = {line["name"].split(":")[0]: line["x"] for line in lines}
    static, cost, van = (label(n) for n in ("logitspec-static", "logitspec", "vanilla"))
    assert passes[static] < passes[van] and passes[cost] < passes[van], passes
    assert all(isinstance(x, int) for x in passes.values()), passes  # counts, not seconds


def test_the_verdict_carries_both_figures(raced):
    verdict = text_of(raced, "#counters .verdict")
    assert re.search(r"LogitSpec \(cost tree\) [\d.]+× the tokens/s of vanilla greedy decoding on this CPU",
                     verdict), verdict
    m = re.search(r"per forward pass, ([\d.]+) tokens against ([\d.]+) for LogitSpec, the paper's static tree "
                  r"\(64 tokens: what a GPU verifies in one pass; ([\d.]+)× vanilla's tokens/s here\) and "
                  r"([\d.]+) for vanilla", verdict)
    assert m, verdict
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict
    subtitle = text_of(raced, "#race-passes-plot-caption")
    assert f"{label('logitspec')}: {m.group(1)}" in subtitle, subtitle
    assert f"{label('logitspec-static')}: {m.group(2)}" in subtitle, subtitle


def test_the_checkbox_and_the_figure_fit_a_desktop_and_a_phone(raced):
    assert_fits(raced, PLOTS, "desktop after the race")
    assert_no_text_over_text(raced, ("race-passes-plot",), "desktop after the race")
    inside(raced, "#with-static", DESKTOP["width"])
    raced.locator("#race-passes-plot").scroll_into_view_if_needed()
    shot(raced, "passes-desktop", "#counters", 1300)
    resize(raced, PHONE)
    assert_fits(raced, PLOTS, "phone after the race")
    assert_no_text_over_text(raced, ("race-passes-plot",), "phone after the race")
    for sel in ("#with-static", "#race-passes-plot-caption", "#counters .verdict"):
        inside(raced, sel, PHONE["width"])
    assert raced.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    shot(raced, "passes-phone", "#with-static", 1800)
