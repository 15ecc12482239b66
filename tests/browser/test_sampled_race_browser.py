"""A sampled race in a real browser: at temperature 0.7 the status names the temperature and
the seed, the verdict finds LogitSpec's output identical to vanilla's, and the same seed
repeats the answer exactly (another seed, named: tests/app/test_app_client.py, through the API).

The first sampled race's finished state is saved as artifacts/browser/app-race-sampled.png, and
with LOGITSPEC_UPDATE_DOCS=1 copied to docs/img/ (the README shows it).
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from helpers.browser import MODEL_WAIT_MS, SHOTS, fresh_page, set_max_new, set_parameters, shot, text_of
from helpers.paths import ROOT

TEMPERATURE = 0.7
SEED = 7
MAX_NEW = 16  # each of the two races decodes it
RACE_SHOT = SHOTS / "app-race-sampled.png"
README_SHOT = ROOT / "docs" / "img" / RACE_SHOT.name
MAX_PNG_BYTES = 400_000


def set_sampling(page, temperature: float, seed: int) -> None:
    """Temperature and seed in the folded decoder parameters, folded again after."""
    set_parameters(page, {"#temperature": f"{temperature:g}", "#seed": seed})


def run_race(page, name: str) -> str:
    """Click Run and wait for this run's own "Done" (the first screen already shows a finished
    recorded race, so a "Racing" status must come first); the final status."""
    page.evaluate("() => { window.__racing = false; }")
    page.locator("#run").click()
    try:
        page.wait_for_function(
            """() => {
                const st = (document.querySelector('#status')?.innerText || '').trim();
                if (st.includes('Racing')) window.__racing = true;
                const c = document.querySelector('#counters');
                return window.__racing && st.startsWith('Done') && !!c && !!c.querySelector('.verdict')
                    && !c.innerText.includes('racing');
            }""", timeout=MODEL_WAIT_MS, polling=50)
    except Exception as e:  # noqa: BLE001 - say what the page showed instead
        png = shot(page, f"{name}-not-done")
        pytest.fail(f"the {name} race did not finish ({type(e).__name__}): #model-status "
                    f"{text_of(page, '#model-status')!r}; #status {text_of(page, '#status')!r}; "
                    f"#counters {text_of(page, '#counters')!r}; screenshot {png}")
    page.wait_for_timeout(500)  # the last figures settle after the status
    return text_of(page, "#status")


def answer_of(page) -> str:
    return page.locator("#answer textarea").input_value()


def save_race_shot(page) -> None:
    """The status bar down to the race plot's bottom, at the page's 1440 px width."""
    top = page.evaluate("() => document.querySelector('#status-bar').getBoundingClientRect().top + window.scrollY")
    bottom = page.evaluate("() => { const r = document.querySelector('#race-plot').getBoundingClientRect();"
                           " return r.bottom + window.scrollY; }")
    RACE_SHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(RACE_SHOT), full_page=True,
                    clip={"x": 0, "y": max(0, top - 10), "width": page.viewport_size["width"],
                          "height": bottom - top + 20})


def check_sampled_status(status: str, seed: int) -> None:
    note = f"Sampled at temperature {TEMPERATURE:g}, top-p 1, seed {seed}: the same seed repeats this race"
    assert note in status, status
    assert "DIFFERENT" not in status, status


@pytest.mark.slow
@pytest.mark.browser
def test_a_sampled_race_repeats_with_its_seed(browser, app_url):
    from playwright.sync_api import expect

    page = fresh_page(browser, app_url)
    try:
        page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
        page.get_by_role("button", name="Code").first.click()  # a fresh page's prompt is empty
        expect(page.locator("#prompt textarea")).not_to_have_value("", timeout=10_000)
        set_max_new(page, MAX_NEW)
        set_sampling(page, TEMPERATURE, SEED)

        first = run_race(page, "sampled")
        check_sampled_status(first, SEED)
        verdict = text_of(page, "#counters .verdict")
        assert "output identical to vanilla, token for token" in verdict, verdict
        assert "identical to vanilla" in first, first
        tokens = re.findall(r"(vanilla|logitspec)\s+(\d+)", text_of(page, "#counters"))
        assert dict(tokens) and all(int(n) > 0 for _, n in tokens), text_of(page, "#counters")
        answer = answer_of(page)
        assert answer.strip(), "the sampled race's answer is empty"
        page.evaluate("window.scrollTo(0, 0)")
        save_race_shot(page)
        assert RACE_SHOT.stat().st_size < MAX_PNG_BYTES, RACE_SHOT.stat().st_size
        if os.environ.get("LOGITSPEC_UPDATE_DOCS") == "1":  # a test run leaves the tree clean otherwise
            shutil.copyfile(RACE_SHOT, README_SHOT)

        again = run_race(page, "same-seed")
        check_sampled_status(again, SEED)
        assert answer_of(page) == answer, "the same seed gave a different answer"
        assert "output identical to vanilla, token for token" in text_of(page, "#counters .verdict")
        # Another seed, named in the status: tests/app/test_app_client.py, through the app's API.
    finally:
        page.context.close()
