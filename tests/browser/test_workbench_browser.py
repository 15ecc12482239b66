"""The Workbench tab in a real browser at 1440 and 390 px: the shipped set file uploaded through the
box shows its per-prompt table (a row per run, counted from the file's traces), the outcome
figure and the CSV download; selecting a row opens that run in the step explorer at its worst step.
A set run in the app at 390 px (Stop keeping the finished prompts) and one method under two settings,
side by side, at 1440 px.
Screenshots: artifacts/browser/workbench-*-<width>.png."""
from __future__ import annotations

import json

import pytest

from helpers.browser import DESKTOP, fresh_page, shot
from helpers.paths import ROOT
from logitspec.analysis.lanes import label
from logitspec.analysis.sets import read_set

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
SET = ROOT / "traces" / "sets" / "coding-64.jsonl.gz"
# Gradio's Dataframe draws its body as rows of grid cells (a virtual list), not table rows.
ROW = "#wb-table div[role=row]"
ROWS_JS = """(sel) => Array.from(document.querySelectorAll(sel))
    .map((row) => Array.from(row.querySelectorAll('[role=gridcell]')).map((cell) => cell.innerText.trim()))"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_an_uploaded_set_shows_its_table_and_a_row_opens_its_run(browser, app_url, viewport):
    s = read_set(SET)
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("tab", name="Workbench").click()
    page.locator("#wb-upload input[type=file]").set_input_files(str(SET))
    page.wait_for_function("(n) => (document.querySelector('#wb-note')?.innerText || '').includes(n)",
                           arg=f"{s.prompts} prompts", timeout=120_000)
    page.locator("#wb-table").scroll_into_view_if_needed()
    page.wait_for_function(f"(sel) => document.querySelectorAll(sel).length === {len(s.entries)}", arg=ROW,
                           timeout=60_000)
    rows = page.evaluate(ROWS_JS, ROW)
    shown = {(r[0], r[3]): r for r in rows}
    for e in s.entries:  # every run's row, with its steps as its trace counts them
        row = shown[(str(e.prompt + 1), s.names()[e.label])]  # named as every view names the lane
        assert row[4] == str(len([st for st in s.trace(e).steps if st.forward])), row
    page.wait_for_selector("#wb-plot .js-plotly-plot", state="attached", timeout=60_000)
    assert page.locator("#wb-csv").is_visible()
    shot(page, f"workbench-{viewport['width']}", "#wb-intro", height=1400)

    target = next(e for e in s.entries if e.method == "pld" and e.summary.worst_step > 0)
    index = next(i for i, r in enumerate(rows) if (r[0], r[3]) == (str(target.prompt + 1), "prompt lookup"))
    page.locator(ROW).nth(index).locator("[role=gridcell]").nth(2).click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Exploring prompt')",
                           timeout=60_000)
    # The label is redrawn with the step (a "processing" overlay may cover it a moment first).
    page.wait_for_function("(n) => (document.querySelector('#step-label')?.innerText || '').includes('Step ' + n + ' (steps')",
                           arg=target.summary.worst_step, timeout=30_000)
    assert page.get_by_role("tab", name="Step explorer").get_attribute("aria-selected") == "true"
    page.get_by_role("tab", name="Workbench").click()  # the prompt's two methods, side by side
    page.wait_for_function("() => (document.querySelector('#wb-compare-note')?.innerText || '').includes('side by side')",
                           timeout=30_000)
    assert "They part at output token" in page.locator("#wb-compare-note").inner_text()
    page.wait_for_selector("#wb-compare .js-plotly-plot", state="attached", timeout=30_000)
    shot(page, f"workbench-compare-{viewport['width']}", "#wb-compare-note", height=500)
    page.context.close()


PROGRESS_HAS = "(w) => (document.querySelector('#wb-progress')?.innerText || '').includes(w)"
ENDED = "() => /Stopped:|Done:/.test(document.querySelector('#wb-progress')?.innerText || '')"


def _form(page, max_new: int, methods: list[str], again: str = "") -> None:
    """The Workbench's run form: max new tokens, exactly these methods, the first again under `again`."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Workbench").click()
    box = page.locator("#wb-max-new input")
    box.fill(str(max_new))
    box.press("Tab")
    expect(box).to_have_value(str(max_new))
    group = page.locator("#wb-methods")
    for m in ["logitspec", "pld", "vanilla"]:  # the defaults (logitspec, pld) and the chosen ones
        group.get_by_label(label(m), exact=True).set_checked(m in methods)
    if again:
        page.locator("#wb-again textarea, #wb-again input").first.fill(again)


# The run and Stop on a phone (the narrower layout of the same controls); two settings on a desktop.
@pytest.mark.parametrize("viewport", [PHONE], ids=["390"])
def test_a_set_run_in_the_app_shows_its_progress_and_stop_keeps_the_finished_prompts(browser, app_url, viewport):
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    # Coding's three prompts under vanilla: a pass per token, the slowest method, so prompts 2 and 3
    # take seconds while Stop takes one request.
    _form(page, 16, ["vanilla"])
    page.locator("#wb-run").click()
    page.wait_for_function(PROGRESS_HAS, arg="Prompt 1 of 3 (coding", timeout=240_000)
    assert "“" in page.locator("#wb-progress").inner_text()  # the prompt under way, quoted
    page.wait_for_function(PROGRESS_HAS, arg="1 of 3 prompts done", timeout=120_000, polling=50)
    page.locator("#wb-stop").click()
    page.wait_for_function(ENDED, timeout=120_000)
    said = page.locator("#wb-progress").inner_text()
    assert "Stopped:" in said, said
    done = int(said.split("after ")[1].split(" of 3")[0])
    assert 1 <= done < 3, said
    assert page.locator("#wb-note").inner_text().endswith(f"Stopped after {done} of 3 prompts.")
    page.locator("#wb-table").scroll_into_view_if_needed()
    page.wait_for_function(f"(sel) => document.querySelectorAll(sel).length === {done}", arg=ROW, timeout=60_000)
    assert {r[3] for r in page.evaluate(ROWS_JS, ROW)} == {"vanilla"}
    assert page.locator("#wb-set-download").is_visible()
    shot(page, f"workbench-run-{viewport['width']}", "#wb-run-form", height=1100)
    page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1440"])
def test_one_method_under_two_settings_runs_and_shows_side_by_side(browser, app_url, viewport, tmp_path):
    questions = tmp_path / "mine.jsonl"
    questions.write_text("".join(json.dumps({"question_id": i, "category": "mine", "turns": [p]}) + "\n" for i, p in
                                 enumerate(["Repeat after me: red green blue, red green blue.", "Count from one to ten."])))
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    _form(page, 12, ["pld"], again="pool=longest")
    page.locator("#wb-jsonl input[type=file]").set_input_files(str(questions))
    page.wait_for_function("() => (document.querySelector('#wb-questions input')?.value || '').includes('My questions')",
                           timeout=30_000)
    page.locator("#wb-run").click()
    page.wait_for_function(ENDED, timeout=240_000)
    assert "Done: all 2 prompts." in page.locator("#wb-progress").inner_text()
    assert "2 prompts × 2 runs (prompt lookup pool=recent, prompt lookup pool=longest)" in page.locator("#wb-note").inner_text()
    page.locator("#wb-table").scroll_into_view_if_needed()
    page.wait_for_function("(sel) => document.querySelectorAll(sel).length === 4", arg=ROW, timeout=60_000)
    rows = page.evaluate(ROWS_JS, ROW)
    assert [r[3] for r in rows] == ["prompt lookup pool=recent", "prompt lookup pool=longest"] * 2
    page.locator(ROW).nth(1).locator("[role=gridcell]").nth(2).click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Exploring prompt 1')",
                           timeout=60_000)
    page.get_by_role("tab", name="Workbench").click()
    page.wait_for_function("() => (document.querySelector('#wb-compare-note')?.innerText || '')"
                           ".includes('One method under two settings (pool longest against recent)')", timeout=30_000)
    page.wait_for_selector("#wb-compare .js-plotly-plot", state="attached", timeout=30_000)
    shot(page, f"workbench-settings-{viewport['width']}", "#wb-compare-note", height=600)
    page.context.close()
