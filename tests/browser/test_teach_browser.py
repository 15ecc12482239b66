"""For teachers and researchers, in a real browser: deep links open a recorded run at a step
and tab, the keyboard steps the explorer, the verified trie downloads as node-link JSON, and
the Explain tab walks through the visitor's own fresh run.

Screenshots go to artifacts/browser/ (explain.png, trie.png).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.browser import (DESKTOP, MODEL_WAIT_MS, TAB_SHOWN_JS, fresh_page, set_max_new, settle, shot, text_of,
                             tree_data)
from helpers.paths import ROOT
from logitspec.analysis.race import read_race
from logitspec.core.trace import RunTrace

SHORT_RACE = 24  # new tokens: enough for a few steps, quick on two busy cores


def _open(browser, app_url, query: str):
    page = fresh_page(browser, app_url.rstrip("/") + "/?" + query)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=60_000)  # hidden on other tabs
    return page


def _wait_step(page, n: int, timeout: int = 30_000) -> None:
    from playwright.sync_api import TimeoutError as PageTimeout

    try:
        page.wait_for_function("(n) => (document.querySelector('#step-label')?.innerText || '')"
                               ".startsWith('Step ' + n + ' (')", arg=n, timeout=timeout)
    except PageTimeout:
        slider = page.locator("#step-slider input[type=number]").input_value()
        pytest.fail(f"step {n} was not shown within {timeout / 1000:.0f} s; the page shows "
                    f"{_step_label(page)[:40]!r}, the slider {slider!r}, the Play button {text_of(page, '#play')!r}")


def _selected_tab(page) -> str:
    return page.evaluate("() => (document.querySelector('#tabs [role=tab][aria-selected=true]')?.innerText"
                         " || '').trim()")


def _step_label(page) -> str:
    return text_of(page, "#step-label")


TABS_AT_TOP_JS = "() => Math.abs(document.getElementById('tabs').getBoundingClientRect().top) < 40"


@pytest.fixture(scope="module")
def coding_step5(browser, app_url):
    """The explorer's deep link, kept open for the module's checks that step it by hand; the deep
    link's own check comes first, the runs that replace coding-122 last."""
    page = _open(browser, app_url, "trace=coding-122&step=5&tab=explorer")
    _wait_step(page, 5)
    page.wait_for_function(TABS_AT_TOP_JS, timeout=10_000)  # the link's scroll is over: no test sees it late
    yield page
    page.context.close()


def _explorer_at(page, n: int, steps: str = "") -> None:
    """The Step explorer's tab at step `n` (of the run whose label reads `steps`), as a visitor
    brings it there: the step box, and Enter; the box's own move is over before anything else."""
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_function(TAB_SHOWN_JS, arg="Step explorer")
    if _step_label(page).startswith(f"Step {n} ({steps}"):
        return
    box = page.locator("#step-slider input[type=number]")
    box.fill(str(n))
    box.press("Enter")
    page.wait_for_function("(s) => (document.querySelector('#step-label')?.innerText || '').startsWith(s)",
                           arg=f"Step {n} ({steps}", timeout=30_000)
    settle(page)


@pytest.mark.browser
def test_a_deep_link_opens_the_run_step_and_tab(coding_step5, browser, app_url):
    page = coding_step5
    _wait_step(page, 5)
    assert _step_label(page).startswith("Step 5 (steps 0–39)"), _step_label(page)
    assert "coding-122.json" in text_of(page, "#status"), text_of(page, "#status")
    assert _selected_tab(page) == "Step explorer"

    page = _open(browser, app_url, "trace=translation-161.json&step=5&tab=explain")
    page.wait_for_selector("#lesson-keep-plot .main-svg", timeout=60_000)
    assert _selected_tab(page) == "Explain"
    # The lesson opens first; the step the link named waits in "In detail".
    assert page.evaluate("() => (document.querySelector('#explain-levels [role=tab][aria-selected=true]')"
                         "?.innerText || '').trim()") == "Lesson"
    page.get_by_role("tab", name="In detail").click()
    page.wait_for_function("() => /Step 5 of 0–21/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)
    head = text_of(page, "#explain-head")
    assert "translation-161.json" in head and "the step the link named" in head, head
    # the link lands on its panel: the tabs at the top of the screen, not the race above them
    page.wait_for_function(TABS_AT_TOP_JS, timeout=10_000)
    page.context.close()

    # Bad values: one line says what was wrong, and the page works as without a link.
    page = _open(browser, app_url, "trace=../../etc/passwd&step=x7&tab=nope")
    status = text_of(page, "#status")
    assert status.startswith("This link:") and "no recorded run is called" in status, status
    assert "step must be a whole number" in status and "there is no tab" in status, status
    assert _step_label(page).startswith("Step 0 ("), _step_label(page)
    page.locator("#next").click()
    _wait_step(page, 1)
    page.context.close()
    # A step past the run shows its line the same way; its words: tests/unit/test_links.py.


@pytest.mark.browser
def test_the_keyboard_steps_the_explorer(coding_step5):
    page = coding_step5
    _explorer_at(page, 7)
    page.locator("#step-label").click()  # focus on the page, not on a box
    page.keyboard.press("ArrowRight")
    _wait_step(page, 8)
    page.keyboard.press("ArrowLeft")
    _wait_step(page, 7)

    # Typing in a text box is left alone.
    page.locator("#prompt textarea").click()
    page.keyboard.type("ab")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(1500)
    assert _step_label(page).startswith("Step 7 ("), _step_label(page)

    # The slider's own arrow keys move the view, not just the handle.
    before = tree_data(page)
    page.locator("#step-slider input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    _wait_step(page, 9)
    page.wait_for_function("(b) => { const el = document.querySelector('#tree-plot .js-plotly-plot');"
                           " return el && el.data && JSON.stringify(el.data.map(t => [t.x, t.y, t.text, "
                           "t.hovertext])) !== b; }", arg=before, timeout=30_000)
    # The step box moves the view when a number is typed and Enter pressed.
    box = page.locator("#step-slider input[type=number]")
    box.fill("12")
    box.press("Enter")
    _wait_step(page, 12)

    # p plays and pauses (from the page, not a text box); space is a clicker's step.
    page.locator("#step-label").click()
    page.keyboard.press("p")
    page.wait_for_function("() => (document.querySelector('#play')?.innerText || '').includes('Pause')",
                           timeout=10_000)
    _wait_step(page, 13, timeout=90_000)  # a tick redraws a step: seconds on a busy machine
    page.keyboard.press("p")
    page.wait_for_function("() => (document.querySelector('#play')?.innerText || '').includes('Play')",
                           timeout=10_000)


@pytest.mark.browser
def test_quick_presses_each_move_a_step(coding_step5):
    """A presenter pressing → twice before the first redraw lands moves two steps, not one,
    in the Step explorer and in the Explain tab."""
    page = coding_step5
    _explorer_at(page, 5)  # the link's step (the keyboard's check moved on from it)
    # The link's tab scrolled the tabs up (the fixture waited for it); back to the top.
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_function("() => window.scrollY === 0", timeout=10_000)
    page.locator("#next").click()
    page.locator("#next").click()
    page.locator("#next").click()
    _wait_step(page, 8)
    page.locator("#step-label").click()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    _wait_step(page, 6)
    page.wait_for_timeout(1500)  # nothing more arrives
    assert _step_label(page).startswith("Step 6 ("), _step_label(page)

    # The Explain tab's buttons count every press the same way.
    page.get_by_role("tab", name="Explain").click()
    page.get_by_role("tab", name="In detail").click()
    explained = "(n) => new RegExp('Step ' + n + ' of').test(document.querySelector('#explain-head')?.innerText || '')"
    page.wait_for_function("() => /Step \\d+ of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)
    box = page.locator("#explain-step input")
    box.fill("5")
    box.press("Enter")
    page.wait_for_function(explained, arg=5, timeout=30_000)
    for _ in range(3):
        page.locator("#explain-next").click()
    page.wait_for_function(explained, arg=8, timeout=30_000)
    page.locator("#explain-prev").click()
    page.locator("#explain-prev").click()
    page.wait_for_function(explained, arg=6, timeout=30_000)
    page.wait_for_timeout(1500)
    assert re.search(r"Step 6 of", text_of(page, "#explain-head")), text_of(page, "#explain-head")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("screen", [DESKTOP, {"width": 390, "height": 844}])
def test_a_clicked_block_of_text_opens_its_step_in_view(browser, app_url, screen, request):
    """The text sits with the race, the explorer below it: a click on a block shows the explorer's
    tab and scrolls to the step it opened, from any tab."""
    if screen == DESKTOP:  # coding_step5 is that screen: at the link's step 0 and the page's top by hand
        page = request.getfixturevalue("coding_step5")
        _explorer_at(page, 0)
        page.evaluate("() => window.scrollTo(0, 0)")
    else:
        page = fresh_page(browser, app_url.rstrip("/") + "/?trace=coding-122&step=0", screen)
    page.wait_for_selector("#tree-plot .js-plotly-plot .main-svg", timeout=120_000)
    page.get_by_role("tab", name="Observations").click()
    page.locator("#text-view .token-container").nth(10).click()
    page.wait_for_function("() => /^Step [1-9]/.test(document.querySelector('#step-label')?.innerText || '')",
                           timeout=60_000)
    page.wait_for_timeout(500)
    top = page.evaluate("() => document.querySelector('#step-label').getBoundingClientRect().top")
    assert -2 <= top < screen["height"] / 2, f"the opened step is out of view: its label at {top:.0f} px"
    if screen != DESKTOP:
        page.context.close()


def _open_shipped(page, name: str) -> None:
    """A shipped run picked from the Traces tab's menu, as a visitor switches runs on an open page."""
    page.get_by_role("tab", name="Traces").click()
    page.locator("#shipped input").click()
    page.get_by_role("option", name=name).click()
    page.wait_for_function("(n) => { const s = document.querySelector('#status')?.innerText || '';"
                           " return s.includes('Exploring') && s.includes(n); }", arg=name, timeout=60_000)


# After the checks on coding-122: it opens another run on their page.
@pytest.mark.browser
def test_the_trie_view_and_its_node_link_export(coding_step5):
    page = coding_step5
    page.locator("#tree-view").get_by_label("lanes").check()  # the view a new visitor starts in
    _open_shipped(page, "summarization-242.json")
    last = len(RunTrace.load(ROOT / "traces" / "summarization-242.json").steps) - 1
    _explorer_at(page, 9, f"steps 0–{last})")
    assert not page.locator("#trie-download").is_visible()
    page.locator("#tree-view").get_by_label("trie").check()
    page.wait_for_function("() => { const el = document.querySelector('#tree-plot .js-plotly-plot');"
                           " return el && el.layout && el.layout.meta && el.layout.meta.shared !== undefined; }",
                           timeout=30_000)
    meta = page.evaluate("() => document.querySelector('#tree-plot .js-plotly-plot').layout.meta")
    assert meta["step"] == 9 and meta["shared"] > 0, meta
    shot(page, "trie", "#tree-plot", height=900)

    button = page.locator("#trie-download")
    button.wait_for(state="visible", timeout=10_000)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    data = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert len(data["nodes"]) == meta["nodes"] and len(data["links"]) == meta["nodes"] - 1
    assert data["graph"]["step"] == 9 and data["directed"] is True
    fates = {n["fate"] for n in data["nodes"]}
    assert "accepted" in fates and fates <= {"accepted", "rejected", "pruned"}
    assert sum(len(n["sources"]) > 1 for n in data["nodes"]) == meta["shared"]

    # Next keeps the trie and its download on the new step; the lanes hide the download.
    page.locator("#next").click()
    _wait_step(page, 10)
    page.wait_for_function("() => document.querySelector('#tree-plot .js-plotly-plot').layout.meta.step === 10"
                           " && document.querySelector('#tree-plot .js-plotly-plot').layout.meta.shared !== undefined",
                           timeout=30_000)
    page.locator("#tree-view").get_by_label("lanes").check()
    button.wait_for(state="hidden", timeout=10_000)


# Last on coding_step5: its run replaces the one the page shows.
@pytest.mark.slow
@pytest.mark.browser
def test_explain_walks_through_the_visitors_fresh_run(coding_step5):
    from playwright.sync_api import expect

    page = coding_step5
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=60_000)
    page.get_by_role("button", name="Code").first.click()
    expect(page.locator("#prompt textarea")).to_have_value(re.compile("Fibonacci"), timeout=10_000)
    set_max_new(page, SHORT_RACE)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=MODEL_WAIT_MS)

    page.get_by_role("tab", name="Traces").click()
    with page.expect_download(timeout=30_000) as info:
        page.locator("#download").click()
    trace = read_race(Path(info.value.path())).lanes["logitspec"]  # the race file's LogitSpec lane
    assert len(trace.tokens) == SHORT_RACE

    page.get_by_role("tab", name="Explain").click()
    page.locator("#explain-levels").get_by_role("tab", name="Lesson").click()  # the level a new page opens on
    page.wait_for_function("() => /your last run/.test(document.querySelector('#lesson-intro')?.innerText || '')",
                           timeout=60_000)  # the lesson comes first, on the same run
    page.get_by_role("tab", name="In detail").click()
    page.wait_for_function("() => /your last run/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)
    head = text_of(page, "#explain-head")
    assert f"{SHORT_RACE} tokens in {trace.forward_steps} forward passes" in head, head
    step = int(re.search(r"Step (\d+) of", head).group(1))
    assert re.search(r"picked by the rule|no step met the rule", head), head
    _check_panels(page, trace, step)
    shot(page, "explain", "#explain-head", height=1400)

    page.locator("#explain-head").click()
    page.keyboard.press("ArrowRight" if step + 1 < len(trace.steps) else "ArrowLeft")
    other = step + 1 if step + 1 < len(trace.steps) else step - 1
    page.wait_for_function("(n) => (document.querySelector('#explain-head')?.innerText || '').includes("
                           "'Step ' + n + ' of')", arg=other, timeout=30_000)
    _check_panels(page, trace, other)


def _check_panels(page, trace: RunTrace, step: int) -> None:
    """Six panels, each a drawn figure and the two sentences computed from the downloaded trace."""
    from visual.explain_words import sentences
    from visual.style import sub_x

    want = sentences(trace, step)
    for key, pair in want.items():
        # Drawn (a panel with nothing to show draws a note, with no traces).
        page.wait_for_function("(s) => { const el = document.querySelector(s + ' .js-plotly-plot');"
                               " return !!(el && el.layout && el.querySelector('.main-svg')); }",
                               arg=f"#explain-{key}-plot", timeout=30_000)
        shown = page.evaluate("(s) => Array.from(document.querySelectorAll(s + ' p')).map(p => p.innerText.trim())",
                              f"#explain-{key}-text")
        assert len(shown) == 2, (key, shown)
        for got, sentence in zip(shown, pair):
            plain = re.sub(r"<sub>(.*?)</sub>", r"\1", sub_x(sentence))
            assert got == plain, (key, got, plain)
