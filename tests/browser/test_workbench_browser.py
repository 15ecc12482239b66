"""The Workbench tab in a real browser at 1440 and 390 px: the shipped set file uploaded through the
box shows its per-prompt table (a row per run, counted from the file's traces), the outcome
figure and the CSV download; selecting a row opens that run in the step explorer at its worst step.
Screenshots: artifacts/browser/workbench-<width>.png."""
from __future__ import annotations

import pytest

from helpers.browser import DESKTOP, fresh_page, shot
from helpers.paths import ROOT
from logitspec.analysis.sets import read_set

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
SET = ROOT / "traces" / "sets" / "coding-64.jsonl.gz"
# Gradio's Dataframe draws its body as rows of grid cells (a virtual list), not table rows.
ROW = "#wb-table div[role=row]"
ROWS_JS = """(sel) => Array.from(document.querySelectorAll(sel))
    .map((row) => Array.from(row.querySelectorAll('[role=gridcell]')).map((cell) => cell.innerText.trim()))"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_an_uploaded_set_shows_its_table_and_a_row_opens_its_run(browser, app_url, viewport):
    s = read_set(SET)
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("tab", name="Workbench").click()
    page.locator("#wb-upload input[type=file]").set_input_files(str(SET))
    page.wait_for_function("(n) => (document.querySelector('#wb-note')?.innerText || '').includes(n)",
                           arg=f"{s.prompts} prompts", timeout=120_000)
    page.locator("#wb-table").scroll_into_view_if_needed()
    page.wait_for_function(f"(sel) => document.querySelectorAll(sel).length === {len(s.entries)}", arg=ROW,
                           timeout=60_000)
    rows = page.evaluate(ROWS_JS, ROW)
    shown = {(r[0], r[3]): r for r in rows}
    for e in s.entries:  # every run's row, with its steps as its trace counts them
        row = shown[(str(e.prompt + 1), e.method)]
        assert row[4] == str(len([st for st in s.trace(e).steps if st.forward])), row
    page.wait_for_selector("#wb-plot .js-plotly-plot", state="attached", timeout=60_000)
    assert page.locator("#wb-csv").is_visible()
    shot(page, f"workbench-{viewport['width']}", "#wb-intro", height=1400)

    target = next(e for e in s.entries if e.method == "pld" and e.summary.worst_step > 0)
    index = next(i for i, r in enumerate(rows) if (r[0], r[3]) == (str(target.prompt + 1), "pld"))
    page.locator(ROW).nth(index).locator("[role=gridcell]").nth(2).click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Exploring prompt')",
                           timeout=60_000)
    # The label is redrawn with the step (a "processing" overlay may cover it a moment first).
    page.wait_for_function("(n) => (document.querySelector('#step-label')?.innerText || '').includes('Step ' + n + ' (steps')",
                           arg=target.summary.worst_step, timeout=30_000)
    assert page.get_by_role("tab", name="Step explorer").get_attribute("aria-selected") == "true"
    page.get_by_role("tab", name="Workbench").click()  # the prompt's two methods, side by side
    page.wait_for_function("() => (document.querySelector('#wb-compare-note')?.innerText || '').includes('side by side')",
                           timeout=30_000)
    assert "They part at output token" in page.locator("#wb-compare-note").inner_text()
    page.wait_for_selector("#wb-compare .js-plotly-plot", state="attached", timeout=30_000)
    shot(page, f"workbench-compare-{viewport['width']}", "#wb-compare-note", height=500)
    page.context.close()
