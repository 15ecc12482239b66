"""The retrieval debugger in a real browser: its table fits a desktop and a phone, an empty filter
says so, the what-if panel draws both runs, and a bad trace file keeps the view.

Screenshots: artifacts/browser/debugger-{1440,390}.png, whatif.png, upload-error.png.
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import TAB_SHOWN_JS, fresh_page, shot, text_of, tree_data
from helpers.paths import ROOT

FIRST_RACE = ROOT / "traces" / "races" / "summarization-242.json"  # what a new visitor sees
PHONE = {"width": 390, "height": 844}


def _first_trace():
    from logitspec.analysis.race import load_race

    return load_race(FIRST_RACE)[0]["logitspec"]


def _debugger(browser, app_url, viewport):
    page = fresh_page(browser, app_url, viewport)
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=90_000)
    page.get_by_role("tab", name="Retrieval debugger").click()
    page.wait_for_selector("#debug-table table", timeout=30_000)
    return page


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 390])
def test_the_debugger_table_fits(browser, app_url, width):
    page = _debugger(browser, app_url, {"width": width, "height": 900})
    fit = page.evaluate("""() => {
        const t = document.querySelector('#debug-table');
        const heads = Array.from(t.querySelectorAll('thead th')).filter(th => th.offsetParent !== null)
            .map(th => [th.innerText, th.getBoundingClientRect().height, parseFloat(getComputedStyle(th).lineHeight)]);
        const clipped = Array.from(t.querySelectorAll('*')).filter(e => e.scrollWidth > e.clientWidth + 1)
            .map(e => e.tagName + '.' + e.className);
        return {heads, clipped, right: t.querySelector('table').getBoundingClientRect().right,
                page: document.documentElement.scrollWidth, view: window.innerWidth};
    }""")
    assert len(fit["heads"]) >= 4
    for text, height, line in fit["heads"]:
        assert height < 2 * line, f"header {text!r} wraps: {height:.0f}px for a {line:.0f}px line"
    assert not fit["clipped"], f"content runs past its box: {fit['clipped']}"
    assert fit["right"] <= fit["view"] and fit["page"] <= fit["view"]
    # Every forward step is listed, and a row opens its step.
    assert page.locator("#debug-table tbody tr.main").count() == sum(s.forward for s in _first_trace().steps)
    page.locator("#debug-table tbody tr.main[data-step='3']").click()
    page.wait_for_function("() => (document.querySelector('#step-label')?.innerText || '').includes('Step 3 (steps')",
                           timeout=30_000)
    shot(page, f"debugger-{width}")
    page.context.close()


@pytest.fixture(scope="module")
def phone(browser, app_url):
    """One phone page for the three checks below (one load, not three), on the debugger's tab."""
    page = _debugger(browser, app_url, PHONE)
    yield page
    page.context.close()


ROWS_JS = "(n) => document.querySelectorAll('#debug-table tbody tr.main').length === n"
OUTCOMES_OFF = ("g1 matched", "g2 rescued")


@pytest.mark.slow
@pytest.mark.browser
def test_an_empty_filter_says_so(phone):
    from logitspec.core.trace import BOTH_FAILED

    trace = _first_trace()
    failed = [s for s in trace.steps if s.forward and s.outcome == BOTH_FAILED]
    page = phone
    for name in OUTCOMES_OFF:
        page.locator("#outcome").get_by_text(name).click()
    if failed:  # the filter lists exactly those steps
        page.wait_for_function(ROWS_JS, arg=len(failed), timeout=30_000)
    else:
        page.wait_for_function("() => (document.querySelector('#debug-note')?.innerText || '')"
                               ".includes('No step of this run is')", timeout=30_000)
        assert page.locator("#debug-table tbody tr").count() == 0
    for name in OUTCOMES_OFF:  # every outcome again, for the next check on this page
        page.locator("#outcome").get_by_text(name).click()
    page.wait_for_function(ROWS_JS, arg=sum(s.forward for s in trace.steps), timeout=30_000)


@pytest.mark.slow
@pytest.mark.browser
def test_the_whatif_panel_shows_both_runs(phone):
    from logitspec.analysis.whatif import RetrievalSetting, own_setting, what_if
    from visual.counts import held_tokens

    trace = _first_trace()
    own = own_setting(trace)
    setting = RetrievalSetting((2, 3), own.continuation, own.k)
    expected = what_if(trace, setting).new
    page = phone
    page.wait_for_selector("#whatif-plot .js-plotly-plot", timeout=30_000)
    assert "This is the run's own setting" in text_of(page, "#whatif-summary")
    page.locator("#whatif-ngram").get_by_text("1", exact=True).click()
    page.locator("#whatif-run").click()
    page.wait_for_function("() => (document.querySelector('#whatif-summary')?.innerText || '').includes('n-grams 2–3')",
                           timeout=30_000)
    summary = text_of(page, "#whatif-summary")
    held = held_tokens(trace.steps, expected.steps, expected.drafted)
    assert f"the drafts held {held} of the output's {len(trace.tokens)} tokens" in summary
    assert f"{sum(expected.retrieved)} of {len(expected.retrieved)} steps" in summary
    drawn = page.evaluate("""() => Object.fromEntries(document.querySelector('#whatif-plot .js-plotly-plot').data
        .filter(t => t.name === 'this run' || t.name === 'what-if').map(t => [t.name, t.y]))""")
    assert drawn["what-if"] == expected.drafted and drawn["this run"] != drawn["what-if"]
    page.locator("#whatif-plot").scroll_into_view_if_needed()
    shot(page, "whatif")


@pytest.mark.slow
@pytest.mark.browser
def test_an_upload_error_keeps_the_view(phone, tmp_path):
    from logitspec.core.limits import Limits
    from logitspec.core.trace import TraceFileError, read_trace_file

    page = phone
    page.get_by_role("tab", name="Step explorer").click()  # the tab a new visitor sees
    page.wait_for_function(TAB_SHOWN_JS, arg="Step explorer")
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=90_000)
    label, tree = text_of(page, "#step-label"), tree_data(page)
    page.get_by_role("tab", name="Traces").click()
    upload = page.locator("#upload input[type=file]")

    # Over the limit: the page refuses it before sending (its own upload limit is a set file's,
    # larger), in the words of our own check; the server never hears of it.
    limit = Limits.from_env().trace_bytes
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (limit + 1))
    with pytest.raises(TraceFileError) as ours:
        read_trace_file(big, limit)
    sent = []
    page.on("request", lambda r: sent.append(r.url) if "/upload" in r.url else None)
    upload.set_input_files(str(big))
    refused = page.locator(".upload-refused")
    refused.wait_for(timeout=30_000)
    assert refused.inner_text() == f"Not opened: big.json: {ours.value}", refused.inner_text()
    page.wait_for_timeout(500)
    assert sent == [], f"a file over the trace limit was sent: {sent}"

    # A truncated file: one line in the status, every panel as it was, no error badge.
    cut = tmp_path / "cut.json"
    cut.write_text('{"format": "logitspec-trace/2", "steps": [{"index": 0, "meth', encoding="utf-8")
    upload.set_input_files(str(cut))
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Not opened')",
                           timeout=30_000)
    assert "truncated" in text_of(page, "#status")
    page.get_by_role("tab", name="Step explorer").click()
    page.wait_for_selector("#tree-plot .js-plotly-plot")
    assert text_of(page, "#step-label") == label and tree_data(page) == tree
    assert "Error" not in text_of(page, "#tree-plot") and "Error" not in text_of(page, "#debug-table")
    shot(page, "upload-error")
