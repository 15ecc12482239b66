"""The explorer and the debugger speak each method's own words: a step of prompt lookup, REST or
Lookahead decoding is headed and filtered in that method's terms (its one query, REST's suffix
search over its datastore, Lookahead's pool), never LogitSpec's g1 and g2; the step's summary
says what its lookup found. The app's own handlers on a race recorded on the bundled model (a
Chinese code prompt, 40 tokens), no server and no model."""
from __future__ import annotations

import html
import re

import pytest

from helpers.paths import FIXTURES
from ui.debugger import OUTCOMES
from ui.page import Page
from ui.services import Services
from ui.view import View
from visual.method_words import WORDS

RACE = FIXTURES / "races" / "code-zh-baselines.json"
LOGITSPEC_WORDS = ("g1 n-grams tried", "g1 n", "g2 hits", "g1 tried")
# What each method's debugger and summary must say: its filter, a header, and its lookup's words.
OWN = {"pld": ("n-gram matched", "n-grams tried", "prompt lookup: "),
       "rest": ("suffix found", "suffix searched", "in its datastore"),
       "lookahead": ("pool held n-grams", "pool n-grams", "Lookahead's pool held")}


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


@pytest.fixture(scope="module")
def opened(ui):
    out = ui.files.open_trace(str(RACE), OUTCOMES, View())
    assert set(out[ui.state].traces) == {"vanilla", "pld", "lookahead", "rest"}
    return out[ui.state]


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


@pytest.mark.parametrize("lane", list(OWN))
def test_the_debugger_heads_and_filters_each_method_in_its_own_words(ui, opened, lane):
    out = ui.pick_lane(lane, OUTCOMES, opened)  # the filter still holds LogitSpec's three outcomes
    flt = out[ui.debugger.outcome]
    filt, header, _ = OWN[lane]
    assert [c[0] for c in flt.choices] == [w for w, _ in WORDS[lane].filters] and filt in flt.choices[0]
    assert flt.value == [v for _, v in WORDS[lane].filters]  # every step of the new method listed
    table = out[ui.debugger.table]
    heads = [html.unescape(h) for h in re.findall(r"<th[^>]*>([^<]*)</th>", table)]
    assert header in heads, heads
    assert not set(heads) & set(LOGITSPEC_WORDS) and "g1 tried" not in table, heads
    assert "g1" not in out[ui.debugger.intro] and "g2" not in out[ui.debugger.intro]
    rows = re.findall(r'<tr class="main" data-step="(\d+)"', table)
    assert len(rows) == sum(s.forward for s in opened.traces[lane].steps)


def test_rests_suffix_search_is_under_its_own_column(ui, opened):
    table = ui.pick_lane("rest", OUTCOMES, opened)[ui.debugger.table]
    heads = [html.unescape(h) for h in re.findall(r"<th[^>]*>([^<]*)</th>", table)]
    first = re.search(r'<tr class="main" data-step="\d+"[^>]*>(.*?)</tr>', table).group(1)
    cells = [_plain(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", first)]
    assert "suffix" in cells[heads.index("suffix searched")], (heads, cells)


@pytest.mark.parametrize("lane", list(OWN))
def test_the_step_summary_says_what_the_lookup_found_in_the_methods_words(ui, opened, lane):
    ui.pick_lane(lane, OUTCOMES, opened)
    trace = opened.traces[lane]
    for step in (next(i for i, s in enumerate(trace.steps) if s.retrieved),
                 next(i for i, s in enumerate(trace.steps) if s.forward and not s.retrieved)):
        summary = ui.explorer.step_outputs(opened, step)[ui.explorer.summary_md]
        line = next(ln for ln in summary.splitlines() if ln.startswith("- **Retrieval:**"))
        assert OWN[lane][2] in line and not re.search(r"(failed|matched) \(\)", line), line
        assert "g1" not in line and "g2" not in line and "x_{" not in line, line


def test_a_filter_choice_within_a_method_is_kept_across_its_redraws(ui, opened):
    rest = WORDS["rest"].filters
    out = ui.pick_lane("rest", [rest[1][1]], opened)  # "no suffix found" alone, ticked in REST's own filter
    assert out[ui.debugger.outcome].value == [rest[1][1]]
    assert "✓" not in _plain(out[ui.debugger.table]).split("suffix searched", 1)[1]
