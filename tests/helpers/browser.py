"""What the browser tests share (not a test module): Debian's chromium and its arguments,
fresh pages, screenshots, and reading and setting the app's page."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.paths import ROOT
from visual.render import BROWSER_ARGS

CHROMIUM = Path("/usr/bin/chromium")
ARGS = BROWSER_ARGS  # the figure renderer's chromium flags: one list for every browser here
SHOTS = ROOT / "artifacts" / "browser"
MODEL_WAIT_MS = 300_000  # the model loads in the background at start: minutes on a busy machine
DESKTOP = {"width": 1440, "height": 900}
ACCORDION = "Decoder parameters (paper defaults)"


def chromium_path() -> str:
    """Debian's chromium; its absence fails the test (`make test` installs it, never skip)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make browser does)")
    return str(CHROMIUM)


def fresh_page(browser, app_url, viewport=DESKTOP):
    """A page in its own browser context: a new visitor, a new Gradio session."""
    ctx = browser.new_context(viewport=viewport, accept_downloads=True)
    pg = ctx.new_page()
    pg.goto(app_url, wait_until="domcontentloaded")
    return pg


# Plotly's events after a drawing: a figure's own fitting (ui/figures.js) answers them with more.
DRAWN_EVENTS = ("plotly_afterplot", "plotly_relayout", "plotly_restyle", "plotly_redraw", "plotly_react")
QUIET_JS = """(quiet) => {
  const s = window.__drawn || (window.__drawn = {last: performance.now(), seen: new WeakSet()});
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    if (s.seen.has(gd) || typeof gd.on !== 'function') continue;
    s.seen.add(gd);
    s.last = performance.now();
    for (const ev of %s) gd.on(ev, () => { s.last = performance.now(); });
  }
  return performance.now() - s.last > quiet;
}""" % list(DRAWN_EVENTS)


def settle(page, quiet_ms: int = 300, timeout: int = 60_000) -> None:
    """Wait until no figure on the page has been drawn for `quiet_ms`: the fitting, windowing and
    resizing a drawing sets off are over. Only for what the page does by itself: a reply the
    server has still to send needs its own condition first."""
    page.evaluate("() => { if (window.__drawn) window.__drawn.last = performance.now(); }")
    page.wait_for_function(QUIET_JS, arg=quiet_ms, timeout=timeout, polling=50)


# Every autosized figure on show laid out at its element's width (the page's own test for
# calling Plotly's resize, ui/figures.js).
LAID_OUT_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).every(gd =>
  !gd.offsetWidth || !gd._fullLayout || gd.layout.width || Math.abs(gd._fullLayout.width - gd.offsetWidth) <= 1)"""


def resize(page, viewport: dict, timeout: int = 30_000) -> None:
    """A new window size, once every figure is laid out again at its new width and the fitting
    that sets off is over: the relayout starts a frame or more after the resize, and on a busy
    machine later than a quiet spell of drawing events would show."""
    page.set_viewport_size(viewport)
    page.wait_for_function(LAID_OUT_JS, timeout=timeout, polling=100)
    settle(page, 600)


TAB_SHOWN_JS = "(t) => document.querySelector('#tabs [role=tab][aria-selected=true]')?.innerText.trim() === t"
STEP_LABEL_JS = "() => (document.querySelector('#step-label')?.innerText || '').trim()"


def next_step(page, timeout: int = 30_000) -> None:
    """Press the explorer's Next and wait for the step it opens to be drawn (the label and the
    figures of a step come in one update, from the page's held steps or from the server)."""
    before = page.evaluate(STEP_LABEL_JS)
    page.locator("#next").click()
    page.wait_for_function(f"(b) => ({STEP_LABEL_JS})() !== b", arg=before, timeout=timeout)
    settle(page)


def text_of(page, selector: str) -> str:
    return page.evaluate("(s) => (document.querySelector(s)?.innerText || '').trim()", selector)


def tree_data(page) -> str:
    """The tree plot's traces as JSON (what Plotly actually drew)."""
    return page.evaluate("""() => {
        const el = document.querySelector('#tree-plot .js-plotly-plot');
        if (!el || !el.data) return '';
        return JSON.stringify(el.data.map(t => [t.x, t.y, t.text, t.hovertext]));
    }""")


def shot(page, name: str, from_selector: str | None = None, height: int = 1000) -> Path:
    """A screenshot of the page: the top of it, or `height` pixels from an element down."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    if from_selector is None:
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_timeout(300)
        page.screenshot(path=str(path))
    else:
        top = page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY",
                            from_selector)
        width = page.viewport_size["width"]
        page.screenshot(path=str(path), full_page=True,
                        clip={"x": 0, "y": max(0, top - 10), "width": width, "height": height})
    return path


# Gradio draws a folded accordion's components only when it first opens, and a frame or more
# later sets each to the value it was built with: a value typed before that is overwritten. Waiting
# for every component and two frames first, and reading the values again once folded, keeps what
# was typed (docs/testing.md).
PARAMS_DRAWN_JS = """(labels) => {
  const box = document.querySelector('#decoder-params');
  const text = box ? box.innerText : '';
  return labels.every(l => text.includes(l));
}"""
TWO_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def set_parameters(page, values: dict[str, object]) -> None:
    """Type each value into its component's number box (`{"#max-new": 40}`) in the folded
    decoder parameters and fold them again; the values are read back once folded, and typed
    again if the first drawing overwrote them."""
    from ui.form import SETTINGS

    labels = [f.label for f in SETTINGS]
    for _ in range(3):
        page.get_by_text(ACCORDION).click()
        page.wait_for_function(PARAMS_DRAWN_JS, arg=labels, timeout=30_000)
        page.evaluate(TWO_FRAMES_JS)
        for selector, value in values.items():
            _type_number(page, selector, value)
        page.get_by_text(ACCORDION).click()  # fold it again
        page.evaluate(TWO_FRAMES_JS)
        page.wait_for_timeout(200)  # room for a late first drawing: nothing on the page says it came
        held = {sel: page.locator(f"{sel} input[type=number]").input_value() for sel in values}
        if all(held[sel] == str(v) for sel, v in values.items()):
            return
    raise AssertionError(f"the decoder parameters did not keep the typed values: {held} against {values}")


def _type_number(page, selector: str, value) -> None:
    """Type into a component's number box until it (and a slider's range input) shows the value."""
    from playwright.sync_api import expect

    box, rng = page.locator(f"{selector} input[type=number]"), page.locator(f"{selector} input[type=range]")
    for attempt in range(3):
        box.fill(str(value))
        box.press("Enter")
        box.blur()
        try:
            expect(box).to_have_value(str(value), timeout=10_000)
            if rng.count():
                expect(rng).to_have_value(str(value), timeout=10_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def set_max_new(page, n: int) -> None:
    """Max new tokens through the slider's number box."""
    set_parameters(page, {"#max-new": n})


def counter_rows(page) -> dict[str, dict[str, str]]:
    """The counters table: each row's lane key (its data-lane) -> {column header: cell text}."""
    rows = page.evaluate("""() => { const head = Array.from(document.querySelectorAll('#counters table.counters th'))
            .map(c => c.innerText.trim());
        return Array.from(document.querySelectorAll('#counters table.counters tr[data-lane]'))
            .map(tr => [tr.dataset.lane, Array.from(tr.cells).map(c => c.innerText.trim()), head]); }""")
    return {key: dict(zip(head, cells)) for key, cells, head in rows}
