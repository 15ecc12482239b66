"""Where it pays: a race's passes priced on measured pass costs (logitspec/analysis/pays.py), the
prediction checked against speed-ups measured on the H200 and in a recorded race, and its figure."""
from __future__ import annotations

import copy
import dataclasses
import json
import statistics

import pytest

from helpers.paths import ROOT
from logitspec.analysis.pays import PassCosts, curves_for, measured_in, monotone, price, read_pass_costs, \
    rows_of, summary_speedup
from logitspec.analysis.lanes import label
from logitspec.analysis.race import load_race
from visual.pays import committed_figure, committed_shares, pays_figure

H200 = ROOT / "data" / "pass_costs" / "nvidia-h200.json"
H200_BENCH = ROOT / "docs" / "bench" / "gpu-h200"
RACE = ROOT / "traces" / "races" / "summarization-242.json"
WITHIN = 0.15  # the prediction's error the page may show as a prediction


@pytest.fixture(scope="module")
def race():
    return load_race(RACE)[0]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_h200_curve_predicts_the_h200_benchs_speed_ups(dtype):
    """Each lane of the recorded H200 bench: its tokens per pass, pass size and drafting share priced
    on the H200's curve give the speed-up measured there, within 15%. Prompt lookup's passes are
    priced at their largest (the bench records no mean size for them): on this curve c(11) is 3%
    over c(1)."""
    curve = next(c for c in read_pass_costs(H200) if c.dtype == dtype)
    bench = json.loads((H200_BENCH / f"bench-{dtype}.json").read_text())
    vanilla = bench["methods"]["vanilla"]["overall"]
    errors = {}
    for method, v in bench["methods"].items():
        o = v["overall"]
        if method == "vanilla":
            continue
        rows = o.get("mean_tree_size") or bench["settings"]["decode"]["pld_tokens"] + 1
        got = summary_speedup(o["mean_accepted_tokens"], rows, o["draft_bookkeeping_share"],
                              vanilla["draft_bookkeeping_share"], curve)
        errors[method] = got / o["speedup_vs_vanilla"] - 1
    print(dtype, {m: f"{e:+.1%}" for m, e in errors.items()})
    assert len(errors) >= 3 and all(abs(e) <= WITHIN for e in errors.values()), errors


def test_a_recorded_race_priced_on_its_own_passes_gives_its_measured_speed_up(race):
    priced = price(race, [])
    assert [p.lane for p in priced] == [n for n in race if n != "vanilla"]
    for p in priced:
        assert p.measured > 0 and abs(p.predicted["this race"] / p.measured - 1) <= WITHIN, p
        assert p.tokens == len(race[p.lane].tokens) and p.passes == race[p.lane].forward_steps


def test_the_races_own_costs_are_its_passes_median_times_never_falling_with_size(race):
    here = measured_in(race)
    medians = {}
    for t in race.values():
        for s in t.steps:
            if s.forward:
                medians.setdefault(rows_of(s), []).append(1e3 * s.forward_seconds)
    sizes = sorted(medians)
    assert here.sizes == tuple(sizes) and all(a <= b for a, b in zip(here.ms, here.ms[1:]))
    weights = [len(medians[n]) for n in sizes]
    raw = [statistics.median(medians[n]) for n in sizes]
    assert sum(w * m for w, m in zip(weights, here.ms)) == pytest.approx(sum(w * m for w, m in zip(weights, raw)))


def test_monotone_pools_only_what_falls():
    assert monotone([1.0, 2.0, 3.0], [1, 1, 1]) == [1.0, 2.0, 3.0]
    assert monotone([1.0, 3.0, 2.0, 4.0], [1, 1, 3, 1]) == [1.0, 2.25, 2.25, 4.0]
    assert monotone([5.0, 1.0], [1, 1]) == [3.0, 3.0]


def _flat(race, rows: int, tokens_per_pass: int, ms: float = 10.0):
    """The race's vanilla lane and one lane of equal passes of `rows` rows, each `tokens_per_pass`
    tokens, with no drafting time: its price is exact."""
    van, lane = copy.deepcopy(race["vanilla"]), copy.deepcopy(race["logitspec"])
    for t in (van, lane):
        for s in t.steps:
            s.draft_seconds = s.bookkeeping_seconds = 0.0
            s.forward_seconds = ms / 1e3
    lane.steps = lane.steps[:10]
    for s in lane.steps:
        s.forward = True
        s.tokens = s.tokens[:1] * tokens_per_pass
        s.tree = s.tree[:1] + [dataclasses.replace(s.tree[0], id=i, parent=0, pruned=False) for i in range(1, rows)]
    return {"vanilla": van, "logitspec": lane}


@pytest.mark.parametrize("tokens_per_pass, pays", [(3, True), (2, False)])
def test_a_lane_above_a_machines_line_is_faster_there(race, tokens_per_pass, pays):
    lanes = _flat(race, 16, tokens_per_pass)
    curve = PassCosts("a machine", (1, 16, 64), (10.0, 25.0, 60.0), "float32")  # c(16)/c(1) = 2.5
    (p,) = price(lanes, [curve])
    assert p.mean_rows == 16 and p.tokens_per_pass == tokens_per_pass
    van = lanes["vanilla"]  # its first token came from the prefill: one pass fewer than tokens
    assert p.predicted["a machine"] == pytest.approx(van.forward_steps / len(van.tokens) * tokens_per_pass / 2.5)
    assert (p.predicted["a machine"] > 1) is pays


def test_a_curve_of_another_dtype_is_not_used(race):
    other = PassCosts("a machine", (1, 64), (10.0, 20.0), "bfloat16")
    assert [c.name for c in curves_for(race, [other])] == ["this race"]
    assert set(price(race, [other])[0].predicted) == {"this race"}


def test_the_figure_draws_each_machines_line_and_each_lane_with_its_numbers(race):
    curves = read_pass_costs(H200)
    fig = pays_figure(race, curves, fit=True)
    names = [t.name for t in fig.data]
    assert names[:2] == ["this race: break-even", "NVIDIA H200: break-even"]
    lanes = [n for n in names[2:]]
    assert len(lanes) == len(race) - 1
    for p, name in zip(price(race, curves), lanes):
        assert f"{p.measured:.2f}× measured" in name and f"{p.predicted['NVIDIA H200']:.2f}× on NVIDIA H200" in name
    assert fig.layout.meta["slide"] and "faster than vanilla" in fig.layout.meta["caption"]["subtitle"]


def test_a_race_without_vanilla_says_so_and_draws_no_lane(race):
    fig = pays_figure({"logitspec": race["logitspec"]}, read_pass_costs(H200))
    assert not fig.data and "vanilla" in fig.layout.title.subtitle.text


def test_a_stopped_races_figure_says_each_lane_is_priced_over_its_own_passes(race):
    fig = pays_figure(race, read_pass_costs(H200), stopped=True, fit=True)
    assert "each lane over its own passes in a stopped race" in fig.layout.meta["caption"]["subtitle"]


def test_every_lanes_passes_by_the_tokens_each_committed(race):
    fig = committed_figure(race, fit=True)
    assert [t.name for t in fig.data] == [label(n, t) for n, t in race.items()]
    for (name, t), bars in zip(race.items(), fig.data):
        shares = committed_shares(t)
        assert sum(shares.values()) == pytest.approx(1.0) and list(bars.x) == list(shares)
        assert sum(k * v for k, v in shares.items()) * t.forward_steps == pytest.approx(
            sum(len(s.tokens) for s in t.steps if s.forward))
    assert committed_shares(race["vanilla"]) == {1: 1.0}


def test_a_race_of_one_token_prices_no_lane_and_draws(race):
    """One token comes from the prefill: no lane made a decoding pass, so none is priced, and the figures draw."""
    short = copy.deepcopy(race)
    for t in short.values():
        t.steps = [dataclasses.replace(t.steps[0], forward=False, tokens=t.steps[0].tokens[:1], bonus=None)]
    assert price(short, read_pass_costs(H200)) == []
    assert not pays_figure(short, read_pass_costs(H200), fit=True).data
    assert committed_figure(short, fit=True).data is not None
