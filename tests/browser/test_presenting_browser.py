"""Presenting at a projector's size (1920x1080), in a real browser: a step move redraws in place in
the Step explorer and in Explain's detail, Play pauses on the first press, the debugger's filter
answers, and space moves on where a slide clicker would.

The moves and the filter are timed with scripts/time_presenting.py's own measures and reported
(printed, and kept in artifacts/timings/), not asserted: a bound that holds on one CPU fails on a
slower one. docs/performance.md ("Presenting") keeps the figures, against the aims below.
"""
from __future__ import annotations

import importlib.util
import statistics

import pytest

from helpers.browser import text_of
from helpers.paths import ROOT
from helpers.timings import report_times

_spec = importlib.util.spec_from_file_location("time_presenting", ROOT / "scripts" / "time_presenting.py")
T = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(T)

MOVES = 3
MOVE_AIM_S = 0.3  # a step move, clocked in the page (the page holds the neighbouring steps: ui/held.py)
FILTER_AIM_S = 1.0

pytestmark = [pytest.mark.slow, pytest.mark.browser]


# Each plot a move shows, marked before the move: a plot drawn in place (Plotly.react) keeps its mark.
MARK_JS = "(sel) => document.querySelectorAll(sel).forEach((g, i) => { g.__kept = i + 1; })"
KEPT_JS = "(sel) => Array.from(document.querySelectorAll(sel)).map(g => g.__kept || 0)"


def moved_in_place(page, plots: str, n: int) -> list[int]:
    """Move one step with → and return each plot's mark: 0 for a plot mounted anew by the move."""
    page.evaluate(MARK_JS, plots)
    page.keyboard.press("ArrowRight")
    page.wait_for_function(T.PLOT_AT_JS, arg=[plots, n], timeout=60_000)
    return page.evaluate(KEPT_JS, plots)


def test_play_pauses_on_the_first_press(browser, app_url):
    got = T.play_pause(browser, app_url)
    assert got["paused_by_one_press"], got


def test_the_debuggers_filter_answers(browser, app_url):
    waits = T.debugger_filter(browser, app_url)  # each wait ends on the filter's own answer on the page
    assert waits
    report_times("debugger-filter", FILTER_AIM_S, longest=max(waits), filters=waits)


EXPLORER_PLOTS = "#tree-plot .js-plotly-plot, #cand-plot .js-plotly-plot"
DETAIL_PLOTS = "#explain-detail .js-plotly-plot"


# After the play and filter checks, which open pages of their own: this one is not open meanwhile.
@pytest.fixture(scope="module")
def page(browser, app_url):
    """One page, with the move clock, for the moves and the clicker's keys (one load, not three):
    each brings it to its tab, level and step by hand."""
    page = T.open_page(browser, app_url + f"?trace={T.RUN}&step=0")
    yield page
    page.context.close()


def _typed_step(page, box: str, step: int) -> None:
    page.locator(box).fill(str(step))
    page.locator(box).press("Enter")


def _explain_level(page, level: str) -> None:
    """Explain's tab at `level`, once the tab's own drawing (the lesson first) is in."""
    page.get_by_role("tab", name="Explain", exact=True).click()
    page.wait_for_function("() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')",
                           timeout=90_000)
    page.locator("#explain-levels").get_by_role("tab", name=level).click()


def test_a_step_move_in_the_explorer_redraws_in_place_and_is_timed(browser, app_url, page):
    """gr.Plot mounted a new plot for each step and drew it twice from nothing: most of a move."""
    page.get_by_role("tab", name="Step explorer", exact=True).click()
    if not text_of(page, "#step-label").startswith("Step 0 ("):  # step 0, as the page's link opens it
        _typed_step(page, "#step-slider input[type=number]", 0)
    page.wait_for_function(T.PLOT_AT_JS, arg=[EXPLORER_PLOTS, 0], timeout=60_000)
    page.locator("#step-label").click()
    assert moved_in_place(page, EXPLORER_PLOTS, 1) == [1, 2]
    assert text_of(page, "#step-label").startswith("Step 1 (")
    # The timed moves on the same page, from step 0 again (one page load less).
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(T.PLOT_AT_JS, arg=[EXPLORER_PLOTS, 0], timeout=60_000)
    assert text_of(page, "#step-label").startswith("Step 0 (")
    waits = T.explorer_moves(browser, app_url, MOVES, page=page)
    assert len(waits) == MOVES
    report_times("explorer-move", MOVE_AIM_S, median=statistics.median(waits), moves=waits)


def test_a_step_move_in_explains_detail_redraws_its_panels_in_place_and_is_timed(browser, app_url, page):
    _explain_level(page, "In detail")
    page.wait_for_function("() => /Step \\d+ of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)  # the tab's own drawing is in: a step typed now is the last word
    if "Step 0 of" not in text_of(page, "#explain-head"):  # step 0, as a link with &step=0 opens it
        _typed_step(page, "#explain-step input", 0)
    page.wait_for_function(T.PLOT_AT_JS, arg=[DETAIL_PLOTS, 0], timeout=60_000)
    page.locator("#explain-head").click()
    kept = moved_in_place(page, DETAIL_PLOTS, 1)
    assert len(kept) == 6 and all(kept), kept
    # The timed moves on the same page, from step 0 again (one page load less).
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(T.PLOT_AT_JS, arg=[DETAIL_PLOTS, 0], timeout=60_000)
    waits = T.explain_moves(browser, app_url, MOVES, page=page)
    assert len(waits) == MOVES
    report_times("explain-move", MOVE_AIM_S, median=statistics.median(waits), moves=waits)


def test_space_moves_on_in_explain_as_a_clicker_does(page):
    tops = "() => Array.from(document.querySelectorAll('#explain-lesson .lesson-stage'))" \
           ".map(el => Math.round(el.getBoundingClientRect().top))"
    _explain_level(page, "Lesson")  # where a link to the tab opens it
    page.locator("#lesson-intro").click()
    page.evaluate("() => window.scrollTo(0, 0)")
    for i in range(2):  # the first stage, then the second, each brought to the top of the screen
        page.keyboard.press(" ")
        page.wait_for_function(f"(i) => Math.abs(({tops})()[i]) < 8", arg=i, timeout=5_000)
    # In detail, space goes to the next step, and shift+space back.
    page.locator("#explain-levels").get_by_role("tab", name="In detail").click()
    panels = "#explain-detail .js-plotly-plot"
    page.wait_for_function(f"() => !!document.querySelector('{panels}')?.layout?.meta", timeout=60_000)
    n = page.evaluate(f"() => document.querySelector('{panels}').layout.meta.step")
    page.locator("#explain-head").click()
    page.keyboard.press(" ")
    page.wait_for_function(T.PLOT_AT_JS, arg=[panels, n + 1], timeout=60_000)
    assert f"Step {n + 1}" in text_of(page, "#explain-head")
    page.keyboard.press("Shift+ ")
    page.wait_for_function(T.PLOT_AT_JS, arg=[panels, n], timeout=60_000)
