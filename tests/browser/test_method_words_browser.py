"""Labels and words from what ran, in a real browser at 1440 and 390 px: a link to a shipped trace
that recorded the paper's static tree heads its step, and names it in the table and the race
figure's legend, for the static tree; in a race recorded on the bundled model (a Chinese code
prompt), Lookahead's tree boxes show a split character's bytes whole."""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, fresh_page, settle
from helpers.paths import FIXTURES
from test_fit_browser import PHONE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RACE = FIXTURES / "races" / "code-zh-baselines.json"
STATIC = "LogitSpec, the paper's static tree"
LABELS = {"pld": "prompt lookup", "rest": "REST", "lookahead": "Lookahead decoding"}
TEXT_JS = "(s) => (document.querySelector(s)?.innerText || '').trim()"
LEGEND_JS = """() => { const gd = document.querySelector('#race-plot .js-plotly-plot');
  return gd ? gd.data.filter((d) => d.name).map((d) => d.name).join(' | ') : ''; }"""
BOX_LABELS_JS = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
  const t = gd && gd.data.find((d) => d.name === 'token labels');
  return t ? (Array.isArray(t.text) ? t.text : []).map(String) : []; }"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_link_to_a_static_tree_trace_names_the_static_tree(browser, app_url, viewport):
    page = fresh_page(browser, app_url.rstrip("/") + "/?trace=coding-122&step=5&tab=explorer", viewport)
    page.wait_for_function(f"() => ({TEXT_JS})('#step-label').startsWith('Step 5')", arg=None, timeout=90_000)
    heading = page.evaluate(TEXT_JS, "#step-label")
    assert STATIC in heading and "cost tree" not in heading, heading
    table = page.evaluate(TEXT_JS, "#counters")
    assert STATIC in table and "cost tree" not in table, table
    page.wait_for_selector("#race-plot .js-plotly-plot", state="attached", timeout=60_000)
    legend = page.evaluate(LEGEND_JS)
    assert "static tree" in legend and "cost tree" not in legend, legend
    page.context.close()


def _open_race(page) -> None:
    page.get_by_role("tab", name="Traces").click()
    page.locator("#upload input[type=file]").set_input_files(str(RACE))
    page.wait_for_function(f"() => ({TEXT_JS})('#status').includes('{RACE.name}')", arg=None, timeout=60_000)


def _explore(page, lane: str) -> None:
    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#explore-lane").get_by_label(LABELS[lane], exact=True).check()
    page.wait_for_function(f"() => ({TEXT_JS})('#step-label').endsWith('{LABELS[lane]}')", arg=None,
                           timeout=60_000)
    settle(page)


def test_lookaheads_tree_boxes_show_their_split_bytes_whole(browser, app_url):
    page = fresh_page(browser, app_url, DESKTOP)
    _open_race(page)
    _explore(page, "lookahead")
    seen = []
    for _ in range(8):  # the first steps: their window holds the prompt's split Chinese bytes
        seen += [t for t in page.evaluate(BOX_LABELS_JS) if "‹" in t]
        page.locator("#next").click()
        settle(page)
    assert seen, "no box showed a split character's bytes"
    cut = [t for t in seen if re.search(r"‹[^›]*…", t)]
    assert not cut, cut
    page.context.close()
