"""Time the app as a presenter uses it, in Debian's chromium on this machine: a step move in the
Step explorer and in Explain's detail (in normal and in large type), Play paused by one press, a
filter in the retrieval debugger, and a race's wall clock against its lanes' own compute.

    python scripts/time_presenting.py [--url URL] [--moves 10] [--max-new-tokens 128] [--out FILE]

Without --url it starts app.py on a free port (as `make demo` would, on the bundled model) and
stops it at the end. Each move is timed in the page, from the key press to the frame that paints
every moved figure at its new step; the presenter's pause between moves is 1 s. The race is the
first screen's prompt with the prompt-lookup lane, in the page and then through the app's API
with no browser running; its lanes' compute is what the counters say. Prints the
figures and writes them as JSON (with the CPU named) to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.local_app import start, stop  # noqa: E402  (the project's root, above)

SCREEN = {"width": 1920, "height": 1080}
RUN = "coding-122"
PAUSE_MS = 1000  # the presenter's pause between moves
PAINTED_JS = """() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"""
PLOT_AT_JS = """([sel, n]) => Array.from(document.querySelectorAll(sel)).every(g => g.layout && g.layout.meta
    && g.layout.meta.step === n) && document.querySelectorAll(sel).length > 0"""
# Each counters row: its lane's key (data-lane), its tokens and its compute seconds ("1.23 s").
LANES_JS = """() => Array.from(document.querySelectorAll('#counters table.counters tr[data-lane]'))
    .map(tr => [tr.dataset.lane, tr.cells[1].innerText.trim(), tr.cells[5].innerText.trim()])"""


def open_page(browser, url: str):
    context = browser.new_context(viewport=SCREEN)
    context.add_init_script(MOVE_CLOCK_JS)
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("() => /Model ready/.test(document.querySelector('#model-status')?.innerText || '')",
                           timeout=300_000)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=120_000)  # hidden on other tabs
    return page


# A move's clock, in the page: from the key press (its keydown event's time stamp) to the first frame
# after every plot in `window.__moveWatch.plots` reached step `.step` (the frame that paints them),
# so the figure is the presenter's wait and not this script's round trips to the browser.
MOVE_CLOCK_JS = """
window.addEventListener('keydown', (e) => {
  const watch = window.__moveWatch;
  if (!watch) return;
  window.__moveWatch = null;
  const at = () => Array.from(document.querySelectorAll(watch.plots)).every(
    (g) => g.layout && g.layout.meta && g.layout.meta.step === watch.step);
  const poll = () => {
    if (!at() && performance.now() - e.timeStamp < 60000) { requestAnimationFrame(poll); return; }
    requestAnimationFrame(() => { window.__moveMs = at() ? performance.now() - e.timeStamp : -1; });
  };
  requestAnimationFrame(poll);
}, true);
"""


def time_moves(page, plots: str, moves: int, start: int) -> list[float]:
    """Seconds from each → to every plot in `plots` painted at the next step, clocked in the page."""
    waits = []
    for n in range(start + 1, start + 1 + moves):
        page.wait_for_timeout(PAUSE_MS)
        page.evaluate("([plots, step]) => { window.__moveMs = null; window.__moveWatch = {plots, step}; }", [plots, n])
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => window.__moveMs !== null", timeout=70_000)
        ms = page.evaluate("window.__moveMs")
        if ms < 0:
            raise SystemExit(f"the move to step {n} did not reach every plot in {plots} within 60 s")
        waits.append(ms / 1000)
    return waits


@contextlib.contextmanager
def _page_at(browser, link: str, page=None):
    """`page` as given, left open; else a page of its own at `link`, closed after."""
    if page is not None:
        yield page
        return
    own = open_page(browser, link)
    try:
        yield own
    finally:
        own.context.close()


def explorer_moves(browser, url: str, moves: int, extra: str = "", page=None) -> list[float]:
    """Step moves in the explorer; `extra` adds to the link (`&present=1`: with large type).
    `page`: one already open at step 0 (from open_page), left open; else a page of its own."""
    with _page_at(browser, url + f"?trace={RUN}&step=0{extra}", page) as pg:
        pg.wait_for_function(PLOT_AT_JS, arg=["#tree-plot .js-plotly-plot", 0], timeout=60_000)
        pg.locator("#step-label").click()  # the page has the focus, not a box
        return time_moves(pg, "#tree-plot .js-plotly-plot, #cand-plot .js-plotly-plot", moves, 0)


def explain_moves(browser, url: str, moves: int, extra: str = "", page=None) -> list[float]:
    """Step moves in Explain's detail; `page`: one already open there at step 0, left open."""
    with _page_at(browser, url + f"?trace={RUN}&step=0&tab=explain{extra}", page) as pg:
        if page is None:
            pg.locator("#explain-levels").get_by_role("tab", name="In detail").click()
        panels = "#explain-detail .js-plotly-plot"
        pg.wait_for_function(PLOT_AT_JS, arg=[panels, 0], timeout=60_000)
        pg.locator("#explain-head").click()
        return time_moves(pg, panels, moves, 0)


def play_pause(browser, url: str) -> dict:
    """Play, then one press of p after two steps: did that one press pause it?"""
    page = open_page(browser, url + f"?trace={RUN}&step=0")
    label = "() => (document.querySelector('#step-label')?.innerText || '')"
    page.locator("#play").click()
    page.wait_for_function(f"() => ({label})().startsWith('Step 2 (')", timeout=60_000)
    page.locator("#step-label").click()
    t0 = time.perf_counter()
    page.keyboard.press("p")
    page.wait_for_function("() => /Play/.test(document.querySelector('#play')?.innerText || '')", timeout=30_000)
    answered = time.perf_counter() - t0
    at = page.evaluate(label)
    page.wait_for_timeout(3000)  # three Play intervals: a step would have come by now
    kept = page.evaluate(label) == at
    page.context.close()
    return {"paused_by_one_press": kept, "seconds_to_play_button": answered, "step_at_pause": at.split(" (")[0]}


def debugger_filter(browser, url: str) -> list[float]:
    """Seconds from a click on an outcome to the table showing the new rows, off then on, twice."""
    page = open_page(browser, url + f"?trace={RUN}&tab=debugger")
    page.wait_for_selector("#debug-table table", timeout=60_000)
    rows = "() => document.querySelectorAll('#debug-table tbody tr.main').length"
    waits = []
    for _ in range(2):
        for _ in range(2):
            before = page.evaluate(rows)
            page.wait_for_timeout(PAUSE_MS)
            t0 = time.perf_counter()
            page.locator("#outcome").get_by_text("g1 matched").click()
            page.wait_for_function(f"(n) => ({rows})() !== n", arg=before, timeout=60_000)
            page.evaluate(PAINTED_JS)
            waits.append(time.perf_counter() - t0)
    page.context.close()
    return waits


def race(browser, url: str, max_new: int) -> dict:
    """The first screen's prompt, with prompt lookup: wall clock from Run to Done, and the lanes'
    compute as the counters say."""
    from logitspec.analysis.race import load_race
    from ui.form import lane_boxes

    prompt = load_race(ROOT / "traces" / "races" / "summarization-242.json")[0]["vanilla"].prompt_text
    page = open_page(browser, url)
    page.locator("#prompt textarea").fill(prompt)
    page.get_by_text("Decoder parameters (paper defaults)").click()
    box = page.locator("#max-new input[type=number]")
    box.fill(str(max_new))
    box.press("Enter")
    box.blur()
    page.wait_for_function("(n) => document.querySelector('#max-new input[type=range]')?.value === n",
                           arg=str(max_new), timeout=10_000)
    page.get_by_label(next(b.label for b in lane_boxes() if b.lane == "pld")).check()
    t0 = time.perf_counter()
    page.locator("#run").click()
    seen = set()
    while True:
        seen.add(page.evaluate("() => document.querySelector('#counters')?.innerText || ''"))
        if re.match(r"(Done|Stopped)", page.evaluate("() => document.querySelector('#status')?.innerText || ''")):
            break
        page.wait_for_timeout(100)
    wall = time.perf_counter() - t0
    lanes = {name: (int(tok), float(sec.removesuffix(" s"))) for name, tok, sec in page.evaluate(LANES_JS)}
    page.context.close()
    compute = sum(sec for _, sec in lanes.values())
    return {"wall_seconds": wall, "lanes": lanes, "lanes_compute_seconds": compute,
            "wall_over_compute": wall / compute, "counter_states_seen": len(seen)}


def api_race(url: str, max_new: int) -> dict:
    """The same race through the app's API, with no browser on this machine's cores (as a Space
    visitor's browser runs on their own device)."""
    from gradio_client import Client

    from logitspec.analysis.race import load_race
    from ui.form import default_values

    prompt = load_race(ROOT / "traces" / "races" / "summarization-242.json")[0]["vanilla"].prompt_text
    args = list(default_values(prompt=prompt, with_pld=True, max_new=max_new).values())
    t0 = time.perf_counter()
    result = Client(url, verbose=False).predict(*args, api_name="/race")
    wall = time.perf_counter() - t0
    counters = next(r for r in result if isinstance(r, str) and "tokens / pass" in r)
    cells = re.findall(r"<tr data-lane='([\w+-]+)'><td>.*?</td><td>(\d+)</td><td>\d+</td><td>[\d.]+</td><td>[\d.]+</td>"
                       r"<td>([\d.]+) s</td>", counters)
    lanes = {name: (int(tok), float(sec)) for name, tok, sec in cells}
    compute = sum(sec for _, sec in lanes.values())
    return {"wall_seconds": wall, "lanes": lanes, "lanes_compute_seconds": compute, "wall_over_compute": wall / compute}


def cpu() -> dict:
    from logitspec.bench.machine import instruction_sets

    name = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                 if ln.startswith("model name")), platform.processor())
    return {"cpu": name, "cores": os.cpu_count(), "instruction_sets": instruction_sets()}


PRESENT = "&present=1"  # the present switch on: large type, every figure's fonts raised in the page


def summary(waits: list[float]) -> dict:
    return {"median": statistics.median(waits), "max": max(waits), "all": [round(w, 3) for w in waits]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--moves", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    # Without --url, the app as `make demo` starts it (curve timing on).
    proc, url = (None, args.url.rstrip("/") + "/") if args.url else start(Path(tempfile.mkdtemp()) / "app.log",
                                                                          timeout=180)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            report = {"machine": cpu(), "screen": SCREEN}
            for name, measure in (("explorer_move_seconds", lambda: summary(explorer_moves(browser, url, args.moves))),
                                  ("explain_move_seconds", lambda: summary(explain_moves(browser, url, args.moves))),
                                  ("explorer_move_present_seconds",
                                   lambda: summary(explorer_moves(browser, url, args.moves, PRESENT))),
                                  ("explain_move_present_seconds",
                                   lambda: summary(explain_moves(browser, url, args.moves, PRESENT))),
                                  ("play", lambda: play_pause(browser, url)),
                                  ("debugger_filter_seconds", lambda: summary(debugger_filter(browser, url))),
                                  ("race", lambda: race(browser, url, args.max_new_tokens)),
                                  ("api_race", lambda: api_race(url, args.max_new_tokens))):
                report[name] = measure()
                print(name, json.dumps(report[name]), flush=True)
            browser.close()
    finally:
        if proc is not None:
            stop(proc)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
