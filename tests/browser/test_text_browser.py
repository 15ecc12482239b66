"""Non-Latin output in a real browser: an emoji and Japanese answer reads as text in the text
view, the plain answer, the draft tree and the retrieval panel, never as "\ufffd". Part of a
character drawn alone shows in one notation everywhere, ‹hex›, said in words wherever it shows.

Screenshot: artifacts/browser/emoji-japanese.png.
"""
from __future__ import annotations

import pytest

from helpers.browser import MODEL_WAIT_MS, fresh_page, set_max_new, shot, text_of
from visual.pieces import SPLIT_NOTE

PROMPT = "Reply only with these characters repeated three times: 🌍こんにちは🎉"
MAX_NEW = 24
KANA = "こんにちは"


def non_latin(text: str) -> bool:
    """Whether the text holds a kana or an emoji (what the model was asked to repeat)."""
    return any(0x3040 <= ord(c) <= 0x30FF or 0x1F300 <= ord(c) <= 0x1FAFF for c in text)


@pytest.mark.slow
@pytest.mark.browser
def test_an_emoji_and_japanese_answer_reads_as_text_everywhere(browser, app_url):
    page = fresh_page(browser, app_url)
    page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=60_000)
    page.locator("#prompt textarea").fill(PROMPT)
    set_max_new(page, MAX_NEW)
    page.locator("#run").click()
    # The first screen's recorded race has a verdict already: wait for this run's "Done".
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').startsWith('Done')",
                           timeout=MODEL_WAIT_MS)

    answer = page.locator("#answer textarea").input_value()
    view = text_of(page, "#text-view")
    assert "\ufffd" not in answer and "\ufffd" not in view, (answer, view)
    assert KANA[:2] in answer and non_latin(view), (answer, view)
    assert "<|im_end|>" not in view
    label = text_of(page, "#text-view [data-testid=block-label], #text-view .label-wrap, #text-view label")
    assert ("‹" in view) == (SPLIT_NOTE in label), (view, label)
    page.get_by_role("tab", name="Retrieval debugger").click()
    table = text_of(page, "#debug-table")
    assert ("‹" in table.replace(SPLIT_NOTE, "")) == (SPLIT_NOTE in table), table
    page.get_by_role("tab", name="Step explorer").click()

    # Every step's tree and retrieval panel: no replacement character, and the characters
    # the model wrote show whole in some tree (a node's label is decoded along its path).
    last = int(page.evaluate("() => document.querySelector('#step-slider input[type=range]').max"))
    whole = split = 0
    for i in range(last + 1):
        if i:
            page.locator("#next").click()
            page.wait_for_function(
                "(n) => (document.querySelector('#step-label')?.innerText || '').includes('Step ' + n + ' (steps')",
                arg=i, timeout=30_000)
        tree = page.evaluate("""() => { const el = document.querySelector('#tree-plot .js-plotly-plot');
            return el && el.data ? JSON.stringify(el.data.map(t => [t.text, t.hovertext])) : ''; }""")
        retrieval, summary = text_of(page, "#retrieval"), text_of(page, "#step-summary")
        assert tree and "\ufffd" not in tree and "\\ufffd" not in tree, i
        assert "\ufffd" not in retrieval, i
        whole += non_latin(tree)
        # One notation for part of a character, and its meaning beside it wherever it shows.
        assert "⋯" not in tree, i
        split += "‹" in tree
        if "‹" in tree:
            assert SPLIT_NOTE in text_of(page, "#tree-side-panel"), i
        for drawn in (retrieval, summary):
            assert ("‹" in drawn.replace(SPLIT_NOTE, "")) == (SPLIT_NOTE in drawn), (i, drawn)
    assert whole > 0 and split > 0
    shot(page, "emoji-japanese")
