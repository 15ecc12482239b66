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


def set_max_new(page, n: int) -> None:
    """Max new tokens through the slider's number box (the range input confirms the value)."""
    from playwright.sync_api import expect

    page.get_by_text(ACCORDION).click()
    box = page.locator("#max-new input[type=number]")
    for attempt in range(3):  # on a busy machine the slider can miss a typed value: type it again
        box.fill(str(n))
        box.press("Enter")
        box.blur()
        try:
            expect(page.locator("#max-new input[type=range]")).to_have_value(str(n), timeout=10_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    page.get_by_text(ACCORDION).click()  # fold it again


def counter_rows(page) -> dict[str, dict[str, str]]:
    """The counters table: each row's lane key (its data-lane) -> {column header: cell text}."""
    rows = page.evaluate("""() => { const head = Array.from(document.querySelectorAll('#counters table.counters th'))
            .map(c => c.innerText.trim());
        return Array.from(document.querySelectorAll('#counters table.counters tr[data-lane]'))
            .map(tr => [tr.dataset.lane, Array.from(tr.cells).map(c => c.innerText.trim()), head]); }""")
    return {key: dict(zip(head, cells)) for key, cells, head in rows}
