"""Labels drawn whole and at their size, in a real browser: in present mode at 1920 the candidate
chart's bar labels are no smaller than the present floor and its legend cuts no entry; on a phone
and a projector the lesson's bar charts show their bar names and axis title inside the figure.

Screenshots go to artifacts/browser/ (whole-*.png).
"""
from __future__ import annotations

import pytest

from helpers.browser import fresh_page, settle, shot
from test_present_browser import floor_px

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN = "coding-122"
PRESENT = {"width": 1920, "height": 1080}
SCREENS = {"390": {"width": 390, "height": 844}, "1920": PRESENT}
WAIT_MS = 240_000

# A bar label's size as drawn: Plotly shrinks a label to its bar by a scale transform, not its font size.
BAR_LABELS_JS = """() => Array.from(document.querySelectorAll('#cand-plot .barlayer text'))
  .filter((t) => t.textContent.trim() && t.checkVisibility())
  .map((t) => [t.textContent, parseFloat(getComputedStyle(t).fontSize) * t.getBoundingClientRect().height
               / t.getBBox().height])"""
# Each legend entry's text against the legend's box, whose width Plotly measured (and clips to).
LEGEND_JS = """() => { const lg = document.querySelector('#cand-plot .legend');
  const bg = lg.querySelector('rect.bg').getBoundingClientRect();
  return Array.from(lg.querySelectorAll('.legendtext')).map((t) => { const r = t.getBoundingClientRect();
    return [t.textContent, r.left >= bg.left - 1 && r.right <= bg.right + 1]; }); }"""
# Every tick label and axis title of a figure: whether it lies inside the figure's drawn box.
INSIDE_JS = """(id) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
  return Array.from(gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text'))
    .filter((t) => t.textContent.trim())
    .map((t) => { const r = t.getBoundingClientRect();
      return [t.textContent, r.left >= svg.left - 1 && r.right <= svg.right + 1, Math.round(r.left), Math.round(r.right)]; }); }"""


def test_present_mode_draws_the_candidate_charts_bar_labels_at_the_floor_and_its_legend_whole(browser, app_url):
    page = fresh_page(browser, app_url.rstrip("/") + f"/?trace={RUN}&step=5&tab=explorer&present=1", PRESENT)
    page.wait_for_function("() => document.documentElement.classList.contains('present')"
                           " && !!document.querySelector('#cand-plot .barlayer text')", timeout=WAIT_MS)
    settle(page, 600, 120_000)
    labels = page.evaluate(BAR_LABELS_JS)
    assert labels, "no bar label drawn"  # the step's g2 matches each carry their n-gram length
    floor = floor_px(PRESENT["width"])
    small = [(t, round(px, 1)) for t, px in labels if px < floor - 0.5]
    assert not small, f"bar labels under {floor} px: {small[:8]}"
    legend = page.evaluate(LEGEND_JS)
    assert len(legend) >= 4 and all(whole for _, whole in legend), legend
    page.locator("#cand-plot").scroll_into_view_if_needed()
    page.locator("#cand-plot").screenshot(path=str(shot_path("whole-candidates-present-1920")))
    page.context.close()


@pytest.mark.parametrize("which", list(SCREENS))
def test_the_lessons_bar_charts_show_their_names_and_axis_title_whole(browser, app_url, which):
    page = fresh_page(browser, app_url.rstrip("/") + f"/?trace={RUN}&tab=explain", SCREENS[which])
    page.wait_for_function("() => !!document.querySelector('#lesson-sources-plot .js-plotly-plot .main-svg')",
                           timeout=WAIT_MS)
    settle(page, 600, 120_000)
    for stage in ("slow", "sources"):
        texts = page.evaluate(INSIDE_JS, f"lesson-{stage}-plot")
        assert len(texts) >= 4, (stage, texts)
        cut = [t for t in texts if not t[1]]
        assert not cut, f"{which} px, stage {stage}: cut at the figure's edge: {cut}"
    shot(page, f"whole-lesson-sources-{which}", "#lesson-sources-plot", 500)
    page.context.close()


def shot_path(name: str):
    from helpers.browser import SHOTS

    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"
