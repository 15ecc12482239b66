"""A late reply never paints over a newer step: Explain's tab, opened again, has the server draw its
step while the page already holds the steps around it; a press on Next at that moment must end on
the next step, its head and its six panels alike, not on the step the tab's reply brings.

Checked beside whatever else the machine runs (the test suite's other worker, most often).
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, settle, text_of
from logitspec.core.trace import RunTrace
from ui.files import TRACES_DIR

TRACE = "coding-122"
HELD_JS = "() => { const h = (window.__logitspecHeld || {}).explain; return !!(h && h.steps); }"
NEXT_ON_OPENING_JS = """() => new Promise(done => {
    const tab = Array.from(document.querySelectorAll('button[role=tab]')).find(b => b.innerText.trim() === 'Explain');
    tab.click();
    requestAnimationFrame(() => { document.getElementById('explain-next').click(); done(true); });
})"""
HEAD_STEP_JS = "() => (document.querySelector('#explain-head')?.innerText || '').match(/Step (\\d+) of/)?.[1]"


def _panels_say(page, trace: RunTrace, step: int) -> dict:
    """Each panel's sentences on the page against those of `step`, where they differ."""
    from visual.explain_words import sentences
    from visual.style import sub_x

    wrong = {}
    for key, pair in sentences(trace, step).items():
        shown = page.evaluate("(s) => Array.from(document.querySelectorAll(s + ' p')).map(p => p.innerText.trim())",
                              f"#explain-{key}-text")
        want = [re.sub(r"<sub>(.*?)</sub>", r"\1", sub_x(x)) for x in pair]
        if shown != want:
            wrong[key] = (shown, want)
    return wrong


@pytest.mark.slow
@pytest.mark.browser
def test_a_press_while_the_tab_redraws_keeps_the_step_pressed_to(browser, app_url):
    trace = RunTrace.load(TRACES_DIR / f"{TRACE}.json")
    page = browser.new_context(viewport=DESKTOP).new_page()
    try:
        page.goto(app_url.rstrip("/") + f"/?trace={TRACE}&tab=explain", wait_until="domcontentloaded")
        page.wait_for_selector("#lesson-intro p", timeout=90_000)  # the link's tab, drawn
        page.get_by_role("tab", name="In detail").click()
        page.wait_for_function(HEAD_STEP_JS, timeout=60_000)
        page.wait_for_function(HELD_JS, timeout=60_000)  # the steps around the one shown, on the page
        step = int(page.evaluate(HEAD_STEP_JS))
        assert step + 1 < len(trace.steps)
        page.get_by_role("tab", name="Traces").click()
        # The tab opened (the server draws its step again) and Next pressed as soon as it shows, in
        # one turn of the page: the press lands before the tab's reply, as it does on a loaded machine.
        page.evaluate(NEXT_ON_OPENING_JS)
        page.wait_for_function("(n) => (document.querySelector('#explain-head')?.innerText || '')"
                               ".includes('Step ' + n + ' of')", arg=step + 1, timeout=30_000)
        page.wait_for_timeout(3000)  # every reply in flight has landed by now
        settle(page)
        head = text_of(page, "#explain-head")
        assert f"Step {step + 1} of" in head, f"a late reply took the page back: {head!r}"
        assert _panels_say(page, trace, step + 1) == {}
    finally:
        page.context.close()
