"""One truth on every tab, and no dead end, in a real browser at 1440×900, on a 1920×1080
projector and on a touch phone at 390×844: every panel scrolls or fits (the retrieval panel's every lookup can be reached), the
what-if sliders never put an error on the page, the prompt box shows the prompt of the run on
screen, a live race clears the recording's answer and figures at once, the trie view has its
own key and keeps its labels readable inside the plot, a phone's headers break between words
and a swipe over the tree scrolls the page, and log axes label only 1, 2 and 5 times a power of ten.

Screenshots: artifacts/browser/one-truth-trie-{1440,1920,390}.png, one-truth-retrieval.png.
"""
from __future__ import annotations

import math
import re

import pytest

from helpers.browser import DESKTOP, TAB_SHOWN_JS, set_max_new, settle, shot, text_of
from helpers.run_files import RACE, SHIPPED

PHONE = {"width": 390, "height": 844}
PROJECTOR = {"width": 1920, "height": 1080}
LINK = "?trace=coding-122&step=5&tab=explorer"  # a step whose retrieval panel lists 64 g2 lookups
TABS = ("Step explorer", "Retrieval debugger", "Observations", "Explain", "Traces")
ERROR_BADGE = "() => Array.from(document.querySelectorAll('.error')).filter(e => e.offsetParent !== null).length"
# Boxes whose content runs past them without a scrollbar (Gradio's own slider rows overflow by 3 px).
OVERFLOWS = """() => Array.from(document.querySelectorAll('.block, .block *')).filter(e => e.offsetParent !== null
    && !e.closest('.js-plotly-plot') && e.clientHeight > 0 && e.scrollHeight > e.clientHeight + 4
    && getComputedStyle(e).overflowY === 'visible' && !['INPUT', 'TEXTAREA'].includes(e.tagName))
    .map(e => `${e.tagName}#${e.id}.${e.className}: ${e.clientHeight} px box, ${e.scrollHeight} px content`)"""
# Header texts broken inside a word: a character on a lower line than the one before it, with no
# space, slash or hyphen between them.
BROKEN_WORDS = """(sel) => Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent !== null).flatMap(th => {
    const out = [], walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT), r = document.createRange();
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        let top = null, prev = '';
        for (let i = 0; i < n.length; i++) {
            r.setStart(n, i); r.setEnd(n, i + 1);
            const box = r.getClientRects()[0];
            if (!box) continue;
            if (top !== null && box.top > top + 2 && !/[\\s\\/-]/.test(prev) && !/\\s/.test(n.data[i])) out.push(th.innerText);
            top = box.top; prev = n.data[i];
        }
    }
    return out; })"""
TRIE_SHOWN = ("() => { const el = document.querySelector('#tree-plot .js-plotly-plot');"
              " return !!(el && el.layout && el.layout.meta && el.layout.meta.shared !== undefined); }")


def _page(browser, app_url, viewport, query: str = LINK):
    touch = viewport["width"] < 640
    ctx = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)
    page = ctx.new_page()
    page.goto(app_url.rstrip("/") + "/" + query, wait_until="domcontentloaded")
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=90_000)
    page.wait_for_function("() => (document.querySelector('#step-label')?.innerText || '').startsWith('Step ')",
                           timeout=60_000)
    return page


@pytest.fixture(scope="module")
def desktop(browser, app_url):
    page = _page(browser, app_url, DESKTOP)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def projector(browser, app_url):
    page = _page(browser, app_url, PROJECTOR)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def phone(browser, app_url):
    page = _page(browser, app_url, PHONE)
    yield page
    page.context.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("screen", ["desktop", "projector", "phone"])
def test_every_panel_scrolls_or_fits(request, screen):
    page = request.getfixturevalue(screen)
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_function(TAB_SHOWN_JS, arg=tab)
        settle(page, 500)  # the tab's figures are laid out when it is first shown
        try:  # a tab still drawing its panels can be caught mid-reply, for seconds on a busy machine: wait
            page.wait_for_function(f"() => ({OVERFLOWS})().length === 0", timeout=60_000)
        except Exception:
            pytest.fail(f"{screen}, {tab}: content runs out of its box: {page.evaluate(OVERFLOWS)}")
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_selector("#retrieval details")
    # The retrieval panel holds its lookups in its box: scrolled to its end, the last g2 lookup shows in it.
    box = page.evaluate("""() => { const e = document.querySelector('#retrieval');
        e.scrollTop = e.scrollHeight;
        const last = e.querySelector('details').lastElementChild.getBoundingClientRect(), me = e.getBoundingClientRect();
        return {content: e.scrollHeight, box: e.clientHeight, overflow: getComputedStyle(e).overflowY,
                last_bottom: last.bottom, bottom: me.bottom, view: window.innerHeight}; }""")
    assert box["content"] > box["box"] and box["overflow"] == "auto", box
    assert box["box"] <= box["view"] and box["last_bottom"] <= box["bottom"] + 1, box
    # readable at every width: a phone puts it under the candidates, never in a sliver beside them
    width = page.evaluate("() => document.querySelector('#retrieval').getBoundingClientRect().width")
    assert width >= min(300, page.viewport_size["width"] - 60), f"{screen}: the retrieval view is {width:.0f} px wide"
    if screen == "desktop":
        page.locator("#retrieval").scroll_into_view_if_needed()
        shot(page, "one-truth-retrieval", "#retrieval", 900)


@pytest.mark.slow
@pytest.mark.browser
def test_the_what_if_sliders_never_put_an_error_on_the_page(desktop):
    desktop.get_by_role("tab", name="Retrieval debugger").click()
    desktop.wait_for_selector("#debug-table table", timeout=30_000)
    for slider, typed in (("#whatif-k", "999"), ("#whatif-continuation", "0"), ("#whatif-k", "-3"),
                          ("#whatif-continuation", "1000")):
        box = desktop.locator(f"{slider} input[type=number]")
        box.fill(typed)
        box.press("Enter")
        box.blur()
        desktop.locator("#whatif-run").click()
        desktop.wait_for_timeout(2500)  # an error badge would come with the reply
        assert desktop.evaluate(ERROR_BADGE) == 0, f"{slider} = {typed}"
        assert desktop.locator("#whatif-plot .js-plotly-plot").count() == 1
    desktop.get_by_role("tab", name="Step explorer").click()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("screen", ["desktop", "projector", "phone"])
def test_the_trie_has_its_own_key_and_keeps_inside_the_plot(request, screen):
    page = request.getfixturevalue(screen)
    page.get_by_role("tab", name="Step explorer").click()
    page.locator("#tree-view").get_by_label("trie").check()
    page.wait_for_function(TRIE_SHOWN, timeout=30_000)
    settle(page)  # the page fits the trie to its width after drawing it
    got = page.evaluate("""() => {
        const gd = document.querySelector('#tree-plot .js-plotly-plot'), lay = gd._fullLayout, ax = lay.xaxis;
        const rect = (s) => { const e = gd.querySelector(s); return e && e.getBoundingClientRect(); };
        const left = gd.getBoundingClientRect().left + lay._size.l, right = left + lay._size.w;
        // Labels whose centre is in the plot's x range are drawn; the rest are clipped away.
        const labels = Array.from(gd.querySelectorAll('.cartesianlayer .scatterlayer text')).map(t => t.getBoundingClientRect())
            .filter(b => b.width > 0 && (b.left + b.right) / 2 >= left && (b.left + b.right) / 2 <= right);
        return {legend: rect('.legend'), title: rect('.g-xtitle'), right: right, svg: gd.getBoundingClientRect().right,
                labels_right: Math.max(...labels.map(b => b.right)), n_labels: labels.length,
                col_px: ax._length / Math.abs(ax.range[1] - ax.range[0]),
                slider_text: Array.from(gd.querySelectorAll('.rangeslider-rangeplot text'))
                    .filter(t => getComputedStyle(t).display !== 'none' && t.textContent).length,
                key: document.querySelector('#tree-side-panel .tree-key').innerText,
                caption: document.querySelector('#tree-plot-caption').innerText};
    }""")
    legend, title = got["legend"], got["title"]
    assert legend is None or legend["bottom"] <= title["top"] or legend["top"] >= title["bottom"], got
    assert "pruned, not verified: hollow" in got["key"] and "dashed" not in got["key"], got["key"]
    assert got["caption"].startswith("Verified trie, step 5"), got["caption"]
    assert got["n_labels"] > 0 and got["labels_right"] <= got["svg"], got
    assert got["col_px"] >= 90, f"{screen}: {got['col_px']:.0f} px a depth column: labels overlap"
    assert got["slider_text"] == 0, "the range slider's copy of the tree draws its labels as boxes"
    width = page.viewport_size["width"]
    page.locator("#tree-row").scroll_into_view_if_needed()
    shot(page, f"one-truth-trie-{width}", "#tree-row", 900)
    page.locator("#tree-view").get_by_label("lanes").check()
    page.wait_for_function(f"() => !({TRIE_SHOWN})()", timeout=30_000)
    assert "dashed" in text_of(page, "#tree-side-panel")  # the lanes' key again


@pytest.mark.slow
@pytest.mark.browser
def test_a_phone_breaks_headers_between_words_and_a_swipe_over_the_tree_scrolls(phone):
    phone.get_by_role("tab", name="Step explorer").click()
    assert phone.evaluate(BROKEN_WORDS, "#counters th") == []
    cdp = phone.context.new_cdp_session(phone)
    top = phone.evaluate("document.querySelector('#tree-plot .nsewdrag').getBoundingClientRect().top + window.scrollY")
    phone.evaluate("(y) => window.scrollTo(0, y)", top - 100)
    phone.wait_for_timeout(500)
    box = phone.locator("#tree-plot .nsewdrag").first.bounding_box()
    # Over the plot where the screen shows it: a phone's whole tree runs past the screen's edge.
    x, y = int(min(box["x"] + box["width"] / 2, (box["x"] + phone.viewport_size["width"]) / 2)), 600
    assert phone.evaluate("([x, y]) => document.elementFromPoint(x, y).classList.contains('nsewdrag')", [x, y])
    before = phone.evaluate("window.scrollY")
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for i in range(1, 16):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - 20 * i}]})
        phone.wait_for_timeout(16)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    phone.wait_for_timeout(800)
    assert phone.evaluate("window.scrollY") - before > 100, "a swipe over the tree did not scroll the page"
    phone.get_by_role("tab", name="Retrieval debugger").click()
    phone.wait_for_selector("#debug-table table", timeout=30_000)
    assert phone.evaluate(BROKEN_WORDS, "#debug-table th") == []
    phone.get_by_role("tab", name="Step explorer").click()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("screen", ["desktop", "projector", "phone"])
def test_log_axes_label_one_two_and_five_times_a_power_of_ten(request, screen):
    page = request.getfixturevalue(screen)
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_selector("#cand-plot .js-plotly-plot .ytick text")
    ticks = page.evaluate("() => Array.from(document.querySelectorAll('#cand-plot .ytick text')).map(t => t.textContent)")
    assert 2 <= len(ticks) <= 8, ticks
    for t in (t.replace("\u200b", "") for t in ticks):  # Plotly puts zero-width spaces around a superscript
        value = float(re.sub(r"^(?:(\d)×)?10([−-]\d+)$", lambda m: f"{m[1] or 1}e{m[2].replace('−', '-')}", t))
        mantissa = round(value / 10 ** math.floor(math.log10(value) + 1e-9))
        assert value <= 1 and mantissa in (1, 2, 5), ticks


@pytest.mark.slow
@pytest.mark.browser
def test_the_prompt_box_shows_the_prompt_of_the_run_on_screen(browser, app_url, tmp_path):
    from logitspec.analysis.race import load_race

    prompt_of = {p.name: next(iter(load_race(p)[0].values())).prompt_text for p in (RACE, SHIPPED)}
    page = _page(browser, app_url, DESKTOP, "")  # the first screen: the recorded race
    box = page.locator("#prompt textarea")
    page.wait_for_function("(p) => document.querySelector('#prompt textarea').value === p", arg=prompt_of[RACE.name],
                           timeout=30_000)
    page.get_by_role("tab", name="Traces").click()
    for name in (SHIPPED.name, "translation-161.json"):  # from one recorded run to another
        page.locator("#shipped input").click()
        page.get_by_role("option", name=name).click()
        page.wait_for_function("(n) => (document.querySelector('#status')?.innerText || '').includes(n)",
                               arg=name, timeout=30_000)
        page.wait_for_timeout(500)
        want = prompt_of.get(name) or "Translate German to English"
        assert box.input_value().startswith(want), (name, box.input_value()[:80])
    page.locator("#upload input[type=file]").set_input_files(str(RACE))
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('a race of')",
                           timeout=60_000)
    page.wait_for_timeout(500)
    assert box.input_value() == prompt_of[RACE.name]
    page.context.close()


@pytest.mark.slow
@pytest.mark.browser
def test_a_live_race_clears_the_recordings_answer_and_figures_at_once(browser, app_url):
    from logitspec.analysis.race import load_race, result_of

    speedup = f"{result_of(load_race(RACE)[0]).speedups['logitspec']:.2f}×"  # the recording's, on the first screen
    page = _page(browser, app_url, DESKTOP, "")
    page.wait_for_selector("#race-plot .legend")
    recorded = {"answer": page.locator("#answer textarea").input_value(), "caption": text_of(page, "#race-plot-caption"),
                "speedup": speedup}
    legend = page.evaluate("() => document.querySelector('#race-plot .legend').textContent")
    assert recorded["answer"] and speedup in recorded["caption"] and speedup in legend, (recorded, legend)
    set_max_new(page, 6)
    page.locator("#prompt textarea").fill("Name three colours.")
    # Every 20 ms while the counters say the race is running: does a panel still show the recording?
    page.evaluate("""(rec) => { window.stale = []; window.polls = 0; window.timer = setInterval(() => {
        if (!(document.querySelector('#counters')?.innerText || '').includes('racing')) return;
        window.polls += 1;
        const shown = {answer: document.querySelector('#answer textarea').value,
                       caption: (document.querySelector('#race-plot-caption')?.innerText || '').trim(),
                       legend: (document.querySelector('#race-plot .legend')?.textContent || '')};
        if (shown.answer === rec.answer || (rec.caption && shown.caption === rec.caption) || shown.legend.includes(rec.speedup))
            window.stale.push(shown);
    }, 20); }""", recorded)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=420_000)
    stale, polls = page.evaluate("() => { clearInterval(window.timer); return [window.stale, window.polls]; }")
    assert polls > 0, "the counters never said the race was running"
    assert stale == [], f"the recording's panels beside live counters: {stale[:2]}"
    page.context.close()
