"""No dead end, in a real browser: a step typed past the run's last into the explorer's box is
held to the run and every panel keeps working; a refused upload says why beside the upload box,
empties it and the shipped menu, and keeps the view; a recorded race uploads like a trace.

Screenshots: artifacts/browser/step-past-the-end.png, upload-refused.png.
"""
from __future__ import annotations

import pytest

from helpers.browser import fresh_page, shot, text_of, tree_data
from helpers.run_files import RACE, broken_file
from logitspec.analysis import lanes as lane_table

ERROR_BADGE = "() => Array.from(document.querySelectorAll('.error')).filter(e => e.offsetParent !== null).length"


def _open(browser, app_url, query: str):
    page = fresh_page(browser, app_url.rstrip("/") + "/?" + query)
    page.wait_for_function("() => (document.querySelector('#step-label')?.innerText || '').startsWith('Step ')",
                           timeout=90_000)
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    return page


def _wait_label(page, start: str, timeout: int = 30_000) -> None:
    page.wait_for_function("(s) => (document.querySelector('#step-label')?.innerText || '').startsWith(s)",
                           arg=start, timeout=timeout)


# The tree plot drawn at step n in the lanes view (its meta names the lanes) or the trie (shared prefixes).
TREE_AT_JS = """([n, key]) => { const el = document.querySelector('#tree-plot .js-plotly-plot');
    return !!(el && el.layout && el.layout.meta && el.layout.meta.step === n && el.layout.meta[key] !== undefined); }"""


@pytest.fixture(scope="module")
def shared_page(browser, app_url):
    """One page for the module's checks (one load, not three): each starts in the lanes view at the
    step the one before left (step 5 first), so none has to move the page back."""
    page = _open(browser, app_url, "trace=coding-122&step=5&tab=explorer")  # steps 0–39
    yield page
    page.context.close()


def _step_shown(page) -> int:
    """The step the explorer shows, once its label, box and tree agree on it."""
    _wait_label(page, "Step ")
    page.wait_for_function(
        """() => { const m = (document.querySelector('#step-label')?.innerText || '').match(/^Step (\\d+) /);
            const box = document.querySelector('#step-slider input[type=number]');
            const el = document.querySelector('#tree-plot .js-plotly-plot');
            return !!(m && box && box.value === m[1] && el && el.layout && el.layout.meta
                      && el.layout.meta.step === +m[1] && el.layout.meta.n_lanes !== undefined); }""",
        timeout=30_000)
    return int(text_of(page, "#step-label").split()[1])


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("typed", ["65", "-4"])
def test_a_step_typed_past_the_run_is_held_to_it(shared_page, typed):
    page = shared_page
    held = "39" if typed == "65" else "0"
    assert _step_shown(page) != int(held)  # the move to the held step is seen, not assumed
    box = page.locator("#step-slider input[type=number]")
    box.fill(typed)
    box.press("Enter")
    _wait_label(page, f"Step {held} (steps 0–39)")
    page.wait_for_function("(v) => document.querySelector('#step-slider input[type=number]').value === v",
                           arg=held, timeout=10_000)
    page.wait_for_timeout(1000)  # an error badge would come with the reply
    assert page.evaluate(ERROR_BADGE) == 0
    assert "Error" not in text_of(page, "#tree-plot") and tree_data(page)
    # The tree view radio still answers: the trie of the step held, then the lanes again.
    page.locator("#tree-view").get_by_label("trie").check()
    page.wait_for_function(TREE_AT_JS, arg=[int(held), "shared"], timeout=30_000)
    assert page.evaluate(ERROR_BADGE) == 0
    shot(page, "step-past-the-end")
    page.locator("#tree-view").get_by_label("lanes").check()
    page.wait_for_function(TREE_AT_JS, arg=[int(held), "n_lanes"], timeout=30_000)


@pytest.mark.slow
@pytest.mark.browser
def test_a_refused_upload_says_why_beside_the_box(shared_page, tmp_path):
    page = shared_page  # last: it opens another run
    _step_shown(page)
    label, tree = text_of(page, "#step-label"), tree_data(page)
    page.get_by_role("tab", name="Traces").click()
    assert "coding-122.json" in page.locator("#shipped input").input_value()
    upload = page.locator("#upload input[type=file]")
    upload.set_input_files(str(broken_file(tmp_path, "empty")))
    page.wait_for_function("() => (document.querySelector('#upload-note')?.innerText || '').includes('Not opened')",
                           timeout=30_000)
    note = text_of(page, "#upload-note")
    assert "empty.json" in note and "empty" in note and "\n" not in note, note
    page.wait_for_function("() => !document.querySelector('#upload')?.innerText.includes('empty.json')",
                           timeout=10_000)  # the box lets go of the refused file
    assert page.locator("#shipped input").input_value() == ""  # the menu no longer names the old file
    shot(page, "upload-refused")
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_selector("#tree-plot .js-plotly-plot")
    assert text_of(page, "#step-label") == label and tree_data(page) == tree
    assert page.evaluate(ERROR_BADGE) == 0
    page.get_by_role("tab", name="Traces").click()

    # The box takes a file again: a recorded race, shown as its LogitSpec lane beside the vanilla one.
    page.locator("#upload input[type=file]").set_input_files(str(RACE))
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Exploring')",
                           timeout=60_000)
    from logitspec.analysis.race import load_race

    lanes = load_race(RACE)[0]
    assert f"a race of {' / '.join(lane_table.label(n) for n in lanes)}" in text_of(page, "#status")
    assert text_of(page, "#upload-note") == ""
    page.get_by_role("tab", name="Step explorer").click()
    _wait_label(page, f"Step 0 (steps 0–{len(lanes['logitspec'].steps) - 1})")
