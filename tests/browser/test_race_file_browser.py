"""A whole race goes out and comes back through the page, at 1440 px and at 390 px (a phone): a
short race of three lanes (raced once, its page then read at each width), its download from the
Traces tab, a fresh page, and the file uploaded through the upload box show the same table rows
and the same verdict, an explorer that offers every lane, and the debugger's table.
Screenshots: artifacts/browser/race-file-<width>.png."""
from __future__ import annotations

import pytest

from helpers.browser import DESKTOP, MODEL_WAIT_MS, counter_rows, fresh_page, resize, set_max_new, shot, text_of
from logitspec.analysis.race import read_race
from visual.verdict import RECORDED_WORDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
RACE_TOKENS = 20  # past the fewest tokens a speed-up is judged over, quick on two busy cores
LANE_PICK_JS = """() => Array.from(document.querySelectorAll('#explore-lane label'))
    .filter((l) => l.offsetParent !== null).map((l) => l.innerText.trim())"""


def _race(page) -> None:
    """A short race of the Code example: vanilla, LogitSpec and the paper's tree."""
    from playwright.sync_api import expect

    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("button", name="Code").first.click()
    expect(page.locator("#prompt textarea")).not_to_have_value("", timeout=10_000)
    page.locator("#with-static input[type=checkbox]").check()
    set_max_new(page, RACE_TOKENS)
    page.locator("#run").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=MODEL_WAIT_MS + 300_000)


def _shown(page) -> dict:
    """What the race's end shows: the table's rows, the verdict and the explorer's lanes."""
    page.get_by_role("tab", name="Step explorer").click()
    return {"rows": counter_rows(page), "verdict": text_of(page, "#counters .verdict"),
            "lanes": page.evaluate(LANE_PICK_JS)}


@pytest.fixture(scope="module")
def raced(browser, app_url):
    """The race's page, raced once for both widths: a width changes what the page shows, not what ran."""
    page = fresh_page(browser, app_url, DESKTOP)
    _race(page)
    yield page
    page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_downloaded_race_uploads_back_to_the_same_results(raced, browser, app_url, viewport, tmp_path):
    page = raced
    if page.viewport_size != viewport:
        resize(page, viewport)
    ran = _shown(page)
    assert set(ran["rows"]) == {"vanilla", "logitspec", "logitspec-static"} and ran["verdict"], ran
    assert len(ran["lanes"]) == 3, ran

    page.get_by_role("tab", name="Traces").click()
    with page.expect_download(timeout=30_000) as info:
        page.locator("#download").click()
    name = info.value.suggested_filename
    assert name == f"logitspec-race-vanilla_logitspec_logitspec-static-{RACE_TOKENS}tok.json", name
    path = tmp_path / name
    info.value.save_as(path)
    assert set(read_race(path).lanes) == set(ran["rows"])  # every lane's trace in the one file

    # A new visitor's page at this width (it opens on the recorded race), then the file through the upload box.
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", state="attached", timeout=240_000)
    page.get_by_role("tab", name="Traces").click()
    page.locator("#upload input[type=file]").set_input_files(str(path))
    page.wait_for_function("(n) => (document.querySelector('#status')?.innerText || '').includes('Exploring ' + n)",
                           arg=name, timeout=120_000)
    back = _shown(page)
    assert back["rows"] == ran["rows"], (back["rows"], ran["rows"])
    # the same verdict, judged on the machine the file was recorded on rather than "this CPU"
    recorded = ran["verdict"].replace("on this CPU", RECORDED_WORDS)
    assert back["verdict"] == recorded.replace(" here)", " there)"), (back["verdict"], ran["verdict"])
    assert back["lanes"] == ran["lanes"], (back["lanes"], ran["lanes"])
    page.get_by_role("tab", name="Retrieval debugger").click()
    page.wait_for_selector("#debug-table table tr", timeout=60_000)
    shot(page, f"race-file-{viewport['width']}", "#counters")
    page.context.close()
