"""Run pressed again while this page's own race runs: the race is stopped after its step and the new
one starts and runs to its end. Never both: the first race ended and the second dropped, with the
page saying another visitor is racing.

Screenshot: artifacts/browser/second-run.png.
"""
from __future__ import annotations

import pytest

from helpers.browser import MODEL_WAIT_MS, counter_rows, fresh_page, set_max_new, shot, text_of

FIRST = ("Write the numbers from 1 to 400, one on each line.", 400)  # far longer than the wait below
SECOND = ("Write the numbers from 500 to 900, one on each line.", 20)
RACING_JS = """(n) => { const c = document.querySelector('#counters');
    if (!c || !c.innerText.includes('racing')) return false;
    const v = c.querySelector("tr[data-lane='vanilla']");
    return !!v && +v.cells[1].innerText >= n; }"""


@pytest.mark.slow
@pytest.mark.browser
def test_a_second_run_stops_the_first_and_runs_the_new_race(browser, app_url):
    page = fresh_page(browser, app_url)
    try:
        page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
        page.locator("#prompt textarea").fill(FIRST[0])
        set_max_new(page, FIRST[1])
        page.locator("#run").click()
        page.wait_for_function(RACING_JS, arg=3, timeout=MODEL_WAIT_MS)
        page.locator("#prompt textarea").fill(SECOND[0])
        set_max_new(page, SECOND[1])
        page.locator("#run").click()
        page.wait_for_function("() => /Stopping your race|Racing/.test(document.querySelector('#status')?.innerText || '')",
                               timeout=30_000)
        said = text_of(page, "#status")
        assert "another visitor" not in said, said
        page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                               timeout=300_000)
        shot(page, "second-run")
        rows = counter_rows(page)
        # The race on screen is the second: its budget, its prompt, run to its end.
        assert {n: int(r["tokens"]) for n, r in rows.items()} == {n: SECOND[1] for n in rows}, rows
        assert "Stopped" not in text_of(page, "#counters .verdict")
    finally:
        page.context.close()
