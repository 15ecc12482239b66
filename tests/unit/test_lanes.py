"""The lane table (logitspec/analysis/lanes.py): a lane added in one place is found by the bench, the
race, the figures and the paper's table."""
from __future__ import annotations

from dataclasses import replace

import pytest

from logitspec.analysis import lanes
from logitspec.bench.paper import headline_columns
from logitspec.analysis.race import lane_order
from serve.race import lane_run
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace
from visual.style import lane_color


@pytest.fixture
def one_more(monkeypatch):
    new = lanes.LaneSpec(name="pld-static", method="logitspec", tree="static", drafts=True, label="a new lane",
                          colour="#123456", race=True, box="Also race {label}, {capacity} tokens", box_key="pls",
                          note="<br>{capacity} tokens")
    monkeypatch.setattr(lanes, "LANES", lanes.LANES + (new,))
    return new


def test_a_lane_added_to_the_table_is_found_everywhere(one_more):
    assert lanes.lane("pld-static") is one_more and "pld-static" in lanes.names()
    assert lane_order(["pld-static", "vanilla"]) == ["vanilla", "pld-static"]  # the race offers it, in order
    method, settings = lane_run("pld-static", DecodeSettings(tree="cost", capacity=8))
    assert method == "logitspec" and settings.tree == "static" and settings.capacity == DecodeSettings().capacity
    assert lanes.run_spec("pld-static", "cost") == ("logitspec", "static")  # the bench's decoder and tree
    assert lane_color("pld-static") == "#123456"
    assert ("a new lane", "pld-static") in headline_columns()


def test_the_views_say_what_a_row_says_of_its_lane(one_more):
    from ui.form import lane_boxes
    from visual.race import lane_note

    box = next(b for b in lane_boxes(DecodeSettings(capacity=32)) if b.lane == "pld-static")
    assert (box.name, box.label, box.elem_id) == ("with_pls", "Also race a new lane, 32 tokens", "with-pls")
    trace = RunTrace("logitspec", "", "", [1], {"capacity": 48})
    assert lane_note("pld-static", trace) == "<br>48 tokens" and lane_note("nope", trace) == ""
    assert lanes.papers_tree("logitspec-static") and not lanes.papers_tree("pld-static")
    assert lanes.replaying("paper").name == "logitspec-static" and lanes.replaying("cost").name == "logitspec"


def test_the_table_names_each_lane_once_with_its_own_colour():
    names = lanes.names()
    assert len(names) == len(set(names)) and names[0] == "vanilla"
    assert len({ln.colour for ln in lanes.LANES}) == len(lanes.LANES)
    assert lanes.race_order()[0] == "vanilla"


def test_a_lane_without_a_fixed_tree_takes_the_runs_own():
    assert lanes.run_spec("logitspec", "static") == ("logitspec", "static")
    assert lanes.run_spec("logitspec") == ("logitspec", DecodeSettings().tree)
    assert lanes.run_spec("pld", "static") == ("pld", None) and lanes.run_spec("vanilla") == ("vanilla", None)


def test_a_race_lane_runs_as_the_bench_and_the_analysis_run_it(monkeypatch):
    """One function from a lane to its run: the race's lanes, the bench's timed runs and run_spec agree."""
    import logitspec.decoders
    import logitspec.runner
    from logitspec.bench.run import measure
    from serve.race import model_lanes

    form = DecodeSettings(capacity=8, tree="cost", k=32, max_new_tokens=24)
    raced = {}

    class Seen:  # the race's Run, recorded instead of run
        def __init__(self, lm, prompt, method, settings):
            raced[len(raced)] = (method, settings)
            self.trace, self.finish = None, None

        def __iter__(self):
            return iter(())

    class Timed(Exception):
        pass

    def timed(model, ids, method, settings, eos):  # the bench's decode, recorded instead of run
        raise Timed(method, settings)

    monkeypatch.setattr(logitspec.runner, "Run", Seen)
    monkeypatch.setattr(logitspec.decoders, "decode", timed)
    order = lanes.race_order()
    model_lanes(None, "a prompt", order, form)
    assert [raced[i] for i in range(len(order))] == [lanes.lane_run(n, form) for n in order]
    for name in order:
        method, s = lanes.lane_run(name, form)
        with pytest.raises(Timed) as got:
            measure(type("LM", (), {"model": None, "eos_ids": [0]})(), [1, 2], name, form)
        assert got.value.args == (method, replace(s, share_prefill=False)), name
        assert lanes.run_spec(name, form.tree) == (method, s.tree if lanes.lane(name).drafts else None), name
    assert lanes.lane_run("logitspec-static", form)[1].capacity == DecodeSettings().capacity  # the paper's 64
    assert lanes.lane_run("logitspec", form) == ("logitspec", form)  # the race's own capacity and tree
