"""Seven lanes and a phone, in a real browser (Debian's chromium): a race with every lane box ticked
keeps each column of its results table whole at 1440, 1920 and 390 px (no scroll hiding the
speed-up, no cut header), and its figure's legend shows every entry whole (no legend scrollbar, each
lane's "× vanilla's speed" line there) without taking half the figure.

Screenshots go to artifacts/browser/ (lanes-7-<width>.png).
"""
from __future__ import annotations

import itertools
import re

import pytest

from helpers.browser import DESKTOP, MODEL_WAIT_MS, counter_rows, fresh_page, resize, set_max_new, shot
from logitspec.analysis.lanes import label
from test_fit_browser import PHONE, wait_for_plots
from ui.form import RACED_ALWAYS, lane_boxes

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE_TOKENS = 24  # enough tokens for the verdict to state speed-ups (a shorter race is too early to compare)
WIDE = {"width": 1920, "height": 1080}
SCREENS = {"1440": DESKTOP, "1920": WIDE, "390": PHONE}
RACE_PLOTS = ("race-plot", "race-passes-plot")

# The results table: its scroll box, every cell whose text runs past its box, each column's header
# as shown (none hidden), and its body and verdict type sizes.
TABLE_JS = """() => {
  const wrap = document.querySelector('#counters .counters-wrap'), table = wrap.querySelector('table');
  const shown = (c) => c.offsetWidth > 0 && getComputedStyle(c).display !== 'none';
  const heads = [...table.rows[0].cells].map((c) => ({text: c.innerText.trim(), shown: shown(c)}));
  const over = [...table.querySelectorAll('th, td')].filter((c) => shown(c) && c.scrollWidth > c.clientWidth + 1)
    .map((c) => c.innerText.trim());
  const right = Math.max(...[...table.querySelectorAll('th, td')].filter(shown).map((c) => c.getBoundingClientRect().right));
  const verdict = document.querySelector('#counters .verdict');
  return {scroll: wrap.scrollWidth, client: wrap.clientWidth, heads, over, right,
          font: parseFloat(getComputedStyle(table.querySelector('tr[data-lane] td:nth-child(2)')).fontSize),
          verdict: verdict ? parseFloat(getComputedStyle(verdict).fontSize) : null};
}"""

# A figure's legend: whether Plotly scrolls it, each entry's text and box against the figure, and the
# legend's height against the figure's.
LEGEND_JS = """(id) => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const lg = gd._fullLayout.legend, svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
  const bar = gd.querySelector('.legend .scrollbar');
  const barH = bar ? bar.getBoundingClientRect().height : 0;
  const clip = gd.querySelector('.legend .scrollbox');
  const box = gd.querySelector('.legend .bg').getBoundingClientRect();
  const entries = [...gd.querySelectorAll('.legend .traces')].map((t) => {
    const r = t.querySelector('.legendtext').getBoundingClientRect();
    return {text: t.querySelector('.legendtext').textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  });
  return {height: lg._height, eff: lg._effHeight, barH, entries,
          legend: {x0: box.left, y0: box.top, x1: box.right, y1: box.bottom},
          svg: {x0: svg.left, y0: svg.top, x1: svg.right, y1: svg.bottom}, figure: gd._fullLayout.height,
          plot: gd._fullLayout.yaxis._length, lanes: gd.data.filter((d) => d.showlegend !== false).length};
}"""


def every_lane_box_ticked(page) -> list[str]:
    """Tick every lane's checkbox by its label; the lanes the race will run."""
    boxes = lane_boxes()
    for box in boxes:
        page.get_by_label(box.label, exact=True).check()
    return [*RACED_ALWAYS, *(b.lane for b in boxes)]


@pytest.fixture(scope="module")
def seven(browser, app_url):
    """A desktop page after a short race of the Code example with every lane box ticked."""
    from playwright.sync_api import expect

    page = fresh_page(browser, app_url, DESKTOP)
    wait_for_plots(page, ("race-plot",))  # the page is drawn; the passes figure is checked after the race
    page.get_by_role("button", name="Code").first.click()
    expect(page.locator("#prompt textarea")).to_have_value(re.compile("Fibonacci"), timeout=10_000)
    lanes = every_lane_box_ticked(page)
    set_max_new(page, RACE_TOKENS)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=MODEL_WAIT_MS + 600_000)
    wait_for_plots(page, RACE_PLOTS)
    assert set(counter_rows(page)) == set(lanes), "the race did not run every ticked lane"
    yield page, lanes
    page.context.close()


@pytest.mark.parametrize("width", list(SCREENS))
def test_seven_lanes_keep_every_column_of_the_table_whole(seven, width):
    page, lanes = seven
    resize(page, SCREENS[width])
    got = page.evaluate(TABLE_JS)
    heads = [h["text"] for h in got["heads"]]
    assert "speed-up" in heads and "compute clock" in heads and "passes" in heads, heads
    hidden = [h["text"] for h in got["heads"] if not h["shown"] and h["text"] != "method"]
    assert not hidden, f"{width}: columns hidden: {hidden}"
    assert got["scroll"] <= got["client"] + 1, f"{width}: the table scrolls sideways: {got}"
    assert got["right"] <= SCREENS[width]["width"], f"{width}: a column is past the screen's edge: {got}"
    assert not got["over"], f"{width}: cells whose text runs past them: {got['over']}"
    assert got["font"] >= 13, f"{width}: the table's text is {got['font']} px"
    assert got["verdict"] is None or got["verdict"] <= 1.3 * got["font"], f"{width}: {got}"
    page.locator("#counters").scroll_into_view_if_needed()
    shot(page, f"lanes-7-table-{width}", "#counters", 900)


def _inside(a: dict, b: dict) -> bool:
    return b["x0"] - 1 <= a["x0"] and a["x1"] <= b["x1"] + 1 and b["y0"] - 1 <= a["y0"] and a["y1"] <= b["y1"] + 1


@pytest.mark.parametrize("width", list(SCREENS))
def test_seven_lanes_legend_shows_every_entry_whole(seven, width):
    page, lanes = seven
    resize(page, SCREENS[width])
    for plot in RACE_PLOTS:
        got = page.evaluate(LEGEND_JS, plot)
        where = f"{width}, #{plot}"
        assert got["lanes"] == len(lanes) == len(got["entries"]), (where, got["entries"])
        assert got["height"] <= got["eff"] + 1 and got["barH"] == 0, f"{where}: the legend scrolls: {got}"
        for e in got["entries"]:
            assert _inside(e, got["legend"]) and _inside(e, got["svg"]), f"{where}: entry cut: {e} in {got}"
        if plot == "race-plot":
            names = [label(n) for n in lanes if n != "vanilla"]
            for name in names:
                entry = next((e["text"] for e in got["entries"] if e["text"].startswith(name)), "")
                assert "× vanilla's speed" in entry, f"{where}: {name!r} has no speed-up line: {entry!r}"
        share = got["height"] / got["figure"]
        assert share < 0.5 if width != "390" else share < 0.6, f"{where}: the legend is {share:.0%} of the figure"
        assert got["plot"] >= 250, f"{where}: the plot itself is {got['plot']} px tall"
    page.locator("#race-plot").scroll_into_view_if_needed()
    shot(page, f"lanes-7-figure-{width}", "#race-plot-caption", 1200 if width != "390" else 1600)


# ---------------------------------------------------------------- a phone

BIG_TREE = "?trace=summarization-242.json&step=14"  # a g1 chain 23 deep: far wider than a phone
LESSON = "?trace=coding-122&tab=explain"

# The model dropdown: the right edge of its input's text box against the left edge of its arrow.
DROPDOWN_JS = """() => { const input = document.querySelector('#model input'), icon = document.querySelector('#model .icon-wrap');
  const r = input.getBoundingClientRect(), s = getComputedStyle(input);
  return {text_right: r.right - parseFloat(s.paddingRight) - parseFloat(s.borderRightWidth), icon_left: icon.getBoundingClientRect().left}; }"""

# The draft tree on a phone: its slider, the columns its axis shows against the tree's, its scroll
# box, and its boxes against the plot's own area.
PHONE_TREE_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot'), lay = gd._fullLayout;
  const box = gd.parentElement, s = getComputedStyle(box);
  return {slider: !!(lay.xaxis.rangeslider && lay.xaxis.rangeslider.visible), shown: lay.xaxis.range,
          whole: gd.layout.meta.fit.window.range, scroll: box.scrollWidth, client: box.clientWidth, overflow: s.overflowX,
          plot_w: lay.xaxis._length, width: lay.width}; }"""

# A lesson figure's token labels and boxes, in page pixels.
ROW_JS = """(id) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  const labels = [...gd.querySelectorAll('.scatterlayer .textpoint text')].filter((t) => t.textContent)
    .map((t) => { const b = t.getBoundingClientRect(); return {text: t.textContent, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom}; });
  const boxes = gd._fullLayout.shapes.map((s) => ({x0: r.left + xa._offset + xa.l2p(s.x0), x1: r.left + xa._offset + xa.l2p(s.x1)}));
  const p = gd.parentElement;
  return {labels, boxes, scroll: p.scrollWidth, client: p.clientWidth, overflow: getComputedStyle(p).overflowX}; }"""


def _one_row(page, ids) -> list[float]:
    return [page.locator(f"#{i}").bounding_box()["y"] for i in ids]


def test_a_phone_sees_run_on_its_first_screen_and_the_model_name_beside_the_arrow(browser, app_url):
    page = fresh_page(browser, app_url, PHONE)  # the recorded race and its table, as a visitor first sees it
    page.wait_for_selector("#counters table.counters", timeout=60_000)
    page.evaluate("window.scrollTo(0, 0)")
    run = page.locator("#run").bounding_box()
    assert run["y"] >= 0 and run["y"] + run["height"] <= PHONE["height"], f"Run is at {run}, below the first screen"
    got = page.evaluate(DROPDOWN_JS)
    assert got["text_right"] <= got["icon_left"] + 1, f"the dropdown's arrow covers its label: {got}"
    tops = _one_row(page, ("prev", "next", "play"))
    assert max(tops) - min(tops) <= 2, f"Previous, Next and Play on more than one row: {tops}"
    shot(page, "lanes-phone-first-screen")
    page.context.close()


def test_a_phone_scrolls_the_whole_tree_with_every_label_in_its_box(browser, app_url):
    from test_fit_browser import assert_tree_labels_fit

    page = fresh_page(browser, app_url + BIG_TREE, PHONE)
    wait_for_plots(page, ("tree-plot",))
    got = page.evaluate(PHONE_TREE_JS)
    assert not got["slider"], f"a range slider (a strip of unlabelled boxes) under the phone's tree: {got}"
    assert got["shown"][0] <= got["whole"][0] + 0.01 and got["shown"][1] >= got["whole"][1] - 0.01, got
    assert got["overflow"] in ("auto", "scroll") and got["scroll"] > got["client"], f"the tree does not scroll: {got}"
    assert got["plot_w"] / (got["whole"][1] - got["whole"][0]) >= 50, f"columns too narrow to read: {got}"
    assert_tree_labels_fit(page, "phone, whole tree")
    page.locator("#tree-plot").scroll_into_view_if_needed()
    page.evaluate("() => { const b = document.querySelector('#tree-plot .js-plotly-plot').parentElement; b.scrollLeft = b.scrollWidth; }")
    shot(page, "lanes-phone-tree-end", "#tree-plot", 900)
    page.context.close()


def test_a_phones_lesson_reads_at_arms_length_and_its_token_labels_stay_apart(browser, app_url):
    from test_fit_browser import overlap

    page = fresh_page(browser, app_url + LESSON, PHONE)
    page.wait_for_function("() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')",
                           timeout=240_000)
    wait_for_plots(page, ("lesson-guess-plot",))
    words = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#lesson-guess-text p')).fontSize)")
    assert 14 <= words <= 19, f"the lesson's words are {words} px on a phone"
    for plot in ("lesson-guess-plot", "lesson-keep-plot"):
        got = page.evaluate(ROW_JS, plot)
        assert len(got["labels"]) >= 3, got
        for a, b in itertools.combinations(got["labels"], 2):
            assert not overlap(a, b, 0.5), f"{plot}: {a['text']!r} runs into {b['text']!r}"
        for lab in got["labels"]:
            mid = (lab["x0"] + lab["x1"]) / 2
            home = [b for b in got["boxes"] if b["x0"] <= mid <= b["x1"]]
            assert home and home[0]["x0"] - 0.5 <= lab["x0"] and lab["x1"] <= home[0]["x1"] + 0.5, (plot, lab, home)
    page.locator("#lesson-guess").scroll_into_view_if_needed()
    shot(page, "lanes-phone-lesson-guess", "#lesson-guess", 800)
    page.context.close()
