"""The race in a real browser: Stop ends it in its final state within one step, the stopped
verdict claims nothing false, the statuses sit above the fold, and a second visitor who
presses Run while a race runs is told to wait and keeps a filled page.

Screenshots go to artifacts/browser/ (stopped.png, phone-top.png, second-tab.png).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from helpers.browser import (DESKTOP, MODEL_WAIT_MS, SHOTS, counter_rows, fresh_page, set_max_new, shot, text_of,
                             tree_data)
from logitspec.analysis.lanes import label
from logitspec.analysis.race import MIN_COMPARED_TOKENS

LONG_RACE = 400  # new tokens: far more than the race gets through before it is stopped
# The Maths example runs past LONG_RACE tokens on the bundled model; the Code example ends on EOS at
# 136, so a race of it could end by itself before a Stop (then the page says Done, not Stopped).
LONG_EXAMPLE = ("Maths", "Jen decides to travel")
STOP_WITHIN_S = 20.0  # a step takes well under 1 s on an idle machine; 2 busy cores are slower
PHONE = {"width": 390, "height": 844}


# ---------------------------------------------------------------- reading the page

def counters(page) -> dict[str, dict[str, str]]:
    """The counters table: lane key -> {column header: cell text}."""
    return counter_rows(page)


def lane_tokens(page) -> dict[str, int]:
    return {lane: int(cells["tokens"]) for lane, cells in counters(page).items()}


def race_plot_text(page) -> str:
    """Every label the race plot drew (legend, end labels), as the SVG's text."""
    return page.evaluate("() => document.querySelector('#race-plot')?.textContent || ''")


def has_plot(page, selector: str) -> bool:
    return page.evaluate("(s) => { const el = document.querySelector(s + ' .js-plotly-plot');"
                         " return !!(el && el.data && el.data.length); }", selector)


def pick_example(page, kind: str = "Code", expect_text: str = "Fibonacci") -> None:
    """Fill the prompt from one of the example questions (a fresh page's prompt is empty)."""
    from playwright.sync_api import expect

    page.get_by_role("button", name=kind).first.click()
    expect(page.locator("#prompt textarea")).to_have_value(re.compile(expect_text), timeout=10_000)


def start_long_race(page, min_tokens: int = 8, min_passes: int = 3) -> None:
    """Run a long race and wait until both lanes are under way (the model may still be loading)."""
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    pick_example(page, *LONG_EXAMPLE)
    set_max_new(page, LONG_RACE)
    page.locator("#run").click()
    try:
        page.wait_for_function(
            """([n, p]) => {
                const c = document.querySelector('#counters');
                if (!c || !c.innerText.includes('racing')) return false;
                const lanes = Object.fromEntries(Array.from(c.querySelectorAll('table.counters tr[data-lane]'))
                    .map(tr => [tr.dataset.lane, Array.from(tr.cells).map(td => td.innerText.trim())]));
                return lanes.vanilla && lanes.logitspec && +lanes.vanilla[1] >= n && +lanes.logitspec[1] >= n
                    && +lanes.logitspec[2] >= p;
            }""", arg=[min_tokens, min_passes], timeout=MODEL_WAIT_MS)
    except Exception as e:  # noqa: BLE001 - say what the page showed instead
        png = shot(page, "race-did-not-start")
        pytest.fail(f"the race did not get under way ({type(e).__name__}): #model-status "
                    f"{text_of(page, '#model-status')!r}; #status {text_of(page, '#status')!r}; "
                    f"#counters {text_of(page, '#counters')!r}; screenshot {png}")


def final_state_js() -> str:
    """True once the page shows a stopped race's final state (status, verdict, no racing)."""
    return """() => {
        const st = (document.querySelector('#status')?.innerText || '').trim();
        const c = document.querySelector('#counters');
        return st.startsWith('Stopped') && !!c && !!c.querySelector('.verdict')
            && !c.innerText.includes('racing');
    }"""


# ---------------------------------------------------------------- a stopped race, shared

@pytest.fixture(scope="module")
def stopped(browser, app_url):
    """A long race stopped five seconds in: the page, how long the final state took, and the counts
    the counters showed before the stop."""
    page = fresh_page(browser, app_url)
    start_long_race(page)
    ticks = []  # the lanes' token counts over five seconds of the race, before the stop
    t0 = time.monotonic()
    while time.monotonic() - t0 < 5 or min(lane_tokens(page).values()) < MIN_COMPARED_TOKENS:
        ticks.append(sum(lane_tokens(page).values()))  # and long enough for a speed-up, on a loaded machine too
        page.wait_for_timeout(100)
    before = lane_tokens(page)
    t0 = time.monotonic()
    page.locator("#stop").click()
    # Wait well past the bound, so a slow stop is measured rather than merely timed out.
    try:
        page.wait_for_function(final_state_js(), timeout=180_000, polling=100)
        took = time.monotonic() - t0
    except Exception:  # noqa: BLE001 - the test reports what the page showed
        took = float("inf")
    page.wait_for_timeout(500)
    png = shot(page, "stopped")
    (SHOTS / "stop.json").write_text(json.dumps({"seconds_to_final_state": took, "tokens_at_stop": before,
                                                 "status": text_of(page, "#status")}), encoding="utf-8")
    yield {"page": page, "took": took, "before": before, "png": png, "ticks": ticks}
    page.context.close()


# ---------------------------------------------------------------- the tests

def status_above_the_fold_on_a_desktop(page) -> None:
    """The model's load state and the run's status on a new desktop page's first screen (1440×900);
    checked on the first tab of test_a_second_tab_waits_on_a_filled_page before its race."""
    page.wait_for_function("() => /Model (loading|ready|not loaded|failed)/.test("
                           "document.querySelector('#model-status')?.innerText || '')", timeout=60_000)
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    boxes = {s: page.locator(s).bounding_box() for s in ("#model-status", "#status")}
    for sel, box in boxes.items():
        assert box is not None and box["height"] > 0, f"{sel} is not shown: {box}"
        assert box["y"] >= 0 and box["y"] + box["height"] <= DESKTOP["height"], (
            f"{sel} is not above the fold at 1440×900: top {box['y']:.0f}, bottom {box['y'] + box['height']:.0f} px")
    assert text_of(page, "#status"), "the run's status is empty on the first screen"


def model_status_above_the_fold_on_a_phone(phone) -> None:
    """The model's load state and Run on a new phone page's first screen (the desktop's: in the
    second-tab test); checked on the page of the phone's first-screen test below, before its race."""
    phone.wait_for_function("() => /Model /.test(document.querySelector('#model-status')?.innerText || '')",
                            timeout=60_000)
    phone.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    phone.wait_for_timeout(500)
    shot(phone, "phone-top")
    where = {s: phone.locator(s).bounding_box() for s in ("#model-status", "#run")}
    report = ", ".join(f"{s}: top {b['y']:.0f}, bottom {b['y'] + b['height']:.0f} px" for s, b in where.items() if b)
    for sel, box in where.items():
        assert box is not None and box["height"] > 0, f"{sel} is not shown on a phone ({report})"
        assert box["y"] + box["height"] <= 2 * PHONE["height"], (
            f"{sel} is below the first screen and one scroll at 390×844 ({report})")


@pytest.mark.slow
@pytest.mark.browser
def test_stop_reaches_the_final_state_within_one_step(stopped):
    from playwright.sync_api import expect

    page = stopped["page"]
    status, verdict = text_of(page, "#status"), text_of(page, "#counters .verdict")
    assert stopped["took"] <= STOP_WITHIN_S, (
        f"after Stop the page took {stopped['took']:.1f} s (bound {STOP_WITHIN_S:.0f} s) to its final state; "
        f"#status: {status!r}; #counters: {text_of(page, '#counters')!r}; screenshot {stopped['png']}")
    assert status.startswith("Stopped"), status
    assert "Stopped after" in verdict, verdict
    assert "DIFFERENT" not in verdict and "DIFFERENT" not in status, verdict
    assert "racing" not in text_of(page, "#counters")
    plot_text = race_plot_text(page)
    assert plot_text and "(running)" not in plot_text, plot_text
    assert "(stopped)" in plot_text, plot_text

    tokens = lane_tokens(page)
    assert set(tokens) == {"vanilla", "logitspec"}, tokens
    assert all(tokens[lane] >= stopped["before"][lane] for lane in tokens), (stopped["before"], tokens)
    assert max(tokens.values()) < LONG_RACE, tokens

    # The explorer holds the steps decoded so far, from step 0; Next moves on and redraws.
    label = text_of(page, "#step-label")
    m = re.search(r"Step 0 \(steps 0–(\d+)\)", label)
    assert m and int(m.group(1)) >= 1, label
    before = tree_data(page)
    assert before
    page.locator("#next").click()
    page.wait_for_function(
        "() => (document.querySelector('#step-label')?.innerText || '').includes('Step 1 (steps 0–')",
        timeout=30_000)
    page.wait_for_function("(b) => { const el = document.querySelector('#tree-plot .js-plotly-plot');"
                           " return el && el.data && JSON.stringify(el.data.map(t => [t.x, t.y, t.text, "
                           "t.hovertext])) !== b; }", arg=before, timeout=30_000)

    # The race, every lane of the steps decoded before the stop, downloads from the Traces tab.
    page.get_by_role("tab", name="Traces").click()
    button = page.locator("#download")
    expect(button).to_be_visible(timeout=10_000)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    from logitspec.analysis.race import read_race

    path = Path(info.value.path())
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == "logitspec-race/1"
    race = read_race(path)  # a trace's tokens are its steps' accepted tokens
    assert race.stop_reason == "stopped" and set(race.lanes) == set(tokens), (race.stop_reason, tokens)
    trace = race.lanes["logitspec"]
    assert 0 < len(trace.tokens) < LONG_RACE, len(trace.tokens)
    assert {n: len(t.tokens) for n, t in race.lanes.items()} == tokens, tokens
    assert len(trace.steps) == int(m.group(1)) + 1, (len(trace.steps), label)
    page.get_by_role("tab", name="Step explorer").click()


@pytest.mark.slow
@pytest.mark.browser
def test_the_stopped_verdict_claims_nothing_false(stopped):
    page = stopped["page"]
    tokens = lane_tokens(page)
    verdict = text_of(page, "#counters .verdict")
    m = re.search(r"Stopped after (\d+) tokens \((.*?)\)\. ", verdict)
    assert m, verdict
    assert int(m.group(1)) == tokens["logitspec"], (verdict, tokens)
    stated = {name.strip(): int(n) for name, n in re.findall(r"([^;]+): (\d+)", m.group(2))}
    shown = {label(name): n for name, n in tokens.items()}  # the verdict names lanes by the lane table's labels
    assert stated == shown, f"the verdict states {stated}, the table {shown}: {verdict!r}"
    n = re.search(r"Over the first (\d+) tokens", verdict)
    assert n, verdict
    assert int(n.group(1)) == min(tokens.values()), (verdict, tokens)
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict, verdict
    # The status line gives the same verdict.
    status = text_of(page, "#status")
    assert f"Over the first {n.group(1)} tokens" in status and "DIFFERENT" not in status, status


@pytest.mark.slow
@pytest.mark.browser
def test_a_second_tab_waits_on_a_filled_page(browser, app_url):
    first = fresh_page(browser, app_url, DESKTOP)
    try:  # a new desktop page before its race: the model status above the fold (one page load less)
        status_above_the_fold_on_a_desktop(first)
    except BaseException:
        first.context.close()
        raise
    second = None
    try:
        start_long_race(first, min_tokens=3, min_passes=1)

        second = fresh_page(browser, app_url)
        # The first screen is filled although a race holds the model.
        second.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
        second.wait_for_selector("#counters table", timeout=60_000)
        assert has_plot(second, "#tree-plot")
        assert lane_tokens(second), text_of(second, "#counters")

        pick_example(second)
        set_max_new(second, 20)
        assert "racing" in text_of(first, "#counters"), "the first race ended before the second tab ran"
        second.locator("#run").click()
        try:
            second.wait_for_function(
                "() => (document.querySelector('#status')?.innerText || '').includes('Waiting for your turn')",
                timeout=5_000)
        finally:
            second.wait_for_timeout(500)
            shot(second, "second-tab")
        assert has_plot(second, "#tree-plot"), "the waiting tab's tree plot was emptied"
        assert lane_tokens(second), f"the waiting tab's counters were emptied: {text_of(second, '#counters')!r}"
    finally:
        # Leave nothing running: stop the queued race, then the running one.
        if second is not None:
            second.locator("#stop").click()
        first.locator("#stop").click()
        first.wait_for_function(final_state_js(), timeout=60_000)
        if second is not None:
            second.wait_for_function(
                "() => (document.querySelector('#status')?.innerText || '').trim().startsWith('Stopped')",
                timeout=60_000)
            second.context.close()
        first.context.close()


@pytest.mark.slow
@pytest.mark.browser
def test_the_counters_tick_between_redraws(stopped):
    """The counters come on the page's own timer, twice a second, besides the figures' redraws
    (two seconds apart at least): five seconds of a race show four counts or more."""
    assert len(set(stopped["ticks"])) >= 4, stopped["ticks"]


def in_view(page, selector: str) -> dict:
    """Where `selector` lies on the screen, and whether it lies whole inside it."""
    return page.evaluate("""(s) => { const r = document.querySelector(s)?.getBoundingClientRect();
        return r ? {top: Math.round(r.top), bottom: Math.round(r.bottom),
                    whole: r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight} : {whole: false}; }""",
                         selector)


@pytest.mark.slow
@pytest.mark.browser
def test_a_phones_first_screen_shows_the_result_and_a_race_its_counters(browser, app_url):
    """At 390×844 the recorded race's verdict and speed-up are on the first screen, its table above
    the form and its figure just below it; Run brings the live counters into view. Before that, on
    the same new page: the model's status and Run near the top."""
    page = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True).new_page()
    page.goto(app_url, wait_until="domcontentloaded")
    model_status_above_the_fold_on_a_phone(page)
    page.wait_for_selector("#counters .verdict", timeout=60_000)
    page.wait_for_timeout(500)
    shot(page, "phone-first-screen")
    verdict = in_view(page, "#counters .verdict")
    assert verdict["whole"], f"the verdict is not on a phone's first screen: {verdict}"
    assert re.search(r"\d\.\d\d×", text_of(page, "#counters .verdict")), text_of(page, "#counters .verdict")
    assert "speed-up" in text_of(page, "#counters table.counters"), "the table's speed-up column is missing"
    race = page.locator("#race-plot").bounding_box()
    assert race is not None and race["y"] < 2 * PHONE["height"], f"the race figure is far down: {race}"
    page.wait_for_function("() => /Model ready/.test(document.querySelector('#model-status')?.innerText || '')",
                           timeout=MODEL_WAIT_MS)
    set_max_new(page, LONG_RACE)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#counters')?.innerText || '').includes('racing')",
                           timeout=MODEL_WAIT_MS)
    counters_at = in_view(page, "#counters")
    shot(page, "phone-racing")
    page.locator("#stop").click()
    page.wait_for_function(final_state_js(), timeout=180_000, polling=200)
    assert counters_at["top"] >= 0 and counters_at["top"] < PHONE["height"] / 2, (
        f"the live counters are not in view during a race on a phone: {counters_at}")
    page.context.close()


# The table's cells past its scrolling box's right edge (px): the last column's border cut.
PAST_EDGE_JS = """() => { const w = document.querySelector('#counters .counters-wrap');
  return Math.max(...[...w.querySelectorAll('th, td')].map((c) => c.getBoundingClientRect().right)) - w.getBoundingClientRect().right; }"""


def test_a_stopped_races_table_reads_whole_on_a_phone(stopped):
    """Last of the stopped race's checks: it leaves the page at a phone's width. A stopped race has
    seven columns of numbers ("tokens / s, first N tokens"), where "compute" ran into its neighbour."""
    from helpers.browser import resize
    from test_every_lane_fits_browser import TABLE_JS

    page = stopped["page"]
    resize(page, PHONE)
    assert "first" in text_of(page, "#counters table"), text_of(page, "#counters table")  # the compared columns
    assert page.evaluate(TABLE_JS) == [], page.evaluate(TABLE_JS)
    assert page.evaluate(PAST_EDGE_JS) <= 0.5, page.evaluate(PAST_EDGE_JS)
    shot(page, "stopped-phone", "#counters", 900)
