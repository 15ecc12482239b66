"""The figures fit the page in a real browser (Debian's chromium), on a desktop and on a phone:
no container that hides overflow clips a plot, no words print over other words, Plotly's mode
bar covers none of them, the Explain tab's panels fit like the rest, each figure downloads as a
16:9 slide, the counters keep each lane's name on one line, and a phone runs a short race and
reads its verdict and text.

Screenshots go to artifacts/browser/ (fit-*.png).
"""
from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path

import pytest

from helpers.browser import DESKTOP, MODEL_WAIT_MS, fresh_page, set_max_new, settle, shot, text_of
from helpers.paths import ROOT
from logitspec.analysis.lanes import label
from visual.explain_words import TITLES, step_facts, title_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
SCREENS = {"desktop": DESKTOP, "phone": PHONE}
BIG_TREE_STEP = 14
BIG_TREE = f"?trace=summarization-242.json&step={BIG_TREE_STEP}"  # 205 nodes, a g1 chain 23 deep, 17 lanes with a verified token
STEP_PLOTS = ("tree-plot", "cand-plot", "race-plot")
OBS_PLOTS = ("obs-topk", "obs-retrieval", "obs-accepted", "obs-time", "obs-budget")
EXPLAIN_PLOTS = tuple(f"explain-{key}-plot" for key in TITLES)
FIGURE_TABS = {"Step explorer": STEP_PLOTS, "Observations": OBS_PLOTS, "Retrieval debugger": ("whatif-plot",),
               "Explain": EXPLAIN_PLOTS}  # every figure of the app but the trie, by the tab that shows it
PHONE_RACE_TOKENS = 12
READ_CHARS = 5  # a cut label keeps this many characters, "…" included (visual.tree.READ_CHARS)

FIT_JS = """(id) => {
  const block = document.getElementById(id);
  const gd = block && block.querySelector('.js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  const hides = (el) => { const s = getComputedStyle(el);
    return ['hidden', 'clip'].includes(s.overflowX) || ['hidden', 'clip'].includes(s.overflow); };
  const clipped = [];
  const check = (el) => { if (!(el instanceof SVGElement) && hides(el) && el.scrollWidth > el.clientWidth + 1)
    clipped.push(`${el.tagName}#${el.id}.${el.className} ${el.scrollWidth} > ${el.clientWidth}`); };
  [block, ...block.querySelectorAll('*')].forEach(check);
  for (let el = block.parentElement; el; el = el.parentElement) check(el);
  const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
  // A figure wider than its block (a phone's whole tree) lies in a box its reader scrolls sideways:
  // that box inside the block, and the figure inside what the box scrolls through.
  const sc = gd.parentElement, scrolls = ['auto', 'scroll'].includes(getComputedStyle(sc).overflowX);
  const box = block.getBoundingClientRect(), reach = sc.getBoundingClientRect();
  if (scrolls && (reach.left < box.left - 1 || reach.right > box.right + 1))
    clipped.push(`the sideways box [${reach.left}, ${reach.right}] leaves its block [${box.left}, ${box.right}]`);
  return {clipped, svg_left: svg.left + (scrolls ? sc.scrollLeft : 0), svg_right: svg.right + (scrolls ? sc.scrollLeft : 0),
          box_left: scrolls ? reach.left : box.left, box_right: scrolls ? reach.left + sc.scrollWidth : box.right,
          page: document.documentElement.scrollWidth, view: window.innerWidth};
}"""

TEXTS_JS = """(id) => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const out = [];
  const add = (kind, sel) => gd.querySelectorAll(sel).forEach((el) => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && el.textContent.trim())
      out.push({kind, text: el.textContent.slice(0, 50), x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}); });
  add('legend', '.legend .traces');
  add('title', '.g-gtitle text');
  add('axis title', '[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text');
  add('annotation', '.annotation-text-g');
  add('tick', '.xtick text, .ytick text, .x2tick text, .y2tick text');
  const cap = document.getElementById(id + '-caption');
  if (cap && cap.innerText.trim()) { const r = cap.getBoundingClientRect();
    out.push({kind: 'caption', text: cap.innerText.slice(0, 50), x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}); }
  const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
  out.push({kind: 'plot', text: '', x0: svg.left, y0: svg.top, x1: svg.right, y1: svg.bottom});
  return out;
}"""

LABELS_JS = """() => {
  const gd = document.querySelector('#tree-plot .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  const labels = [...gd.querySelectorAll('.scatterlayer .trace .textpoint text')]
    .filter((t) => t.textContent.length > 0)
    .map((t) => { const b = t.getBoundingClientRect(); return {text: t.textContent, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom}; });
  const px = (ax, v, o) => o + ax._offset + ax.l2p(v);
  const boxes = gd._fullLayout.shapes.map((s) => {
    const xs = [px(xa, s.x0, r.left), px(xa, s.x1, r.left)], ys = [px(ya, s.y0, r.top), px(ya, s.y1, r.top)];
    return {x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys)}; });
  return {labels, boxes, full: gd.layout.meta.fit.labels.full.length};
}"""


MODEBAR_JS = """(id) => {
  const block = document.getElementById(id);
  const bar = block && block.querySelector('.modebar');
  if (!bar) return null;
  const box = (el) => { const r = el.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const buttons = [...document.querySelectorAll(`#${id}-png, #${id}-svg`)].map(box);
  const shown = getComputedStyle(bar.querySelector('.modebar-group')).opacity;
  return {bar: box(bar), block: box(block), buttons, shown};
}"""

SCROLL_TO_JS = """(id) => window.scrollBy(0, document.getElementById(id).getBoundingClientRect().top - 120)"""

CAPTION_JS = """(id) => {
  const cap = document.getElementById(id + '-caption'), gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const r = cap.getBoundingClientRect();
  return {title: (cap.querySelector('.fig-title')?.innerText || '').trim(), left: r.left, right: r.right,
          overflow: cap.scrollWidth - cap.clientWidth, slide: !!(gd.layout.meta && gd.layout.meta.slide)};
}"""

# Lines a counters row's first cell takes: its text's boxes, grouped where they share a height.
LANE_LINES_JS = """() => [...document.querySelectorAll('#counters table.counters tr')].slice(1).map((tr) => {
  const range = document.createRange();
  range.selectNodeContents(tr.cells[0]);
  const rects = [...range.getClientRects()].filter((r) => r.width > 0).sort((a, b) => a.top - b.top);
  let lines = 0, bottom = -Infinity;
  for (const r of rects) { if (r.top >= bottom - 1) lines += 1; bottom = Math.max(bottom, r.bottom); }
  return {name: tr.cells[0].innerText.trim(), lines};
})"""

AXIS_JS = """() => { const ax = document.querySelector('#tree-plot .js-plotly-plot')._fullLayout.xaxis;
  const slider = !!(ax.rangeslider && ax.rangeslider.visible);
  return {shown: ax.range[1], slider, whole: slider ? ax.rangeslider.range[1] : ax.range[1]}; }"""


def overlap(a: dict, b: dict, tol: float = 1.0) -> bool:
    return min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > tol and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > tol


def wait_for_plots(page, ids) -> None:
    for i in ids:
        page.wait_for_selector(f"#{i} .js-plotly-plot .main-svg", timeout=60_000)
    settle(page)  # the browser's fitting runs after Plotly's first drawing


def assert_fits(page, ids, where: str) -> None:
    """Every plot inside its container; no container that hides overflow holds more than it shows."""
    for i in ids:
        got = page.evaluate(FIT_JS, i)
        assert got is not None, f"{where}: #{i} has no plot"
        assert not got["clipped"], f"{where}: #{i} clipped: {got['clipped']}"
        assert got["box_left"] - 1 <= got["svg_left"] and got["svg_right"] <= got["box_right"] + 1, (where, i, got)
        assert got["page"] <= got["view"], f"{where}: the page is {got['page']} px wide in a {got['view']} px window"


def assert_no_text_over_text(page, ids, where: str) -> None:
    """Caption, legend entries, axis titles, annotations and ticks never cover one another."""
    for i in ids:
        items = page.evaluate(TEXTS_JS, i)
        plot = next(x for x in items if x["kind"] == "plot")
        for a, b in itertools.combinations([x for x in items if x["kind"] != "plot"], 2):
            if a["kind"] == b["kind"] == "tick":
                continue  # a category axis's ticks are thinned by Plotly itself
            assert not overlap(a, b), f"{where}: #{i}: {a['kind']} {a['text']!r} over {b['kind']} {b['text']!r}"
        cap = [x for x in items if x["kind"] == "caption"]
        assert not cap or not overlap(cap[0], plot), f"{where}: #{i}: the caption runs into the plot"
        for x in items:  # nothing drawn past the figure's edge, where it would be cut
            if x["kind"] not in ("plot", "caption"):
                inside = plot["x0"] - 1 <= x["x0"] and x["x1"] <= plot["x1"] + 1 and plot["y0"] - 1 <= x["y0"]
                assert inside and x["y1"] <= plot["y1"] + 1, f"{where}: #{i}: {x['kind']} {x['text']!r} is cut: {x}"


def assert_tree_labels_fit(page, where: str) -> list[str]:
    """Token labels sit inside their boxes and never on one another; returns those shown."""
    got = page.evaluate(LABELS_JS)
    labels, boxes = got["labels"], got["boxes"]
    for a, b in itertools.combinations(labels, 2):
        assert not overlap(a, b, 0.5), f"{where}: labels overlap: {a} / {b}"
    for lab in labels:
        cx, cy = (lab["x0"] + lab["x1"]) / 2, (lab["y0"] + lab["y1"]) / 2
        home = [b for b in boxes if b["x0"] <= cx <= b["x1"] and b["y0"] <= cy <= b["y1"]]
        assert len(home) == 1 and lab["x0"] >= home[0]["x0"] - 0.5 and lab["x1"] <= home[0]["x1"] + 0.5, (where, lab)
    return [lab["text"] for lab in labels]


def assert_mode_bar_clear(page, ids, where: str) -> None:
    """Plotly's mode bar, shown by a pointer over the plot, stays inside its figure's block and
    covers none of the plot, its caption and words, nor the download buttons."""
    from playwright.sync_api import TimeoutError as PageTimeout

    for i in ids:
        page.evaluate(SCROLL_TO_JS, i)  # the plot's top on screen, however tall the plot
        svg = page.locator(f"#{i} .js-plotly-plot .main-svg").first.bounding_box()
        # Over the plot where the window shows it (a phone's whole tree runs past the screen's edge).
        x = min(svg["x"] + svg["width"] / 2, (svg["x"] + page.viewport_size["width"]) / 2)
        page.mouse.move(x, svg["y"] + min(svg["height"] / 2, 150))
        try:  # Plotly fades the mode bar in over 0.3 s
            page.wait_for_function(f"(i) => ({MODEBAR_JS})(i)?.shown === '1'", arg=i, timeout=5_000)
        except PageTimeout:
            pass  # the assertion below says what was shown
        got = page.evaluate(MODEBAR_JS, i)
        assert got is not None and got["shown"] == "1", f"{where}: #{i}: no mode bar shown: {got}"
        bar, block = got["bar"], got["block"]
        inside = block["x0"] - 1 <= bar["x0"] and bar["x1"] <= block["x1"] + 1 and block["y0"] - 1 <= bar["y0"]
        assert inside, f"{where}: #{i}: the mode bar leaves its figure's block: {got}"
        for item in page.evaluate(TEXTS_JS, i) + [dict(b, kind="download button", text="") for b in got["buttons"]]:
            assert not overlap(bar, item), f"{where}: #{i}: the mode bar covers {item['kind']} {item['text']!r}"


def download_slide(page, elem: str, fmt: str) -> tuple[str, tuple[float, float], bytes]:
    """Press a figure's 16:9 download; the file's name, its size in pixels and its bytes."""
    with page.expect_download(timeout=60_000) as info:
        page.locator(f"#{elem}-{fmt}").click()
    download = info.value
    data = Path(download.path()).read_bytes()
    if fmt == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        size = struct.unpack(">II", data[16:24])
    else:
        head = data[:2000].decode("utf-8", "replace")
        size = tuple(float(re.search(rf'{k}="([\d.]+)"', head).group(1)) for k in ("width", "height"))
    return download.suggested_filename, size, data


def _big_tree_trace():
    from logitspec.analysis.race import load_race

    lanes, _ = load_race(ROOT / "traces" / "summarization-242.json")
    return lanes.get("logitspec") or next(iter(lanes.values()))


@pytest.fixture(scope="module", params=list(SCREENS))
def screen(request, browser, app_url):
    """The big tree's step, opened on a desktop's screen and on a phone's: (which, page)."""
    page = fresh_page(browser, app_url + BIG_TREE, SCREENS[request.param])
    wait_for_plots(page, STEP_PLOTS)
    yield request.param, page
    page.context.close()


def test_every_figure_fits_its_container_without_text_over_text(screen):
    which, page = screen
    assert "Step 14 (steps 0–" in text_of(page, "#step-label")
    assert_fits(page, STEP_PLOTS, which)
    assert_no_text_over_text(page, STEP_PLOTS, which)
    labels = assert_tree_labels_fit(page, which)
    assert len(labels) >= (20 if which == "desktop" else 10)
    assert all(len(t) >= READ_CHARS for t in labels if t.endswith("…")), labels  # cut labels still read
    # The chain's last column is on screen, or under the slider that scrolls to it ...
    axis = page.evaluate(AXIS_JS)
    assert axis["whole"] >= 23 and (axis["slider"] or axis["shown"] >= 23), axis
    # ... and scrolled there, its labels still sit inside their boxes.
    page.evaluate("() => Plotly.relayout(document.querySelector('#tree-plot .js-plotly-plot'), "
                  "{'xaxis.range': [14.5, 24.5]})")
    settle(page)
    assert_tree_labels_fit(page, which + " scrolled")
    page.evaluate(f"() => Plotly.relayout(document.querySelector('#tree-plot .js-plotly-plot'), "
                  f"{{'xaxis.range': [-0.6, {axis['shown']}]}})")
    if which == "phone":  # the explorer was some 21,000 pixels tall on a phone
        assert page.evaluate("() => document.documentElement.scrollHeight") <= 12 * PHONE["height"]
    page.locator("#tree-row").scroll_into_view_if_needed()
    shot(page, f"fit-{which}-explorer", "#tree-row", 1100 if which == "desktop" else 1600)
    page.get_by_role("tab", name="Observations").click()
    wait_for_plots(page, OBS_PLOTS)
    assert_fits(page, OBS_PLOTS, which)
    assert_no_text_over_text(page, OBS_PLOTS, which)
    shot(page, f"fit-{which}-observations", "#obs-topk-caption", 1300 if which == "desktop" else 2600)
    page.get_by_role("tab", name="Step explorer").click()


def test_the_explain_panels_fit_like_every_other_figure(screen):
    which, page = screen
    page.get_by_role("tab", name="Explain").click()
    page.get_by_role("tab", name="In detail").click()  # the six panels; the lesson comes first
    page.wait_for_function("() => /Step \\d+ of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)
    wait_for_plots(page, EXPLAIN_PLOTS)
    assert_fits(page, EXPLAIN_PLOTS, which)
    assert_no_text_over_text(page, EXPLAIN_PLOTS, which)
    shown = int(re.search(r"Step (\d+) of", text_of(page, "#explain-head")).group(1))
    facts = step_facts(_big_tree_trace(), shown)
    for key in TITLES:  # the title in a caption that wraps, the slide inside
        cap = page.evaluate(CAPTION_JS, f"explain-{key}-plot")
        title = title_of(facts, key)  # the step's own: g2's says when no guess was right
        assert cap["title"] == title.replace("_{", "").replace("}", ""), (which, key, cap)
        assert cap["overflow"] <= 0 and cap["left"] >= 0 and cap["right"] <= SCREENS[which]["width"], (which, key, cap)
        assert cap["slide"], (which, key)
        assert len(page.locator(f"#explain-{key}-text p").all_inner_texts()) == 2, (which, key)
    if which == "desktop":
        name, size, _ = download_slide(page, "explain-accept-plot", "png")
        assert size == (1920, 1080) and name.startswith("logitspec-explain-accept-plot-step"), (name, size)
    shot(page, f"fit-{which}-explain", "#explain-head", 1300 if which == "desktop" else 2600)
    page.get_by_role("tab", name="Step explorer").click()


def test_the_mode_bar_covers_nothing_in_any_figure(screen):
    which, page = screen
    for tab, ids in FIGURE_TABS.items():
        page.get_by_role("tab", name=tab).click()
        if tab == "Explain":
            page.get_by_role("tab", name="In detail").click()  # the six panels; the lesson comes first
        wait_for_plots(page, ids)
        assert_mode_bar_clear(page, ids, f"{which}, {tab}")
    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#tree-view").get_by_label("trie").check()
    shown = "(v) => document.querySelector('#tree-plot .js-plotly-plot')?.layout?.meta?.shared !== undefined === v"
    page.wait_for_function(shown, arg=True, timeout=30_000)
    settle(page)
    assert_mode_bar_clear(page, ("tree-plot",), f"{which}, the trie")
    page.locator("#tree-view").get_by_label("lanes").check()
    page.wait_for_function(shown, arg=False, timeout=30_000)
    wait_for_plots(page, STEP_PLOTS)


def counters_page(browser, app_url, viewport: dict):
    """The app's first page (the recorded race and its counters), its counters drawn."""
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#counters table.counters", timeout=60_000)
    return page


@pytest.fixture(scope="module")
def phone_counters(browser, app_url):
    """The first page on a phone, opened once for both phone checks of the counters."""
    page = counters_page(browser, app_url, PHONE)
    yield page
    page.context.close()


@pytest.mark.parametrize("viewport", list(SCREENS))
def test_each_lane_of_the_counters_keeps_its_name_on_one_line(browser, app_url, request, viewport):
    # The phone's page is the module's (the every-lane check below puts its own table in it after).
    page = request.getfixturevalue("phone_counters") if viewport == "phone" else \
        counters_page(browser, app_url, SCREENS[viewport])
    rows = page.evaluate(LANE_LINES_JS)
    assert {f"■ {label('vanilla')}", f"■ {label('logitspec')}"} <= {r["name"] for r in rows}, rows
    assert all(r["lines"] == 1 for r in rows), f"{viewport}: a lane's name wraps: {rows}"
    wrap = page.evaluate("() => { const w = document.querySelector('#counters .counters-wrap'); return "
                         "{scroll: w.scrollWidth, client: w.clientWidth, right: w.getBoundingClientRect().right}; }")
    assert wrap["scroll"] <= wrap["client"] + 1 and wrap["right"] <= SCREENS[viewport]["width"], (viewport, wrap)
    if viewport != "phone":
        page.context.close()


def test_a_phones_counters_keep_every_lanes_speed_up_on_screen(phone_counters):
    """Every lane ticked: a long name wraps between its words, so the table fits the screen."""
    from logitspec.analysis.race import load_race
    from ui.form import RACED_ALWAYS, lane_boxes
    from visual.verdict import counters_html

    recorded = load_race(ROOT / "traces" / "races" / "summarization-242.json")[0]
    lanes = [*RACED_ALWAYS, *(b.lane for b in lane_boxes())]
    five = counters_html({n: recorded.get(n, recorded["logitspec"]) for n in lanes}, running=False)
    page = phone_counters
    page.evaluate("(html) => { document.querySelector('#counters .counters-wrap').parentElement.innerHTML = html; }",
                  five)
    rows = page.evaluate(LANE_LINES_JS)
    assert len(rows) == len(lanes) and all(1 <= r["lines"] <= 2 for r in rows), rows
    fit = page.evaluate("""() => { const w = document.querySelector('#counters .counters-wrap');
        const cells = [...w.querySelectorAll('tr[data-lane] td:last-child')].map(c => c.getBoundingClientRect().right);
        return {scroll: w.scrollWidth, client: w.clientWidth, right: Math.max(...cells)}; }""")
    assert fit["scroll"] <= fit["client"] + 1 and fit["right"] <= PHONE["width"], fit
    shot(page, "counters-five-lanes-390", "#counters", height=500)


@pytest.mark.parametrize("screen", ["desktop"], indirect=True)
def test_a_click_on_a_tree_box_shows_its_whole_token(screen):
    _, desktop = screen
    desktop.locator("#tree-row").scroll_into_view_if_needed()
    point = desktop.evaluate("""() => {
        const gd = document.querySelector('#tree-plot .js-plotly-plot');
        const t = gd.data.find((d) => d.name === 'verified, rejected nodes');
        const i = t.x.findIndex((x) => x === 2);  // a box on screen, its label cut
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        return {x: r.left + xa._offset + xa.l2p(t.x[i]), y: r.top + ya._offset + ya.l2p(t.y[i]),
                hover: t.hovertext[i]}; }""")
    desktop.mouse.click(point["x"], point["y"])
    desktop.wait_for_function("() => /token id/.test(document.getElementById('tree-node')?.innerText || '')",
                              timeout=10_000)
    token = re.sub(r"<[^>]+>", "", point["hover"].split("<br>")[0]).split("   token id")[0]
    assert token and token in text_of(desktop, "#tree-node")


@pytest.mark.parametrize("screen", ["desktop"], indirect=True)
@pytest.mark.parametrize("elem, fmt", [("tree-plot", "png"), ("tree-plot", "svg"), ("cand-plot", "png"),
                                       ("race-plot", "png")])
def test_a_figure_downloads_as_a_16_9_slide(screen, elem, fmt):
    name, size, data = download_slide(screen[1], elem, fmt)
    assert name.endswith("." + fmt) and elem in name
    if fmt == "png":
        assert len(data) > 20_000, "an empty slide"
    else:
        assert "Draft tree, step 14" in data.decode("utf-8", "replace")  # the slide carries its own title
    assert size == (1920, 1080)


def test_a_phone_runs_a_short_race_and_reads_the_verdict(browser, app_url):
    from playwright.sync_api import expect

    phone = fresh_page(browser, app_url + BIG_TREE, PHONE)  # a page of its own: the race changes what it shows
    wait_for_plots(phone, STEP_PLOTS)
    tabs = phone.get_by_role("tab")
    assert tabs.count() == 6 and all(tabs.nth(i).is_visible() for i in range(6)), "a tab is hidden behind a menu"
    phone.evaluate("window.scrollTo(0, 0)")
    phone.get_by_role("button", name="Code").first.click()  # a deep link's page starts with no prompt
    expect(phone.locator("#prompt textarea")).to_have_value(re.compile("Fibonacci"), timeout=10_000)
    set_max_new(phone, PHONE_RACE_TOKENS)
    phone.locator("#run").click()
    phone.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                            timeout=MODEL_WAIT_MS + 300_000)
    verdict = phone.locator("#counters .verdict")
    verdict.scroll_into_view_if_needed()
    assert "identical to vanilla" in verdict.inner_text()
    for sel in ("#counters .verdict", "#counters table", "#text-view", "#status"):
        box = phone.locator(sel).first.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, (sel, box)
    status = phone.locator("#status").bounding_box()  # the status across the screen, not in a third of it
    assert status["width"] >= 0.8 * PHONE["width"], status
    assert_fits(phone, ("race-plot",), "phone after its race")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert len(text_of(phone, "#text-view")) > 10
    shot(phone, "fit-phone-race", "#counters", 1400)
    phone.context.close()
