"""Previous/Next show the steps the page holds (ui/held.py), in a real browser at a projector's
size: a move to a held step is drawn on the page without asking the server to draw it, the server
then takes up the step shown (a redraw it makes afterwards shows that step), and presses past the
steps held still land on the right step.
"""
from __future__ import annotations

import pytest

from helpers.browser import fresh_page, text_of

SCREEN = {"width": 1920, "height": 1080}
RUN = "coding-122"
TREE = "#tree-plot .js-plotly-plot"
PANELS = "#explain-detail .js-plotly-plot"
AT_JS = """([sel, n]) => { const g = Array.from(document.querySelectorAll(sel));
    return g.length > 0 && g.every(p => p.layout && p.layout.meta && p.layout.meta.step === n); }"""
HOLDS_JS = "([group, n]) => !!(window.__logitspecHeld?.[group]?.steps?.[String(n)])"
# Which hidden button the page pressed: `sync` after a held step was shown, `fetch` for one it lacked.
COUNT_JS = """(group) => { window.__pressed = {sync: 0, fetch: 0};
    for (const kind of ['sync', 'fetch'])
        document.getElementById(group + '-' + kind).addEventListener('click', () => window.__pressed[kind]++); }"""

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _open(browser, app_url, query: str):
    page = fresh_page(browser, app_url.rstrip("/") + "/?" + query, SCREEN)
    page.wait_for_function("() => /Model ready/.test(document.querySelector('#model-status')?.innerText || '')",
                           timeout=240_000)
    return page


def _label(page) -> str:
    return text_of(page, "#step-label")


def test_a_held_step_is_drawn_on_the_page_and_the_server_takes_it_up(browser, app_url):
    page = _open(browser, app_url, f"trace={RUN}&step=3&tab=explorer")
    page.wait_for_function(AT_JS, arg=[TREE, 3], timeout=60_000)
    page.wait_for_function(HOLDS_JS, arg=["explorer", 4], timeout=60_000)
    page.evaluate(COUNT_JS, "explorer")
    page.locator("#step-label").click()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(AT_JS, arg=[TREE, 4], timeout=10_000)
    assert _label(page).startswith("Step 4 (")
    page.wait_for_function("() => window.__pressed.sync === 1", timeout=10_000)
    assert page.evaluate("window.__pressed.fetch") == 0  # drawn from the page, not by the server
    # The server took the step up: the trie it draws now is step 4's.
    page.locator("#tree-view").get_by_text("trie", exact=True).click()
    page.wait_for_function("() => 'shared' in (document.querySelector('#tree-plot .js-plotly-plot')?.layout?.meta"
                           " || {})", timeout=30_000)  # the trie's drawing, not the lanes'
    assert page.evaluate(AT_JS, [TREE, 4]) and _label(page).startswith("Step 4 (")
    page.context.close()


def test_quick_presses_past_the_steps_held_land_on_the_right_step(browser, app_url):
    page = _open(browser, app_url, f"trace={RUN}&step=2&tab=explorer")
    page.wait_for_function(HOLDS_JS, arg=["explorer", 3], timeout=60_000)
    page.evaluate(COUNT_JS, "explorer")
    page.locator("#step-label").click()
    for _ in range(6):  # two steps are held on each side: the later presses go to the server
        page.keyboard.press("ArrowRight")
    page.wait_for_function(AT_JS, arg=[TREE, 8], timeout=60_000)
    page.wait_for_timeout(1500)  # no late reply moves it on
    assert page.evaluate(AT_JS, [TREE, 8]) and _label(page).startswith("Step 8 (")
    assert page.evaluate("window.__pressed.fetch") >= 1
    page.keyboard.press("ArrowLeft")  # from the steps held around step 8, sent after the server's move
    page.wait_for_function(AT_JS, arg=[TREE, 7], timeout=30_000)
    assert _label(page).startswith("Step 7 (")
    page.context.close()


def test_explains_detail_moves_through_held_steps(browser, app_url):
    page = _open(browser, app_url, f"trace={RUN}&step=2&tab=explain")
    page.locator("#explain-levels").get_by_role("tab", name="In detail").click()
    page.wait_for_function(AT_JS, arg=[PANELS, 2], timeout=60_000)
    page.wait_for_function(HOLDS_JS, arg=["explain", 3], timeout=60_000)
    page.evaluate(COUNT_JS, "explain")
    page.locator("#explain-head").click()
    page.keyboard.press("PageDown")
    page.wait_for_function(AT_JS, arg=[PANELS, 3], timeout=10_000)
    assert "Step 3 of" in text_of(page, "#explain-head")
    page.wait_for_function("() => window.__pressed.sync === 1", timeout=10_000)
    assert page.evaluate("window.__pressed.fetch") == 0
    # The server took the step up: a press it answers itself (past the steps held) counts from step 3.
    page.evaluate("() => { window.__logitspecHeld.explain = null; }")
    page.keyboard.press("PageDown")
    page.wait_for_function(AT_JS, arg=[PANELS, 4], timeout=30_000)
    assert page.evaluate("window.__pressed.fetch") == 1 and "Step 4 of" in text_of(page, "#explain-head")
    page.context.close()
