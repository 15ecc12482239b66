"""The Explain tab's lesson in a real browser, on a projector's screen and a laptop's: it is the
first thing the tab shows, its words are the trace's, its text and figure labels read from the
back of a room, each stage fits one screen, and every defined word carries its definition.

Screenshots go to artifacts/browser/ (lesson-<width>-<stage>.png).
"""
from __future__ import annotations

import html
import re

import pytest

from helpers.browser import fresh_page, shot, text_of
from helpers.paths import ROOT
from helpers.timings import report_times
from logitspec.core.trace import RunTrace
from ui.files import recorded_pass_costs
from visual.lesson import GLOSSARY, ON_SCREEN, STAGES, lesson, lesson_step

SCREENS = {"1920": {"width": 1920, "height": 1080}, "1280": {"width": 1280, "height": 720}}
RUN = "coding-122"
MIN_TEXT_PX = 24
MIN_TICK_PX = 18

# Every piece of text in the lesson's words: its font size and its text.
TEXT_SIZES_JS = """(s) => Array.from(document.querySelectorAll(s + ' .lesson-words *'))
    .filter(el => Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()))
    .map(el => [parseFloat(getComputedStyle(el).fontSize), el.innerText.slice(0, 40)])"""

# Every SVG text a figure shows (ticks, bar numbers, token labels): its size and its text.
TICK_SIZES_JS = """(s) => Array.from(document.querySelectorAll(s + ' svg text'))
    .filter(t => t.textContent.trim())
    .map(t => [parseFloat(getComputedStyle(t).fontSize), t.textContent.slice(0, 30)])"""

TERMS_JS = """() => Array.from(document.querySelectorAll('#explain-lesson abbr.lesson-term'))
    .map(a => [a.dataset.term, a.title, a.innerText])"""


@pytest.fixture(scope="module", params=list(SCREENS))
def screen(request, browser, app_url):
    """The lesson of a recorded run, opened by a link to the Explain tab: (which, page)."""
    page = fresh_page(browser, app_url.rstrip("/") + f"/?trace={RUN}&tab=explain", SCREENS[request.param])
    page.wait_for_function("() => !!document.querySelector('#lesson-keep-plot .js-plotly-plot .main-svg')",
                           timeout=240_000)
    yield request.param, page
    page.context.close()


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text))).strip()


def test_the_lesson_comes_first_and_says_the_runs_numbers(screen):
    which, page = screen
    assert page.evaluate("() => (document.querySelector('#explain-levels [role=tab][aria-selected=true]')"
                         "?.innerText || '').trim()") == "Lesson"
    trace = RunTrace.load(ROOT / "traces" / f"{RUN}.json")
    assert ".json" not in text_of(page, "#explain-lesson"), "a file name shown to students"
    for st in lesson(trace, curves=recorded_pass_costs()):  # the machines' curves the page ships
        shown = re.sub(r"\s+", " ", text_of(page, f"#lesson-{st.key}-text"))
        assert st.title in shown, (which, st.key, shown[:80])
        for para in re.findall(r"<p>(.*?)</p>", st.html):
            assert _plain(para) in shown, (which, st.key, shown, _plain(para))


def test_the_lesson_teaches_a_kept_next_next_guess_and_defines_its_words_on_screen(screen):
    which, page = screen
    shown = re.sub(r"\s+", " ", text_of(page, "#explain-lesson"))
    assert "came from a next-next guess (g2)" in shown, which
    for word, definition in ON_SCREEN.items():  # in the words themselves, not only in a hover
        assert f"({definition})" in shown, (which, word)
    # Stage 2's figure draws what its words count, in the explorer's colours for g1 and g2.
    said = text_of(page, "#lesson-guess-text")
    stated = int(re.search(r"guessed the (\d+) tokens? after it", said).group(1))
    ticks = page.evaluate("() => Array.from(document.querySelectorAll('#lesson-guess-plot .xtick text'))"
                          ".map(t => t.textContent)")
    more = page.evaluate("() => Array.from(document.querySelectorAll('#lesson-guess-plot .annotation-text'))"
                         ".map(t => t.textContent)")
    extra = sum(int(m.group(1)) for t in more if (m := re.match(r"and (\d+) more", t)))
    assert sum(t.startswith("guess ") for t in ticks) + extra == stated, (which, ticks, more, said)


def test_the_words_and_labels_read_from_the_back_of_the_room(screen):
    which, page = screen
    for key in STAGES:
        sizes = page.evaluate(TEXT_SIZES_JS, f"#lesson-{key}-text")
        assert sizes and min(px for px, _ in sizes) >= MIN_TEXT_PX, (which, key, min(sizes))
        ticks = page.evaluate(TICK_SIZES_JS, f"#lesson-{key}-plot")
        assert ticks and min(px for px, _ in ticks) >= MIN_TICK_PX, (which, key, min(ticks))
    sizes = page.evaluate(TEXT_SIZES_JS, "#lesson-glossary")
    assert min(px for px, _ in sizes) >= MIN_TEXT_PX, (which, min(sizes))


def test_each_stage_fits_one_screen(screen):
    which, page = screen
    height = SCREENS[which]["height"]
    for key in STAGES:
        page.locator(f"#lesson-{key}").scroll_into_view_if_needed()
        box = page.evaluate("(s) => { const r = document.querySelector(s).getBoundingClientRect();"
                            " return [r.height, r.width]; }", f"#lesson-{key}")
        assert box[0] <= height, (which, key, box)
        # The figure fills its stage's width: no plot narrower than half the screen.
        plot_w = page.evaluate("(s) => document.querySelector(s + ' .main-svg').getBoundingClientRect().width",
                               f"#lesson-{key}-plot")
        assert plot_w >= SCREENS[which]["width"] / 2, (which, key, plot_w)
        shot(page, f"lesson-{which}-{key}", f"#lesson-{key}", height=int(box[0]) + 20)


STAGE_TOPS_JS = """() => Array.from(document.querySelectorAll('#explain-lesson .lesson-stage'))
    .map(el => Math.round(el.getBoundingClientRect().top))"""


def test_arrow_keys_bring_one_stage_at_a_time_to_the_top(screen):
    import time

    which, page = screen
    page.locator("#lesson-intro").click()  # the page has the focus, not a box
    page.evaluate("() => window.scrollTo(0, 0)")
    n = len(STAGES)
    moves = [("ArrowRight", i) for i in range(n)] + [("ArrowLeft", i) for i in range(n - 2, -1, -1)]
    waits = []
    for key, i in moves:  # forward to the last stage, then back to the first
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.wait_for_function("(i) => Math.abs(document.querySelectorAll('#explain-lesson .lesson-stage')[i]"
                               ".getBoundingClientRect().top) < 8", arg=i, timeout=5_000)
        waits.append(time.perf_counter() - t0)
        assert page.evaluate("() => window.scrollY") > 0, (which, key, i, page.evaluate(STAGE_TOPS_JS))
    report_times(f"lesson-stage-{which}", 0.3, longest=max(waits), moves=waits)  # timed, not bounded


def test_every_defined_word_carries_its_definition(screen):
    which, page = screen
    terms = page.evaluate(TERMS_JS)
    assert len({t for t, _, _ in terms}) >= 10, terms
    for term, title, shown in terms:
        assert title == GLOSSARY[term], (which, term, title)
        assert shown.strip(), (which, term)
    glossary = text_of(page, "#lesson-glossary")
    for term in {t for t, _, _ in terms}:
        assert term in glossary and GLOSSARY[term] in glossary, (which, term)
    # A hover names the definition: the browser shows the title of the word under the pointer.
    page.locator("#explain-lesson abbr.lesson-term").first.hover()
    assert page.locator("#explain-lesson abbr.lesson-term").first.get_attribute("title") == GLOSSARY[terms[0][0]]


def test_the_last_stage_draws_the_steps_pass_priced_on_the_h200(screen):
    """The step's bars as the browser drew them: the tokens it wrote, then c(rows)/c(1) read off the
    H200's curve file; a run opened alone has no one-token pass of its own, and the stage says so."""
    import json

    which, page = screen
    trace = RunTrace.load(ROOT / "traces" / f"{RUN}.json")
    s = trace.steps[lesson_step(trace)]
    rows = sum(not n.pruned for n in s.tree)
    c_ms = json.loads((ROOT / "data" / "pass_costs" / "nvidia-h200.json").read_text())["curves"][0]["c_ms"]
    drawn = page.evaluate("() => document.querySelector('#lesson-pays-plot .js-plotly-plot').data[0].x")
    assert drawn == pytest.approx([len(s.tokens), c_ms[str(rows)] / c_ms["1"]]), (which, rows, drawn)
    assert "no one-token pass of it was timed" in text_of(page, "#lesson-pays-text"), which


def test_in_detail_keeps_the_six_panels(screen):
    which, page = screen
    page.get_by_role("tab", name="In detail").click()
    page.wait_for_function("() => /Step \\d+ of/.test(document.querySelector('#explain-head')?.innerText || '')",
                           timeout=60_000)
    page.wait_for_function("() => !!document.querySelector('#explain-accept-plot .js-plotly-plot .main-svg')",
                           timeout=60_000)
    assert len(page.locator("#explain-logits-text p").all_inner_texts()) == 2, which
    page.get_by_role("tab", name="Lesson").click()
    page.wait_for_selector("#lesson-slow-plot .main-svg", timeout=30_000)
