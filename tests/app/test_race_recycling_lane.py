"""Token Recycling's lane (recycling) in the race: on a tiny model it decodes beside vanilla, through
the race's own lanes (model_lanes, interleave) and ZeroGPU's events, and its output is vanilla's;
the race's figures and counters give it a colour and words of its own."""
from __future__ import annotations

import pickle

import pytest

from helpers.tiny_models import char_lm
from logitspec.drafters.recycling import ORIGIN
from serve import zerogpu
from serve.race import interleave, lane_run, model_lanes
from logitspec.analysis.race import lane_order, result_of
from logitspec.core.settings import DecodeSettings
from visual.race import passes_figure, race_figure
from visual.style import PALETTE, lane_color
from visual.verdict import counters_html
from logitspec.analysis.lanes import label

# A repetitive prompt: the tiny model's own output repeats, so the matrix soon drafts right.
PROMPT = "abcabcabc the cat sat on the mat, the cat sat on the mat, the cat"


@pytest.fixture(scope="module")
def tiny_lm(tiny_llama):
    return char_lm(tiny_llama)


def _race(lanes):
    list(interleave(lanes))
    return {ln.name: ln.trace for ln in lanes}


@pytest.mark.lossless
@pytest.mark.parametrize("tree", ["cost", "static"])
def test_the_recycling_lane_races_token_recycling_and_equals_vanilla(tiny_lm, one_thread, tree):
    settings = DecodeSettings(max_new_tokens=40, tree=tree, recycle_across_runs=False)
    assert lane_order(["recycling", "logitspec", "vanilla"]) == ["vanilla", "logitspec", "recycling"]
    assert lane_run("recycling", settings) == ("recycling", settings)  # the race's own tree setting
    traces = _race(model_lanes(tiny_lm, PROMPT, ["vanilla", "logitspec", "recycling"], settings))
    rec, van = traces["recycling"], traces["vanilla"]
    assert rec.method == "recycling" and rec.settings["tree"] == tree
    assert len(van.tokens) == 40 and rec.tokens == van.tokens
    assert any(n.origin == ORIGIN for s in rec.steps for n in s.tree)  # it drafted from the matrix
    assert rec.forward_steps < van.forward_steps  # and its drafts were accepted
    res = result_of(traces)
    assert res.lossless and res.complete and "recycling" in res.speedups


def test_zerogpu_decodes_the_recycling_lane_as_the_race_does(tiny_lm, one_thread):
    settings = DecodeSettings(max_new_tokens=24, tree="static", recycle_across_runs=False)

    def across_processes(name, prompt, methods, s):  # every event pickled both ways, as ZeroGPU sends it
        return (pickle.loads(pickle.dumps(e)) for e in zerogpu.decode_lanes(name, prompt, methods, s))

    gpu = _race(zerogpu.gpu_lanes(tiny_lm, "tiny", PROMPT, ["vanilla", "recycling"], settings,
                                  decoder=across_processes))
    here = _race(model_lanes(tiny_lm, PROMPT, ["vanilla", "recycling"], settings))
    assert list(gpu) == ["vanilla", "recycling"]
    assert gpu["recycling"].tokens == here["recycling"].tokens == here["vanilla"].tokens
    assert gpu["recycling"].method == "recycling"


def test_the_race_figures_and_counters_draw_the_recycling_lane_in_its_own_colour(tiny_lm, one_thread):
    settings = DecodeSettings(max_new_tokens=16, recycle_across_runs=False)
    traces = _race(model_lanes(tiny_lm, PROMPT, ["vanilla", "logitspec", "pld", "recycling"], settings))
    colour = lane_color("recycling", "recycling")
    assert colour == PALETTE["recycling"]
    assert colour not in {lane_color(n, t.method) for n, t in traces.items() if n != "recycling"}
    for draw in (race_figure, passes_figure):
        fig = draw(traces)
        lines = [t for t in fig.data if t.mode == "lines" and t.name == label("recycling")]
        assert len(lines) == 1 and lines[0].line.color == colour
        labels = [a.text for a in fig.layout.annotations if a.bordercolor == colour]
        assert len(labels) == 1 and "Token Recycling" in labels[0]
    html = counters_html(traces, running=False)
    assert f"color:{colour}'>■</span> Token Recycling (" in html
    assert "for Token Recycling (cost tree)" in html.split("class='verdict'>", 1)[1]  # the verdict names it in words


def test_the_explorer_and_the_debugger_open_the_recycling_lane(tiny_lm, one_thread):
    from ui.debugger import OUTCOMES
    from ui.page import Page
    from ui.services import Services
    from ui.view import View

    ui = Page(Services.create())
    ui.demo = ui.build()
    settings = DecodeSettings(max_new_tokens=24, tree="static", recycle_across_runs=False)
    traces = _race(model_lanes(tiny_lm, PROMPT, ["vanilla", "logitspec", "recycling"], settings))
    view = View(traces=traces, lane="logitspec", source="a race")
    shown = ui.trace_outputs(view, OUTCOMES)[ui.explorer.lane_pick]
    assert shown.choices == [(label(n, t), n) for n, t in traces.items()] and shown.value == "logitspec" and shown.visible
    assert any(fn.fn == ui.pick_lane for fn in ui.demo.fns.values())  # the radio's event is wired
    out = ui.pick_lane("recycling", OUTCOMES, view)
    assert view.lane == "recycling" and view.trace is traces["recycling"] and out[ui.state] is view
    assert label("recycling", traces["recycling"]) in out[ui.explorer.step_label]
    assert "Token Recycling looks only in its matrix" in out[ui.debugger.note]
    assert ">recycled</th>" in out[ui.debugger.table]
    drafted = next(i for i, s in enumerate(traces["recycling"].steps) if len(s.tree) > 1)
    step = ui.explorer.step_outputs(view, drafted)
    fig = step[ui.explorer.tree_plot]
    assert any(sh.line.color == PALETTE["recycled"] for sh in fig.layout.shapes)  # its recycled boxes
    assert "Token Recycling · the matrix row of" in step[ui.explorer.retrieval_view]


def test_a_lane_picked_mid_race_is_the_one_the_live_explorer_draws(tiny_lm, one_thread, monkeypatch):
    import threading

    from ui import race as race_part
    from ui.debugger import OUTCOMES
    from ui.page import Page
    from ui.services import Services
    from ui.view import View

    monkeypatch.setattr(race_part, "LIVE_REDRAW_SECONDS", 0.0)  # redraw at every step of this fast race
    monkeypatch.setattr(race_part, "LIVE_DRAW_RATIO", 0)
    ui = Page(Services.create())
    ui.demo = ui.build()
    settings = DecodeSettings(max_new_tokens=24, tree="static", recycle_across_runs=False)
    lanes = model_lanes(tiny_lm, PROMPT, ["vanilla", "logitspec", "recycling"], settings)
    view = View(traces={ln.name: ln.trace for ln in lanes}, lane="logitspec", source="a race")
    labels = []
    for n, out in enumerate(ui.race._stream(lanes, view, threading.Event())):
        if ui.explorer.step_label in out:  # drawn for the lane picked before this step
            labels.append((view.lane, out[ui.explorer.step_label], len(view.traces[view.lane].steps)))
        if n == 6:
            ui.pick_lane("recycling", OUTCOMES, view)  # as the radio does while the race runs
    after = [(said, steps) for lane, said, steps in labels if lane == "recycling"]
    assert after, labels  # the explorer was redrawn after the switch
    for said, steps in after:  # it shows the picked lane's latest step, not LogitSpec's
        assert label("recycling", view.traces["recycling"]) in said and f"Step {steps - 1} " in said, (said, steps)
