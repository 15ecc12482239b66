"""Every lane fits, in a real browser at 1440, 1920 and 390 px: a race of all nine race lanes, opened
from its race file, keeps the results table's every column and the race figure's every legend entry
whole (no sideways scroll in the table, no scrolled legend); and a phone gets Run on its first screen,
the table's every column, the whole draft tree in a box it swipes sideways, the explorer's Previous,
Next and Play on one row, the model's name clear of the dropdown's arrow, and the lesson in words
sized for a phone with its token row unprinted-over. At each width a race of the gallery opens from
the Traces tab on the same page, and the gallery's sentences read whole.

The race file was recorded on the bundled model on a 2-core machine (20 tokens, 4 next-next candidates
a step: past the speed-up's 16 tokens, and small enough for the GPU kit's calls to carry the tree):
    python scripts/record_race.py tests/fixtures/races/coding-122-every-lane.json --question-id 122 \
        --max-new-tokens 20 --k 4 --pld --static --recycling --lookahead --rest --racer --suffix
Screenshots go to artifacts/browser/ (every-lane-*.png).
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from helpers.browser import DESKTOP, counter_rows, fresh_page, settle, shot
from helpers.paths import FIXTURES
from logitspec.analysis.lanes import label, race_order
from logitspec.analysis.race import read_race
from ui.files import GALLERY_DIR

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE = FIXTURES / "races" / "coding-122-every-lane.json"
GALLERY = sorted(GALLERY_DIR.glob("*.json.gz"))  # recorded races that show where each method wins
PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1920, "height": 1080}
DEEP_STEP = "?trace=coding-122&step=5&tab=explorer"  # a g1 chain eight deep: past a phone's width
LESSON = "?trace=coding-122&step=5&tab=explain"

# The table's every header and cell inside the table's box and the window, and no box around it that scrolls.
TABLE_JS = """() => {
  const wrap = document.querySelector('#counters .counters-wrap'), t = wrap.querySelector('table');
  const box = t.getBoundingClientRect(), out = [];
  for (const c of t.querySelectorAll('th, td')) {
    const r = c.getBoundingClientRect(), shown = getComputedStyle(c).display !== 'none' && r.width > 0;
    if (!shown && c.tagName === 'TH' && c.cellIndex > 0) out.push('hidden: ' + c.innerText.trim());
    if (shown && (r.left < box.left - 1 || r.right > box.right + 1 || r.right > window.innerWidth))
      out.push(`cut: ${c.innerText.trim()} [${Math.round(r.left)}, ${Math.round(r.right)}] in [${Math.round(box.left)}, ${Math.round(box.right)}]`);
    if (shown && c.scrollWidth > c.clientWidth + 1) out.push('overflows its cell: ' + c.innerText.trim());
  }
  if (wrap.scrollWidth > wrap.clientWidth + 1) out.push(`the table scrolls sideways: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
  return out;
}"""
# Each legend entry of the race figure: its text and whether it lies inside the legend's own box
# (a scrolled legend clips the entries past its height) and inside the figure.
LEGEND_JS = """() => {
  const gd = document.querySelector('#race-plot .js-plotly-plot'), leg = gd.querySelector('.legend');
  const bg = leg.querySelector('rect.bg').getBoundingClientRect(), fig = gd.getBoundingClientRect();
  return [...leg.querySelectorAll('.traces')].map((e) => { const r = e.querySelector('.legendtext').getBoundingClientRect();
    return {text: e.textContent, inside: r.top >= bg.top - 1 && r.bottom <= bg.bottom + 1 && r.left >= fig.left - 1 && r.right <= fig.right + 1,
            x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; });
}"""


def _open_race(browser, app_url, viewport):
    page = fresh_page(browser, app_url, viewport)
    page.errors = []  # a legend taller than the first drawing made Plotly fail and keep the recording's lines
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("tab", name="Traces").click()
    page.locator("#upload input[type=file]").set_input_files(str(RACE))
    page.wait_for_function("(n) => (document.querySelector('#status')?.innerText || '').includes('Exploring ' + n)",
                           arg=RACE.name, timeout=120_000)
    page.wait_for_function("(n) => document.querySelectorAll('#race-plot .legend .traces').length === n",
                           arg=len(race_order()), timeout=60_000)
    settle(page, 600)
    return page


@pytest.mark.parametrize("viewport", [DESKTOP, WIDE, PHONE], ids=["1440", "1920", "390"])
def test_every_lane_keeps_each_column_and_legend_entry_whole(browser, app_url, viewport):
    page = _open_race(browser, app_url, viewport)
    try:
        rows = counter_rows(page)
        assert list(rows) == race_order(), rows
        assert page.errors == [], page.errors
        drawn = page.evaluate("() => document.querySelectorAll('#race-plot .scatterlayer .trace').length")
        assert drawn == 2 * len(race_order()), f"{drawn} traces drawn: a line and an end dot a lane"
        assert page.evaluate(TABLE_JS) == [], f"{viewport['width']} px: {page.evaluate(TABLE_JS)}"
        entries = page.evaluate(LEGEND_JS)
        assert [e["text"].split(":")[0] for e in entries] == [label(n) for n in race_order()], entries
        cut = [e["text"] for e in entries if not e["inside"]]
        assert cut == [], f"{viewport['width']} px: legend entries cut or scrolled away: {cut}"
        for i, a in enumerate(entries):
            for b in entries[i + 1:]:
                apart = a["x1"] <= b["x0"] + 1 or b["x1"] <= a["x0"] + 1 or a["y1"] <= b["y0"] + 1 or b["y1"] <= a["y0"] + 1
                assert apart, f"{viewport['width']} px: {a['text']!r} over {b['text']!r}"
        # Every lane but vanilla says its speed-up whole, on its own line.
        speeds = [e for e in entries[1:] if "× vanilla's speed" in e["text"]]
        assert len(speeds) == len(entries) - 1, [e["text"] for e in entries]
        plot = page.evaluate("() => document.querySelector('#race-plot .nsewdrag').getBoundingClientRect().height")
        assert plot >= 250, f"{viewport['width']} px: the legend left the plot {plot:.0f} px"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
        page.locator("#counters").scroll_into_view_if_needed()
        shot(page, f"every-lane-{viewport['width']}", "#counters", 1800)
        _a_gallery_race_opens(page, GALLERY[[DESKTOP, WIDE, PHONE].index(viewport) % len(GALLERY)], viewport)
    finally:
        page.context.close()


def _a_gallery_race_opens(page, path, viewport) -> None:
    """On the same page: a race of the gallery, picked on the Traces tab, fills the results with its
    lanes, and the gallery's sentences read whole at this width."""
    page.get_by_role("tab", name="Traces").click()
    page.locator("#gallery-pick").get_by_text(path.name.split(".")[0] + ":", exact=False).click()
    page.wait_for_function("(n) => (document.querySelector('#status')?.innerText || '').includes('Exploring ' + n)",
                           arg=path.name, timeout=120_000)
    assert list(counter_rows(page)) == list(read_race(path).lanes)
    words = page.locator("#gallery-words li").all_inner_texts()
    assert len(words) == len(GALLERY) and all(" made " in w or "No method" in w for w in words), words
    box = page.locator("#gallery-words").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 1, box
    assert page.errors == [], page.errors


@contextmanager
def _phone(browser, app_url, query: str, drawn: str):
    """A touch phone's page of the app at `query`, once `drawn` is on it and its figures settled; closed after."""
    page = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True).new_page()
    try:
        page.goto(app_url + query, wait_until="domcontentloaded")
        page.wait_for_selector(drawn, timeout=120_000)
        settle(page, 800)
        yield page
    finally:
        page.context.close()


def test_a_phones_first_screen_has_run_and_the_verdict(browser, app_url):
    with _phone(browser, app_url, "", "#counters .verdict") as page:
        run = page.locator("#run").bounding_box()
        assert run["y"] >= 0 and run["y"] + run["height"] <= PHONE["height"], f"Run is off the first screen: {run}"
        centre = [run["x"] + run["width"] / 2, run["y"] + run["height"] / 2]
        assert page.evaluate("([x, y]) => !!document.elementFromPoint(x, y)?.closest('#run')", centre), \
            "something covers Run on the first screen"
        verdict = page.locator("#counters .verdict").bounding_box()
        assert verdict["y"] + verdict["height"] <= PHONE["height"], f"the verdict runs off the first screen: {verdict}"
        assert page.evaluate(TABLE_JS) == [], page.evaluate(TABLE_JS)
        sizes = page.evaluate("() => [getComputedStyle(document.querySelector('#counters td')).fontSize,"
                              " getComputedStyle(document.querySelector('#counters .verdict')).fontSize].map(parseFloat)")
        assert sizes[0] >= 13 and sizes[1] <= 1.3 * sizes[0], f"table and verdict type (px): {sizes}"
        shot(page, "every-lane-phone-first-screen")


def test_a_phone_swipes_the_whole_tree_and_has_its_controls_on_one_row(browser, app_url):
    with _phone(browser, app_url, DEEP_STEP, "#tree-plot .js-plotly-plot") as page:
        got = page.evaluate("""() => { const gd = document.querySelector('#tree-plot .js-plotly-plot'), box = gd.parentElement;
          const xa = gd._fullLayout.xaxis;
          return {slider: !!(xa.rangeslider && xa.rangeslider.visible), range: xa.range, scroll: box.scrollWidth, client: box.clientWidth,
                  overflow: getComputedStyle(box).overflowX, page: document.documentElement.scrollWidth}; }""")
        assert not got["slider"], f"a phone's tree is windowed by a slider: {got}"
        assert got["overflow"] == "auto" and got["scroll"] > got["client"], f"the tree does not scroll sideways: {got}"
        assert got["page"] <= PHONE["width"], got
        deepest = page.evaluate("() => Math.max(...document.querySelector('#tree-plot .js-plotly-plot').layout.meta.fit.window.range)")
        assert got["range"][1] >= deepest - 0.01, f"not every depth column is drawn: {got['range']} < {deepest}"
        rows = {s: page.locator(s).bounding_box() for s in ("#prev", "#next", "#play")}
        assert len({round(b["y"]) for b in rows.values()}) == 1, f"Previous, Next and Play are not on one row: {rows}"
        assert all(b["x"] + b["width"] <= PHONE["width"] for b in rows.values()), rows
        arrow = page.evaluate("""() => { const i = document.querySelector('#model input'), s = getComputedStyle(i);
          const icon = document.querySelector('#model svg.dropdown-arrow').getBoundingClientRect();
          return {text_right: i.getBoundingClientRect().right - parseFloat(s.paddingRight), arrow_left: icon.left}; }""")
        assert arrow["text_right"] <= arrow["arrow_left"] + 1, f"the model's name runs under the dropdown's arrow: {arrow}"
        page.locator("#tree-plot").scroll_into_view_if_needed()
        shot(page, "every-lane-phone-tree", "#tree-plot")


def test_a_phones_lesson_reads_in_phone_type_with_its_token_row_whole(browser, app_url):
    with _phone(browser, app_url, LESSON, "#lesson-guess-plot .js-plotly-plot") as page:
        size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#lesson-guess .lesson-words p')).fontSize)")
        assert 15 <= size <= 18, f"the lesson's words are {size} px on a phone"
        row = page.evaluate("""() => { const gd = document.querySelector('#lesson-guess-plot .js-plotly-plot');
          const boxes = [...gd.querySelectorAll('.layer-below .shapelayer path, .shapelayer path')].map((p) => p.getBoundingClientRect());
          const labels = [...gd.querySelectorAll('.textpoint text')].filter((t) => t.textContent).map((t) => {
            const r = t.getBoundingClientRect(); return {text: t.textContent, x0: r.left, x1: r.right}; });
          return {boxes: boxes.map((b) => [b.left, b.right]), labels, page: document.documentElement.scrollWidth}; }""")
        assert row["labels"] and row["page"] <= PHONE["width"], row
        for lab in row["labels"]:
            home = [b for b in row["boxes"] if b[0] - 0.5 <= lab["x0"] and lab["x1"] <= b[1] + 0.5]
            assert home, f"the lesson's token {lab['text']!r} runs out of its box: {lab}, boxes {row['boxes']}"
        shot(page, "every-lane-phone-lesson", "#lesson-guess")

