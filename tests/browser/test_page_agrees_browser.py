"""The page agrees with itself after Stop and after an upload, in a real browser: a refusal goes
when another file is chosen, a stopped race's table shows the tokens/s its speed-ups divide, the
download serves the run on screen, and the what-if k box shows the k the replay uses. The tests
run in this order on one page.
"""
from __future__ import annotations

import dataclasses

import pytest

from helpers.browser import fresh_page, text_of
from helpers.paths import ROOT
from logitspec.analysis.race import load_race, result_of, save_race
from logitspec.analysis.whatif import recorded_k
from logitspec.core.trace import RunTrace

RACE = ROOT / "traces" / "races" / "summarization-242.json"
SHIPPED = "coding-122.json"


@pytest.fixture(scope="module")
def page(browser, app_url):
    pg = fresh_page(browser, app_url)
    pg.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    pg.get_by_role("tab", name="Traces").click()
    yield pg
    pg.context.close()


def _upload(page, path) -> None:
    page.locator("#upload input[type=file]").set_input_files(str(path))


def test_a_refusal_goes_when_another_file_is_chosen(page, tmp_path_factory):
    folder = tmp_path_factory.mktemp("uploads")
    bad = folder / "bad.json"
    bad.write_text("hello, this is not JSON\n", encoding="utf-8")
    _upload(page, bad)
    page.wait_for_function("() => /Not opened/.test(document.querySelector('#upload-note')?.innerText || '')",
                           timeout=120_000)
    wrong = folder / "notes.txt"
    wrong.write_text("a file of the wrong type", encoding="utf-8")
    _upload(page, wrong)
    page.wait_for_timeout(1500)
    shown = page.evaluate("() => { const el = document.getElementById('upload-note');"
                          " return el.offsetParent === null ? '' : el.innerText; }")  # what is on screen
    assert "bad.json" not in shown, shown  # the old refusal went
    page.reload(wait_until="domcontentloaded")  # an empty upload box for the next file
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("tab", name="Traces").click()


def test_a_stopped_race_names_the_tokens_its_speed_ups_compare(page, tmp_path_factory):
    lanes, machine = load_race(RACE)
    cut = {name: dataclasses.replace(t, steps=t.steps[:40 if name == "vanilla" else 30]) for name, t in lanes.items()}
    path = tmp_path_factory.mktemp("stopped") / "stopped-race.json"
    save_race(cut, path, machine)
    n = result_of(cut).compared_tokens
    _upload(page, path)
    page.wait_for_function("() => /stopped-race.json/.test(document.querySelector('#status')?.innerText || '')",
                           timeout=120_000)
    heads = page.evaluate("() => Array.from(document.querySelectorAll('.counters th')).map(t => t.innerText.trim())")
    assert heads[-2:] == [f"tokens / s, first {n} tokens", f"speed-up, first {n} tokens"], heads
    rows = page.evaluate("() => Array.from(document.querySelectorAll('.counters tr')).slice(1)"
                         ".map(r => Array.from(r.cells).map(c => c.innerText.trim()))")
    van = float(next(r for r in rows if r[0].endswith("vanilla"))[-2])
    for r in rows:
        if not r[0].endswith("vanilla"):
            assert abs(float(r[-2]) / van - float(r[-1].rstrip("×"))) < 0.02, r


def test_the_download_serves_the_shipped_trace_on_screen(page):
    page.locator("#shipped input").click()
    page.get_by_role("option", name=SHIPPED).click()
    page.wait_for_function(f"() => /Exploring\\*?\\*? {SHIPPED}/.test(document.querySelector('#status')?.innerText"
                           " || '')", timeout=120_000)
    with page.expect_download(timeout=60_000) as got:
        page.locator("#download").click()
    served = open(got.value.path(), "rb").read()
    assert served == (ROOT / "traces" / SHIPPED).read_bytes()


def test_the_what_if_k_box_shows_the_k_the_replay_uses(page):
    most = recorded_k(RunTrace.load(ROOT / "traces" / SHIPPED))
    page.get_by_role("tab", name="Retrieval debugger").click()
    page.wait_for_selector("#debug-table table", timeout=60_000)
    box = page.locator("#whatif-k input[type=number]")
    box.fill("64")
    box.press("Enter")
    box.blur()
    page.wait_for_function(f"() => document.querySelector('#whatif-k input[type=number]').value === '{most}'",
                           timeout=10_000)
    assert f"this trace recorded {most}" in text_of(page, "#whatif-k")
    page.locator("#whatif-run").click()
    page.wait_for_function(f"() => /k is at most {most} \\(here {most}\\)/.test("
                           "document.querySelector('#whatif-summary')?.innerText || '')", timeout=60_000)
    page.get_by_role("tab", name="Traces").click()


def test_a_guess_right_without_a_lookup_reads_as_the_guess(browser, app_url):
    """Step 6 of the shipped coding run kept candidate 1 itself, with no lookup behind it: the summary
    says so instead of putting it on a "(g2)" branch beside the lookups' count."""
    pg = fresh_page(browser, app_url.rstrip("/") + f"/?trace={SHIPPED.removesuffix('.json')}&step=6")
    said = pg.wait_for_function("""() => { const t = document.querySelector('#step-summary')?.innerText || '';
        return /Step 6 of/.test(t) && /What the drafts held:/.test(t) && t; }""", timeout=120_000).json_value()
    assert "the true next token was candidate 1 itself, a next-next guess read off the logits" in said, said
    assert "(g2);" not in said, said
    pg.context.close()
