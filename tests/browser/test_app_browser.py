"""The app in a real browser (Debian's chromium through Playwright): pick, run, explore.

Screenshots go to artifacts/browser/; with LOGITSPEC_UPDATE_DOCS=1 the race, explorer and
debugger ones are also copied to docs/img/ for the README.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from helpers.browser import SHOTS, counter_rows, set_max_new, shot, tree_data
from helpers.paths import ROOT

DOCS = ROOT / "docs" / "img"
MAX_NEW = 40


@pytest.fixture(scope="module")
def page(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.goto(app_url, wait_until="domcontentloaded")
    yield pg
    ctx.close()


@pytest.mark.slow
@pytest.mark.browser
def test_pick_run_and_explore(page):
    from playwright.sync_api import expect
    # The shipped trace is on show at once, before any model work.
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    assert "Step 0 (steps 0–" in page.locator("#step-label").inner_text()

    # Pick the code example and keep the run short.
    page.get_by_role("button", name="Code").first.click()
    expect(page.locator("#prompt textarea")).to_have_value(re.compile("Fibonacci"), timeout=10_000)
    set_max_new(page, MAX_NEW)

    page.locator("#run").click()
    # The race ends on its verdict: the measured speed-up and the lossless check. (The first
    # screen's recorded race has a verdict too: wait for this run's "Done" status.)
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=420_000)
    verdict = page.locator("#counters .verdict").inner_text()
    assert "identical to vanilla" in verdict and "×" in verdict
    lanes = counter_rows(page)
    assert set(lanes) == {"vanilla", "logitspec"}
    assert lanes["vanilla"]["tokens"] == lanes["logitspec"]["tokens"] == str(MAX_NEW)
    page.wait_for_selector("#race-plot .js-plotly-plot")
    page.wait_for_timeout(1000)
    race_png = shot(page, "race")

    # The tree plot rendered for this run's step 0.
    assert page.locator("#tree-plot .js-plotly-plot .main-svg").count() > 0
    assert page.locator("#tree-plot .js-plotly-plot g.point, #tree-plot .js-plotly-plot .scatterlayer path").count() > 0
    label0 = page.locator("#step-label").inner_text()
    assert "Step 0 (steps 0–" in label0
    before = tree_data(page)
    assert before

    # Move to step 3 with the Next button.
    for i in (1, 2, 3):
        page.locator("#next").click()
        page.wait_for_function(
            "(n) => (document.querySelector('#step-label')?.innerText || '').includes('Step ' + n + ' (steps')", arg=i,
            timeout=60_000)
    page.wait_for_function("(b) => { const el = document.querySelector('#tree-plot .js-plotly-plot');"
                           " return el && el.data && JSON.stringify(el.data.map(t => [t.x, t.y, t.text, t.hovertext])) !== b; }",
                           arg=before, timeout=60_000)
    after = tree_data(page)
    assert after and after != before
    assert "Step 3 (steps 0–" in page.locator("#step-label").inner_text()
    page.locator("#tree-plot").scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    explorer_png = shot(page, "explorer", "#tabs", 1200)

    # The retrieval debugger lists steps by outcome.
    page.get_by_role("tab", name="Retrieval debugger").click()
    page.wait_for_selector("#debug-table table", timeout=30_000)
    page.wait_for_timeout(800)
    table_text = page.locator("#debug-table").inner_text()
    assert any(o in table_text for o in ("g1 matched", "g2 rescued", "both failed"))
    debugger_png = shot(page, "debugger", "#tabs", 900)

    if os.environ.get("LOGITSPEC_UPDATE_DOCS") == "1":  # a test run leaves the tree clean otherwise
        DOCS.mkdir(parents=True, exist_ok=True)
        for src, name in ((race_png, "app-race.png"), (explorer_png, "app-explorer.png"),
                          (debugger_png, "app-debugger.png")):
            shutil.copyfile(src, DOCS / name)
    (SHOTS / "steps.json").write_text(json.dumps({"step0": label0, "verdict": verdict}), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.browser
def test_a_recorded_run_opens_from_the_example_cache(page):
    """A cached example shows a whole recorded run at once and can then be explored."""
    page.goto(page.url, wait_until="domcontentloaded")  # a fresh session
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    examples = page.locator("#recorded")
    examples.get_by_text(re.compile(r"^Translation: \d+ tokens")).first.click()
    page.wait_for_function(
        "() => (document.querySelector('#status')?.innerText || '').includes('translation-161.json')",
        timeout=30_000)
    assert "Step 0 (steps 0–" in page.locator("#step-label").inner_text()
    assert "German" in page.locator("#prompt textarea").input_value()
    # The session now holds that trace: Next moves through its steps.
    page.locator("#next").click()
    page.wait_for_function(
        "() => (document.querySelector('#step-label')?.innerText || '').includes('Step 1 (steps')",
        timeout=30_000)
    shot(page, "recorded")
