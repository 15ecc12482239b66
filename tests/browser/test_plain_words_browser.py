"""Plain words on the first screen, in a real browser at 1440×900 and on a 390×844 phone: lanes
are named by the lane table's labels only (the counters, the verdict, the race's legend and the
explorer's picker), never by a key such as `pld` or `logitspec`; and each jargon word on the
first screen is defined where a reader first meets it, in a <dfn> of its sentence or an
<abbr title>, or is not there at all.

Screenshots: artifacts/browser/plain-words-{1440,390}.png.
"""
from __future__ import annotations

import re

import pytest

from helpers.browser import DESKTOP, counter_rows, shot
from logitspec.analysis.lanes import label

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
# Jargon a first-time visitor cannot guess, by the pattern that finds it in the page's text.
TERMS = {
    "token": r"\btokens?\b",
    "forward pass": r"\bforward pass(es)?\b",
    "vanilla": r"\bvanilla\b",
    "greedy": r"\bgreedy\b",
    "prompt lookup": r"\bprompt lookup\b",
    "cost tree": r"\bcost trees?\b",
    "static tree": r"\bstatic trees?\b",
    "tokens per pass": r"\btokens (per|/) pass\b",
    "compute clock": r"\bcompute clock\b",
    "lane": r"\blanes?\b",
    "next-next": r"\bnext-next\b",
    "g1 / g2": r"\bg[12]\b",
    "x_{i+1}": r"\bx_?\{?i ?\+ ?[12]",
    "instruction sets": r"\b(AVX|AMX|FMA)",
}
BARE_KEYS = r"\bpld\b|\bPLD\b|\blogitspec(-static)?\b"  # a lane's key, never shown to a reader

# Every piece of text on the first screen, in reading order (top, then left), and whether it
# stands in a definition: a <dfn> of its sentence or an <abbr> with its hover.
SCREEN_TEXT_JS = """() => {
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), r = document.createRange();
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.data.trim() || !el || el.closest('script, style, title')) continue;
    r.selectNodeContents(n);
    const box = Array.from(r.getClientRects()).find((b) => b.width > 0 && b.height > 0);
    if (!box || box.bottom <= 0 || box.top >= window.innerHeight || box.right <= 0 || box.left >= window.innerWidth) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.opacity === '0') continue;
    const defining = el.closest('dfn, abbr[title]');
    out.push({text: n.data, top: box.top, left: box.left,
              defined: !!defining && (defining.tagName === 'DFN' || !!defining.getAttribute('title').trim())});
  }
  return out.sort((a, b) => a.top - b.top || a.left - b.left);
}"""
LEGEND_JS = """() => Array.from(document.querySelectorAll('#race-plot .legend .legendtext')).map((t) => t.textContent)"""


@pytest.fixture(scope="module", params=["desktop", "phone"])
def first_screen(request, browser, app_url):
    """A new visitor's first screen: the recorded race, its verdict and its race figure drawn."""
    viewport = DESKTOP if request.param == "desktop" else PHONE
    touch = request.param == "phone"
    page = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch).new_page()
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#counters .verdict", timeout=60_000)
    page.wait_for_selector("#race-plot .legend .legendtext", timeout=60_000)
    page.wait_for_function("() => /Model /.test(document.querySelector('#model-status')?.innerText || '')",
                           timeout=60_000)
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(800)
    shot(page, f"plain-words-{viewport['width']}")
    yield request.param, page
    page.context.close()


def test_the_first_screen_names_lanes_by_the_lane_tables_labels_only(first_screen):
    which, page = first_screen
    rows = counter_rows(page)
    assert {"vanilla", "logitspec"} <= set(rows), rows
    for key, cells in rows.items():
        assert next(iter(cells.values())).strip(" ■\u00a0") == label(key), (which, key, cells)
    legend = page.evaluate(LEGEND_JS)
    for key in rows:
        assert sum(t.startswith(label(key) + ":") for t in legend) == 1, (which, key, legend)
    verdict = page.locator("#counters .verdict").inner_text()
    assert verdict.startswith(label("logitspec")) and label("pld") in verdict, (which, verdict)
    keys = [x["text"] for x in page.evaluate(SCREEN_TEXT_JS) if re.search(BARE_KEYS, x["text"])]
    assert keys == [], f"{which}: a lane's key on the first screen: {keys}"
    picker = page.locator("#explore-lane")
    for key in rows:  # the explorer's picker offers the same labels
        assert picker.get_by_label(label(key), exact=True).count() == 1, (which, key)


def test_each_jargon_word_on_the_first_screen_is_defined_where_it_first_appears(first_screen):
    which, page = first_screen
    texts = page.evaluate(SCREEN_TEXT_JS)
    assert any(re.search(TERMS["vanilla"], x["text"]) for x in texts), f"{which}: no race on the first screen"
    undefined = {}
    for term, pattern in TERMS.items():
        first = next((x for x in texts if re.search(pattern, x["text"], re.I)), None)
        if first is not None and not first["defined"]:
            undefined[term] = first["text"][:80]
    assert undefined == {}, f"{which}: words met first without their definition: {undefined}"
