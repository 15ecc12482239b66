"""A live race with every lane ticked, in a real browser: one short greedy race of the Code example
with all seven boxes, then each lane checked on that one page.

- the passes figure counts every lane's passes, and the verdict carries both of the paper's figures;
- each lane draws in its own colour, and the verdict names it and finds its output vanilla's;
- "Method explored" opens each method's own steps: RACER's and SuffixDecoding's trees name their
  sources, Lookahead's window and pool and REST's continuations are drawn beside the tree, Token
  Recycling's tree has recycled boxes;
- at 390 px (a phone) the race figure keeps its plot under the legend of nine lanes, and every
  box, table and figure fits the screen;
- its download, uploaded into a new visitor's page at 1440 and at 390 px, shows the same table
  rows, the same verdict (judged on the machine it was recorded on), an explorer offering every
  lane and the debugger's table.

Screenshots of the uploaded race: race-file-<width>.png. Sampled races: test_sampled_race_browser.py; the rivals sampled in process: tests/lossless.
REST's datastore (the standard library, a few seconds to build) is made at the first race and kept
on disk. Screenshots go to artifacts/browser/ (live-*.png).
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, MODEL_WAIT_MS, counter_rows, fresh_page, next_step, resize, settle, \
    set_max_new, shot, text_of
from logitspec.analysis.lanes import label, race_order, sources_of
from logitspec.analysis.race import read_race
from test_every_lane_fits_browser import LEGEND_JS, TABLE_JS
from test_fit_browser import PHONE, assert_fits, assert_no_text_over_text, wait_for_plots
from ui.files import RACE_FILE_PREFIX
from ui.form import lane_boxes
from visual.verdict import RECORDED_WORDS
from visual.style import PALETTE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE_TOKENS = 24  # enough for Lookahead's window to warm up, and for a speed-up (MIN_COMPARED_TOKENS)
PLOTS = ("race-plot", "race-passes-plot")
BASELINES = {"lookahead": ("Lookahead", "pool", "pool n-gram 1"), "rest": ("REST", "retrieved", "continuation 1")}
RIVALS = {"racer": "automaton", "suffix": "prompt tree"}  # a lane, and a source its retrieval view names

LINES_JS = """(id) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  return gd.data.filter((d) => d.name && d.mode === 'lines')
    .map((d) => ({name: d.name, color: d.line.color, x: d.x[d.x.length - 1], y: d.y[d.y.length - 1]})); }"""
TREE_NAMES_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  return gd && gd.data ? gd.data.map((d) => d.name || '') : []; }"""
# The colours of the tree's boxes: a drafted node's box is filled (accepted) or outlined (verified and
# rejected, or pruned) in its source's colour.
TREE_FILLS_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  return (gd.layout.shapes || []).flatMap((s) => [s.fillcolor || '', (s.line && s.line.color) || ''])
    .map((c) => c.toLowerCase()); }"""
TREE_LINES_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  return (gd.layout.shapes || []).map((s) => s.line && s.line.color); }"""
# The figure beside the tree: its caption's title, its rows' names and its boxes' colours.
BESIDE_JS = """() => { const gd = document.querySelector('#cand-plot .js-plotly-plot');
  const cap = document.querySelector('#cand-plot-caption .fig-title');
  return {title: cap ? cap.innerText.trim() : '', rows: (gd.layout.yaxis.ticktext || []).map(String),
          colours: (gd.layout.shapes || []).flatMap((s) => [s.fillcolor, s.line && s.line.color])}; }"""
# Each counters row's lane key and the colour of the swatch before its name.
SWATCH_JS = """() => Object.fromEntries([...document.querySelectorAll('#counters table.counters tr[data-lane]')]
  .map((tr) => { const s = [...tr.querySelectorAll('span')].find((e) => e.textContent.trim() === '■');
                 return [tr.dataset.lane, s ? s.getAttribute('style').match(/color:\\s*(#[0-9a-f]{6})/i)?.[1] || '' : '']; }))"""
DRAWN_LINES_JS = "(id) => document.querySelectorAll('#' + id + ' .scatterlayer .trace').length"
PAYS_JS = """() => { const gd = document.querySelector('#race-pays-plot .js-plotly-plot');
  return gd && gd.data ? gd.data.map((d) => ({name: d.name || '', x: Array.from(d.x), y: Array.from(d.y)})) : null; }"""
PAYS_FOLD = "Where it pays"
LANE_PICK_JS = """() => Array.from(document.querySelectorAll('#explore-lane label'))
    .filter((l) => l.offsetParent !== null).map((l) => l.innerText.trim())"""
PLOT_HEIGHT_JS = "() => document.querySelector('#race-plot .nsewdrag').getBoundingClientRect().height"


def inside(page, selector: str, width: int) -> None:
    box = page.locator(selector).first.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (selector, box, width)


def race_code_example(browser, app_url, *lane_checkboxes: str, tokens: int = RACE_TOKENS, plots=PLOTS):
    """A desktop page after a race of `tokens` tokens of the Code example with the optional lanes
    of `lane_checkboxes` (their elem ids) ticked, its `plots` drawn."""
    from playwright.sync_api import expect

    page = fresh_page(browser, app_url, DESKTOP)
    page.errors = []  # Plotly's own errors: one left the old lines on screen (test_every_lane_fits_browser.py)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
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
    """A desktop page after the 24-token race with every box ticked."""
    page = race_code_example(browser, app_url, *(box.elem_id for box in lane_boxes()))
    yield page
    page.context.close()


def _explore(page, lane: str, found) -> object:
    """Open `lane`'s steps in the explorer and step on until `found(page)` gives something: which
    step drafts what depends on the text the CPU's arithmetic decoded, so it is searched for."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#explore-lane").get_by_label(label(lane), exact=True).check()
    expect(page.locator("#step-label")).to_contain_text(label(lane), timeout=60_000)
    settle(page)
    for _ in range(RACE_TOKENS):
        got = found(page)
        if got:
            return got
        next_step(page)
    return found(page)


def test_every_lane_is_counted_in_passes_and_drawn_in_its_own_colour(raced):
    assert list(counter_rows(raced)) == race_order()
    assert raced.errors == [], raced.errors
    for plot in PLOTS:  # what Plotly drew, not only the figure's data
        assert raced.evaluate(DRAWN_LINES_JS, plot) == 2 * len(race_order()), plot
    lines = raced.evaluate(LINES_JS, "race-passes-plot")
    assert len(lines) == len(race_order()) and all(ln["y"] == RACE_TOKENS for ln in lines), lines
    assert all(isinstance(ln["x"], int) for ln in lines), lines  # counts, not seconds
    passes = {ln["name"].split(":")[0]: ln["x"] for ln in lines}
    assert passes[label("logitspec-static")] < passes[label("vanilla")] > passes[label("logitspec")], passes
    names = " ".join(ln["name"] for ln in lines)
    assert "64 tokens:<br>what a GPU verifies in one pass" in names, names
    colours = {ln["name"].split(":")[0].split("<")[0].strip(): ln["color"] for ln in raced.evaluate(LINES_JS, "race-plot")}
    assert len(colours) == len(race_order()) and len(set(colours.values())) == len(colours), colours
    swatches = raced.evaluate(SWATCH_JS)
    for lane in ("recycling", *BASELINES, *RIVALS):
        assert colours.get(label(lane)) == PALETTE[lane], (lane, colours)
        assert swatches.get(lane, "").lower() == PALETTE[lane].lower(), (lane, swatches)


def test_the_verdict_names_every_lane_identical_and_carries_both_figures(raced):
    verdict = text_of(raced, "#counters .verdict")
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict, verdict
    for words in ("for Lookahead decoding", "for REST", "for Token Recycling (cost tree)"):
        assert words in verdict, (words, verdict)
    assert re.search(r"LogitSpec \(cost tree\) [\d.]+× the tokens/s of vanilla greedy decoding on this CPU",
                     verdict), verdict
    m = re.search(r"per forward pass, ([\d.]+) tokens against .*?([\d.]+) for LogitSpec, the paper's static tree "
                  r"\(64 tokens: what a GPU verifies in one pass; ([\d.]+)× vanilla's tokens/s here\)", verdict)
    assert m, verdict
    subtitle = text_of(raced, "#race-passes-plot-caption")
    assert "against forward passes" in subtitle and "not time" in subtitle, subtitle
    assert f"{label('logitspec')}: {m.group(1)}" in subtitle, subtitle
    assert f"{label('logitspec-static')}: {m.group(2)}" in subtitle, subtitle
    counters = text_of(raced, "#counters")
    assert all(label(lane) in counters for lane in RIVALS), counters


@pytest.mark.parametrize("lane", list(RIVALS))
def test_a_rivals_steps_name_its_sources(raced, lane):
    sources = sources_of(lane)[1:]
    colours = {src.colour.lower() for src in sources}
    drawn = _explore(raced, lane, lambda page: colours & set(page.evaluate(TREE_FILLS_JS)))
    assert drawn, (lane, colours, raced.evaluate(TREE_FILLS_JS))  # a step that drafted, drawn in its source's colour
    assert {src.legend for src in sources} <= set(raced.evaluate(TREE_NAMES_JS))  # and the key names the sources
    retrieval = text_of(raced, "#retrieval")
    assert "what its sources found" in retrieval and f"{RIVALS[lane]}:" in retrieval, retrieval
    shot(raced, f"live-{lane}-desktop", "#tree-row", 1500)


@pytest.mark.parametrize("lane", list(BASELINES))
def test_a_baselines_steps_are_drawn_beside_the_tree(raced, lane):
    title, origin, branch = BASELINES[lane]

    def beside(page):
        got = page.evaluate(BESIDE_JS)
        return got if branch in got["rows"] and PALETTE[origin] in got["colours"] else None

    got = _explore(raced, lane, beside)
    assert got, (lane, raced.evaluate(BESIDE_JS))
    assert got["title"].startswith(title), got["title"]
    if lane == "lookahead":
        assert "window level 0" in got["rows"] and PALETTE["window"] in got["colours"], got["rows"]
    assert_fits(raced, ("cand-plot", "tree-plot"), f"{lane} explored on a desktop")
    assert_no_text_over_text(raced, ("cand-plot",), f"{lane} explored on a desktop")
    shot(raced, f"live-{lane}-desktop", "#tree-row", 1500)


def test_recyclings_steps_draw_recycled_boxes(raced):
    found = _explore(raced, "recycling", lambda page: PALETTE["recycled"] in page.evaluate(TREE_LINES_JS))
    assert found, raced.evaluate(TREE_LINES_JS)  # a first step may find no row in the matrix yet; a later one does
    assert "recycled: from the matrix" in text_of(raced, "#tree-row")


def _open_pays(page) -> None:
    """The race's "Where it pays" fold opened (it stays open once opened), its figure drawn."""
    if not page.locator("#race-pays-plot .js-plotly-plot").first.is_visible():
        page.locator("#pays-fold").get_by_text(PAYS_FOLD).first.click()
    wait_for_plots(page, ("race-pays-plot", "race-committed-plot"))


def _line_at(line: dict, x: float) -> float:
    """A break-even line's value at x, as drawn (straight between its points on a log axis)."""
    import math

    pts = list(zip(line["x"], line["y"]))
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (math.log(x / x0) / math.log(x1 / x0) if x1 > x0 else 0)
    return pts[-1][1]


def test_where_it_pays_prices_the_paper_trees_passes_here_and_on_the_h200(raced):
    """The question a visitor brings, answered by one figure: the paper's tree commits more tokens a
    pass than a pass of its size costs on the H200 (above its line), and the legend gives its
    speed-up measured here beside the ones its passes would make on this race's costs and the H200's."""
    _open_pays(raced)
    drawn = raced.evaluate(PAYS_JS)
    lines = {d["name"].split(":")[0]: d for d in drawn if d["name"].endswith("break-even")}
    assert set(lines) == {"this race", "NVIDIA H200"}, [d["name"] for d in drawn]
    lanes = {d["name"].split("<br>")[0]: d for d in drawn if "<br>" in d["name"]}
    assert set(lanes) == {label(n) for n in race_order() if n != "vanilla"}, list(lanes)
    static = lanes[label("logitspec-static")]
    rows, per_pass = static["x"][0], static["y"][0]
    assert rows > 16 and per_pass > _line_at(lines["NVIDIA H200"], rows), (rows, per_pass)
    assert re.search(r"[\d.]+× measured; priced [\d.]+× on this race, [\d.]+× on NVIDIA H200", static["name"]), static
    assert "faster than vanilla there" in text_of(raced, "#race-pays-plot-caption")
    bars = raced.evaluate("() => document.querySelector('#race-committed-plot .js-plotly-plot').data.map((d) => d.name)")
    assert bars == [label(n) for n in race_order()], bars  # every lane's passes by the tokens each committed
    assert_fits(raced, ("race-pays-plot", "race-committed-plot"), "where it pays on a desktop")
    assert_no_text_over_text(raced, ("race-pays-plot", "race-committed-plot"), "where it pays on a desktop")
    shot(raced, "live-pays-desktop", "#pays-fold", 1200)


def test_the_race_of_every_lane_fits_a_desktop_and_a_phone(raced):
    """It leaves the page at a phone's width, Lookahead explored."""
    assert_fits(raced, PLOTS, "desktop after the race")
    assert_no_text_over_text(raced, ("race-passes-plot",), "desktop after the race")
    for box in lane_boxes():
        inside(raced, f"#{box.elem_id}", DESKTOP["width"])
    _open_pays(raced)
    _explore(raced, "lookahead", lambda page: True)
    resize(raced, PHONE)
    assert_fits(raced, PLOTS + ("cand-plot", "tree-plot", "race-pays-plot", "race-committed-plot"),
                "phone after the race")
    assert_no_text_over_text(raced, ("race-passes-plot", "cand-plot"), "phone after the race")
    for sel in [f"#{box.elem_id}" for box in lane_boxes()] + ["#race-passes-plot-caption", "#counters .verdict",
                                                                "#explore-lane", "#cand-plot"]:
        inside(raced, sel, PHONE["width"])
    assert raced.evaluate(TABLE_JS) == [], raced.evaluate(TABLE_JS)
    cut = [e["text"] for e in raced.evaluate(LEGEND_JS) if not e["inside"]]
    assert cut == [], f"legend entries cut or scrolled away: {cut}"
    assert raced.errors == [], raced.errors
    plot = raced.evaluate(PLOT_HEIGHT_JS)
    assert plot >= 250, f"the legend of every lane left the race's plot {plot:.0f} px on a phone"
    assert raced.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    raced.locator("#race-plot").scroll_into_view_if_needed()
    shot(raced, "live-phone", "#race-plot", 1800)


def _shown(page) -> dict:
    """What the race's end shows: the table's rows, the verdict and the explorer's lanes."""
    page.get_by_role("tab", name="Step explorer").click()
    return {"rows": counter_rows(page), "verdict": text_of(page, "#counters .verdict"),
            "lanes": page.evaluate(LANE_PICK_JS)}


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390", "1440"])
def test_a_downloaded_race_uploads_back_to_the_same_results(raced, browser, app_url, viewport, tmp_path):
    page = raced
    if page.viewport_size != viewport:
        resize(page, viewport)
    ran = _shown(page)
    assert list(ran["rows"]) == race_order() and ran["verdict"], ran
    assert len(ran["lanes"]) == len(race_order()), ran
    page.get_by_role("tab", name="Traces").click()
    with page.expect_download(timeout=30_000) as info:
        page.locator("#download").click()
    name = info.value.suggested_filename
    assert name == f"{RACE_FILE_PREFIX}{'_'.join(race_order()).replace('+', 'plus')}-{RACE_TOKENS}tok.json", name
    path = tmp_path / name
    info.value.save_as(path)
    assert list(read_race(path).lanes) == race_order()  # every lane's trace in the one file

    # A new visitor's page at this width (it opens on the recorded race), then the file through the upload box.
    fresh = fresh_page(browser, app_url, viewport)
    fresh.errors = []
    fresh.on("pageerror", lambda e: fresh.errors.append(str(e)))
    fresh.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    fresh.get_by_role("tab", name="Traces").click()
    fresh.locator("#upload input[type=file]").set_input_files(str(path))
    fresh.wait_for_function("(n) => (document.querySelector('#status')?.innerText || '').includes('Exploring ' + n)",
                            arg=name, timeout=120_000)
    back = _shown(fresh)
    assert back["rows"] == ran["rows"], (back["rows"], ran["rows"])
    # the same verdict, judged on the machine the file was recorded on rather than "this CPU"
    recorded = ran["verdict"].replace("on this CPU", RECORDED_WORDS)
    assert back["verdict"] == recorded.replace(" here)", " there)"), (back["verdict"], ran["verdict"])
    assert back["lanes"] == ran["lanes"], (back["lanes"], ran["lanes"])
    wait_for_plots(fresh, PLOTS)  # the uploaded lanes drawn, not the recorded race's
    for plot in PLOTS:
        assert fresh.evaluate(DRAWN_LINES_JS, plot) == 2 * len(race_order()), plot
    assert fresh.errors == [], fresh.errors
    fresh.get_by_role("tab", name="Retrieval debugger").click()
    fresh.wait_for_selector("#debug-table table tr", timeout=60_000)
    shot(fresh, f"race-file-{viewport['width']}", "#counters")
    fresh.context.close()
