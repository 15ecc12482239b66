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
# Counted for the group last readied only, its listeners added once (the module's tests share a page).
COUNT_JS = """(group) => { window.__pressed = {sync: 0, fetch: 0, group};
    const on = window.__listening = window.__listening || {};
    if (on[group]) return;
    on[group] = true;
    for (const kind of ['sync', 'fetch'])
        document.getElementById(group + '-' + kind).addEventListener('click', () => {
            if (window.__pressed.group === group) window.__pressed[kind]++; }); }"""
AROUND_JS = "([group, n]) => window.__logitspecHeld?.[group]?.at === n"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def page(browser, app_url):
    """One page for the module's checks (one load, not three): each brings it to its tab and step
    by hand, as a visitor would."""
    page = fresh_page(browser, app_url.rstrip("/") + f"/?trace={RUN}&step=2&tab=explorer", SCREEN)
    page.wait_for_function("() => /Model ready/.test(document.querySelector('#model-status')?.innerText || '')",
                           timeout=240_000)
    yield page
    page.context.close()


def _step_box(page, box: str, step: int) -> None:
    """Type `step` into a step box and let go of it (it sends its step again when it loses focus)."""
    page.locator(box).fill(str(step))
    page.locator(box).press("Enter")
    page.locator(box).blur()


def _explorer_at(page, step: int) -> None:
    """The Step explorer at `step` in the lanes view, as a link to the step opens it."""
    page.get_by_role("tab", name="Step explorer", exact=True).click()
    page.locator("#tree-view").get_by_text("lanes", exact=True).click()
    page.wait_for_function("() => 'n_lanes' in (document.querySelector('#tree-plot .js-plotly-plot')?.layout?.meta"
                           " || {})", timeout=30_000)  # the lanes' drawing, not the trie's
    if not _label(page).startswith(f"Step {step} ("):
        _step_box(page, "#step-slider input[type=number]", step)
    _landed(page, step)


def _label(page) -> str:
    return text_of(page, "#step-label")


def _landed(page, step: int) -> None:
    """The tree and the step's label both show `step`: a move the server draws paints the tree a
    frame before Gradio takes its progress text off the label."""
    page.wait_for_function(AT_JS, arg=[TREE, step], timeout=30_000)
    page.wait_for_function("(n) => (document.querySelector('#step-label')?.innerText || '').trim()"
                           ".startsWith(`Step ${n} (`)", arg=step, timeout=30_000)


def _ready(page, group: str, plots: str, step: int) -> None:
    """Wait for `step` drawn and the steps around it held, count the hidden buttons' presses, and
    take the focus off any box (the keys are the page's then)."""
    page.wait_for_function(AT_JS, arg=[plots, step], timeout=60_000)
    page.wait_for_function(AROUND_JS, arg=[group, step], timeout=60_000)  # not those of a step shown before
    page.wait_for_function(HOLDS_JS, arg=[group, step + 1], timeout=60_000)
    page.evaluate(COUNT_JS, group)
    page.evaluate("() => document.activeElement?.blur()")


def _moved_on_the_page(page, group: str, plots: str, step: int) -> None:
    """The move reached `step` without the server drawing it, and the server took the step up:
    the steps it then sends are held around that step."""
    page.wait_for_function(AT_JS, arg=[plots, step], timeout=30_000)
    page.wait_for_function("() => window.__pressed.sync === 1", timeout=30_000)
    assert page.evaluate("window.__pressed.fetch") == 0  # drawn from the page, not by the server
    page.wait_for_function("([group, n]) => window.__logitspecHeld?.[group]?.at === n", arg=[group, step],
                           timeout=30_000)


def test_a_held_step_is_drawn_on_the_page_and_the_server_takes_it_up(page):
    _explorer_at(page, 3)
    _ready(page, "explorer", TREE, 3)
    page.keyboard.press("ArrowRight")
    _moved_on_the_page(page, "explorer", TREE, 4)
    assert _label(page).startswith("Step 4 (")
    # A redraw the server makes now is step 4's: the trie.
    page.locator("#tree-view").get_by_text("trie", exact=True).click()
    page.wait_for_function("() => 'shared' in (document.querySelector('#tree-plot .js-plotly-plot')?.layout?.meta"
                           " || {})", timeout=30_000)  # the trie's drawing, not the lanes'
    assert page.evaluate(AT_JS, [TREE, 4]) and _label(page).startswith("Step 4 (")


def test_quick_presses_past_the_steps_held_land_on_the_right_step(page):
    _explorer_at(page, 2)
    _ready(page, "explorer", TREE, 2)
    for _ in range(6):  # two steps are held on each side: the later presses go to the server
        page.keyboard.press("ArrowRight")
    page.wait_for_function(AT_JS, arg=[TREE, 8], timeout=60_000)
    page.wait_for_timeout(1500)  # no late reply moves it on
    _landed(page, 8)
    assert page.evaluate(AT_JS, [TREE, 8])
    assert page.evaluate("window.__pressed.fetch") >= 1
    page.keyboard.press("ArrowLeft")  # held around step 8 once the server's move has sent them
    _landed(page, 7)
    page.wait_for_timeout(1000)  # and no late reply moves it on
    assert page.evaluate(AT_JS, [TREE, 7]) and _label(page).startswith("Step 7 (")


def test_explains_detail_moves_through_held_steps(page):
    page.get_by_role("tab", name="Explain", exact=True).click()
    # The tab opens the lesson first: only once it is drawn is the level ours to switch.
    page.wait_for_function("() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')",
                           timeout=240_000)
    page.locator("#explain-levels").get_by_role("tab", name="In detail").click()
    page.wait_for_function("() => /Step \\d+ of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)  # the tab's own drawing is in: a step typed now is the last word
    if "Step 2 of" not in text_of(page, "#explain-head"):
        _step_box(page, "#explain-step input", 2)
    _ready(page, "explain", PANELS, 2)
    page.keyboard.press("PageDown")
    _moved_on_the_page(page, "explain", PANELS, 3)
    assert "Step 3 of" in text_of(page, "#explain-head")
    # A step the page does not hold is the server's to draw, from the step shown.
    page.evaluate("() => { window.__logitspecHeld.explain = null; }")
    page.keyboard.press("PageDown")
    page.wait_for_function(AT_JS, arg=[PANELS, 4], timeout=30_000)
    assert page.evaluate("window.__pressed.fetch") == 1 and "Step 4 of" in text_of(page, "#explain-head")
