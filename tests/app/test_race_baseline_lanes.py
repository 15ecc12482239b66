"""The paper's baselines in the race: Lookahead decoding and REST decode beside vanilla on a tiny
model, through the race's own lanes, with vanilla's output; their colours are their own, and the
explorer draws their steps (the pool and the window, the retrieved continuations)."""
from __future__ import annotations

import pytest

from helpers.tiny_models import char_lm
from logitspec.drafters import rest
from serve.race import interleave, model_lanes
from logitspec.analysis.race import lane_order, result_of
from logitspec.core.settings import DecodeSettings
from visual.race import race_figure
from visual.style import PALETTE, lane_color
from logitspec.analysis.lanes import label

PROMPT = "abcabcabc the cat sat on the mat, the cat sat on the mat, the cat"
BASELINES = ["lookahead", "rest"]


@pytest.fixture(scope="module")
def raced(tiny_llama):
    """One race of vanilla and both baselines, 32 tokens; REST's datastore holds the prompt and
    an earlier answer to it (the tiny model's text is no English)."""
    from logitspec.runner import run_trace

    before = vars(tiny_llama).get(rest.ATTRIBUTE)
    lm = char_lm(tiny_llama)
    s = DecodeSettings(max_new_tokens=32)
    earlier = run_trace(lm, PROMPT, "vanilla", DecodeSettings(max_new_tokens=24))
    rest.attach(tiny_llama, store=rest.Datastore(earlier.prompt_tokens + earlier.tokens))
    lanes = model_lanes(lm, PROMPT, ["vanilla", "logitspec", *BASELINES], s)
    list(interleave(lanes))
    yield {ln.name: ln.trace for ln in lanes}
    vars(tiny_llama)[rest.ATTRIBUTE] = before


@pytest.mark.lossless
def test_the_baseline_lanes_race_and_equal_vanilla(raced):
    assert lane_order(["rest", "lookahead", "vanilla"]) == ["vanilla", "lookahead", "rest"]
    assert [raced[m].method for m in BASELINES] == BASELINES
    for m in BASELINES:
        assert raced[m].tokens == raced["vanilla"].tokens, m
    res = result_of(raced)
    assert res.lossless and res.complete and set(BASELINES) <= set(res.speedups)
    assert any(n.origin == "window" for s in raced["lookahead"].steps for n in s.tree)
    assert any(n.origin == "retrieved" for s in raced["rest"].steps for n in s.tree)


def test_the_baseline_lanes_have_their_own_colours(raced):
    colours = {m: lane_color(m, raced[m].method) for m in raced}
    assert len(set(colours.values())) == len(colours)
    fig = race_figure(raced)
    for m in BASELINES:
        assert colours[m] == PALETTE[m]
        assert [t.line.color for t in fig.data if t.mode == "lines" and t.name == label(m)] == [colours[m]]


def test_the_verdict_names_the_baselines_in_words(raced):
    from visual.verdict import counters_html

    verdict = counters_html(raced, running=False).split("class='verdict'>", 1)[1]
    assert "for Lookahead decoding" in verdict and "for REST" in verdict, verdict
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict, verdict


def test_the_explorer_draws_the_baselines_steps(raced):
    from ui.debugger import OUTCOMES
    from ui.page import Page
    from ui.services import Services
    from ui.view import View

    ui = Page(Services.create())
    ui.build()
    view = View(traces=raced, lane="lookahead", source="a race")
    ui.trace_outputs(view, OUTCOMES)
    for lane, origin in (("lookahead", "window"), ("rest", "retrieved")):
        ui.pick_lane(lane, OUTCOMES, view)
        step = next(i for i, s in enumerate(raced[lane].steps) if any(n.origin == origin for n in s.tree))
        out = ui.explorer.step_outputs(view, step)
        fig = out[ui.explorer.tree_plot]
        # an accepted box is filled with its origin's colour, a rejected one outlined in it
        assert any(PALETTE[origin] in (sh.fillcolor, sh.line.color) for sh in fig.layout.shapes), lane
        # beside it, in the next-next candidates' place: the window and pool, or the continuations
        beside = out[ui.explorer.cand_plot]
        assert beside.layout.meta["caption"]["title"].startswith({"lookahead": "Lookahead", "rest": "REST"}[lane])
        assert any(sh.name == "node 0" for sh in beside.layout.shapes), lane


def test_the_debugger_lists_the_baselines_lookups_hits_and_misses(raced):
    from visual.debug_table import debugger_rows

    for lane in BASELINES:
        rows = debugger_rows(raced[lane], None)
        assert rows and {r["outcome"] for r in rows} <= {"matched", "failed"}, lane
        assert len(rows) == sum(s.forward for s in raced[lane].steps)  # every pass, misses included
