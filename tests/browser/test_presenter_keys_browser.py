"""A presenter's clicker, in a real browser at a projector's size: PageDown / PageUp and space move
one lesson stage or one explorer step whatever has the focus (the tab button just clicked
included, or a press while the lesson is still loading), a link to the Explain tab opens the lesson,
and a bad link keeps its message in view.
"""
from __future__ import annotations

import pytest

from helpers.browser import TAB_SHOWN_JS, fresh_page, settle, text_of

SCREEN = {"width": 1920, "height": 1080}
RUN = "coding-122"
STAGE_AT_TOP_JS = """(i) => Math.abs(document.querySelectorAll('#explain-lesson .lesson-stage')[i]
    .getBoundingClientRect().top) < 8"""
DRAWN_JS = "() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')"
LABEL_JS = "() => (document.querySelector('#step-label')?.innerText || '')"
LEVEL_JS = """() => (document.querySelector('#explain-levels [role=tab][aria-selected=true]')?.innerText
    || '').trim()"""


def _page(browser, app_url, query: str):
    return fresh_page(browser, app_url.rstrip("/") + "/?" + query, SCREEN)


def _wait_label(page, n: int, timeout: int = 60_000) -> None:
    page.wait_for_function(f"(n) => ({LABEL_JS})().startsWith('Step ' + n + ' (')", arg=n, timeout=timeout)


@pytest.fixture(scope="module")
def lesson_page(browser, app_url):
    page = _page(browser, app_url, f"trace={RUN}&step=5&tab=explain")
    page.wait_for_function("() => window.__logitspecKeys === true", timeout=240_000, polling=20)
    page.pressed_early = not page.evaluate(DRAWN_JS)  # a clicker pressed while the lesson loads
    page.keyboard.press("ArrowRight")
    page.wait_for_function(DRAWN_JS, timeout=240_000)
    yield page
    page.context.close()


def test_a_press_while_the_lesson_loads_moves_once_it_is_drawn(lesson_page):
    assert lesson_page.pressed_early, "the lesson was drawn before the press: nothing was checked"
    lesson_page.wait_for_function(STAGE_AT_TOP_JS, arg=0, timeout=30_000)


def test_a_link_to_explain_opens_the_lesson_even_with_a_step(lesson_page):
    assert lesson_page.evaluate(LEVEL_JS) == "Lesson"
    assert lesson_page.locator("#lesson-slow-plot .main-svg").first.is_visible()


def test_pagedown_and_space_move_one_stage_right_after_clicking_the_tab(lesson_page):
    page = lesson_page
    page.get_by_role("tab", name="Explain", exact=True).click()  # the tab button keeps the focus
    assert page.evaluate("() => document.activeElement?.getAttribute('role')") == "tab"
    page.evaluate("() => window.scrollTo(0, 0)")
    for key, i in [("PageDown", 0), (" ", 1), ("PageDown", 2), ("PageUp", 1), ("Shift+ ", 0)]:
        page.keyboard.press(key)
        page.wait_for_function(STAGE_AT_TOP_JS, arg=i, timeout=5_000)


def test_a_bad_link_keeps_its_message_in_view(browser, app_url):
    page = _page(browser, app_url, f"trace={RUN}&step=x7&tab=explain")
    page.wait_for_function("() => /This link:/.test(document.querySelector('#status')?.innerText || '')",
                           timeout=240_000)
    page.wait_for_function("() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')",
                           timeout=240_000)
    page.wait_for_timeout(1500)  # the link's scroll has happened
    box = page.evaluate("() => { const r = document.querySelector('#status').getBoundingClientRect();"
                        " return [r.top, r.bottom, window.innerHeight]; }")
    assert -2 <= box[0] and box[1] <= box[2], box  # within the screen (a sub-pixel scroll aside)
    page.context.close()


LINES_JS = """(s) => { const b = document.querySelector(s); const r = document.createRange();
    r.selectNodeContents(b); return new Set(Array.from(r.getClientRects()).filter(x => x.width > 1)
    .map(x => Math.round(x.top))).size; }"""


def test_the_step_buttons_read_on_one_line(lesson_page):
    page = lesson_page
    page.get_by_role("tab", name="In detail").click()
    page.wait_for_selector("#explain-prev", state="visible", timeout=30_000)
    for sel in ("#explain-prev", "#explain-next"):
        assert page.evaluate(LINES_JS, sel) == 1, (sel, page.evaluate(LINES_JS, sel))
    page.get_by_role("tab", name="Lesson").click()


# Last on lesson_page: it leaves the page on the Step explorer's tab.
def test_pagedown_and_space_move_one_step_in_the_explorer(lesson_page):
    page = lesson_page
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_function(TAB_SHOWN_JS, arg="Step explorer")
    box = page.locator("#step-slider input[type=number]")  # step 7, as a link with &step=7 opens it
    box.fill("7")
    box.press("Enter")
    _wait_label(page, 7)
    settle(page)  # the box's own move is over: a press sent beside it could be answered before it
    page.get_by_role("tab", name="Step explorer").click()  # focus on a tab button, not the page
    assert page.evaluate("() => document.activeElement?.getAttribute('role')") == "tab"
    page.keyboard.press("PageDown")
    _wait_label(page, 8)
    page.keyboard.press(" ")
    _wait_label(page, 9)
    page.keyboard.press("PageUp")
    _wait_label(page, 8)
    assert "Pause" not in text_of(page, "#play")  # space steps; it does not start playing


def test_in_detail_clicked_while_a_link_opens_stays_open(browser, app_url):
    """A link to Explain opens the lesson; a visitor who picks "In detail" before the link's step
    has come keeps it (the link's reply does not take them back to the lesson)."""
    page = _page(browser, app_url, f"trace={RUN}&step=5&tab=explain")
    detail = page.locator("#explain-levels").get_by_role("tab", name="In detail")
    detail.click(timeout=240_000)  # as soon as the tab can be clicked
    page.wait_for_function("() => /Step 5\\*?\\*? of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=240_000)  # the link's step has come
    page.wait_for_timeout(1000)
    assert page.evaluate(LEVEL_JS) == "In detail"
    page.context.close()
