"""In a real browser: the words a clicked tree box puts beside the tree go at the next step."""
from __future__ import annotations

import pytest

from helpers.browser import DESKTOP, fresh_page, text_of
from ui.figures import NODE_HINT

LINK = "?trace=summarization-242.json&step=14"

CLICK_A_BOX_JS = """() => {
    const gd = document.querySelector('#tree-plot .js-plotly-plot');
    const t = gd.data.find((d) => d.name === 'verified, rejected nodes');
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
    return {x: r.left + xa._offset + xa.l2p(t.x[0]), y: r.top + ya._offset + ya.l2p(t.y[0])}; }"""


def _click_a_box(page) -> None:
    page.locator("#tree-row").scroll_into_view_if_needed()
    point = page.evaluate(CLICK_A_BOX_JS)
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("() => /token id/.test(document.getElementById('tree-node')?.innerText || '')",
                           timeout=10_000)


@pytest.mark.slow
@pytest.mark.browser
def test_a_clicked_box_is_forgotten_at_the_next_step(browser, app_url):
    page = fresh_page(browser, app_url + LINK, DESKTOP)
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    _click_a_box(page)
    page.locator("#next").click()
    page.wait_for_function("() => /Step 15 /.test(document.querySelector('#step-label')?.innerText || '')",
                           timeout=30_000)
    page.wait_for_function("(hint) => (document.getElementById('tree-node')?.innerText || '').trim() === hint",
                           arg=NODE_HINT, timeout=10_000)
    assert "token id" not in text_of(page, "#tree-node")
    page.context.close()
