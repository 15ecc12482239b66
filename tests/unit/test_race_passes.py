"""The race in forward passes: the passes figure and the verdict's two figures, from recorded
traces (tests/fixtures, traces/races). Passes are counts (visual.counts); nothing here is timed.
"""
from __future__ import annotations

import copy
import dataclasses

import pytest

from helpers.figures import trace_named
from helpers.paths import FIXTURES, ROOT
from logitspec.analysis.lanes import label, race_order
from serve.race import lane_run
from logitspec.analysis.race import MIN_COMPARED_TOKENS, load_race, result_of
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace
from visual.counts import run_counts, run_words
from visual.race import pass_points, passes_figure, race_figure
from visual.verdict import compared_rates, counters_html, per_pass, verdict_text

FOUR_LANES = FIXTURES / "races" / "summarization-242-four-lanes.json"  # scripts/record_race.py --pld --static
RECORDED = ROOT / "traces" / "races" / "summarization-242.json"


@pytest.fixture(scope="module")
def four() -> dict[str, RunTrace]:
    return load_race(FOUR_LANES)[0]


def _as(trace: RunTrace, method: str) -> RunTrace:
    t = RunTrace.from_dict(trace.to_dict())
    t.method = method
    return t


def _legend(fig, start: str) -> str:
    """The one legend entry of an app figure that starts with `start` (the entries carry the labels)."""
    found = [d.name for d in fig.data if d.name and d.name.startswith(start)]
    assert len(found) == 1, (start, [d.name for d in fig.data])
    return found[0]


def _cut(trace: RunTrace, steps: int) -> RunTrace:
    t = copy.copy(trace)
    t.steps = trace.steps[:steps]
    return t


def test_the_recording_holds_every_lane_with_the_paper_tree_as_the_static_lane(four):
    # recorded before Token Recycling's lane, the baselines' and the rivals'
    assert list(four) == [m for m in race_order() if m not in ("recycling", "lookahead", "rest", "racer", "suffix")]
    st = four["logitspec-static"]
    assert st.method == "logitspec" and st.settings["tree"] == "static"
    assert st.settings["capacity"] == DecodeSettings().capacity == 64
    assert max(len(s.verified_nodes) for s in st.steps) > 16  # bigger than the cost tree's CPU bound
    assert all(t.tokens == four["vanilla"].tokens for t in four.values())  # lossless, every lane


def test_the_static_lane_is_logitspecs_static_tree_at_the_papers_capacity():
    form = DecodeSettings(capacity=8, tree="cost", k=32, max_new_tokens=24)
    method, s = lane_run("logitspec-static", form)
    assert method == "logitspec" and s.tree == "static" and s.capacity == 64
    assert (s.k, s.max_new_tokens) == (32, 24)  # the race's other settings are kept
    for lane in ("vanilla", "pld", "logitspec"):
        assert lane_run(lane, form) == (lane, form)


@pytest.mark.parametrize("path", [FOUR_LANES, RECORDED], ids=["four-lanes", "recorded"])
def test_each_line_ends_at_the_runs_counted_passes_and_tokens(path):
    lanes = load_race(path)[0]
    fig = passes_figure(lanes)
    for name, t in lanes.items():
        xs, ys = pass_points(t)
        c = run_counts(t)
        line = trace_named(fig, label(name))
        assert (line.x[-1], line.y[-1]) == (c.passes, c.tokens) == (xs[-1], ys[-1])
        assert all(isinstance(x, int) for x in line.x)  # counts, never a time
        assert list(line.x) == sorted(line.x) and xs[0] == ys[0] == 0
    assert fig.layout.xaxis.title.text.startswith("Forward passes")


def test_a_final_commit_without_a_pass_adds_tokens_at_the_same_count():
    lanes = load_race(RECORDED)[0]
    van = lanes["vanilla"]
    assert not van.steps[-1].forward
    xs, ys = pass_points(van)
    assert xs[-1] == xs[-2] and ys[-1] > ys[-2]
    assert ys[1:] == list(range(1, len(van.tokens) + 1))  # vanilla: one token a step


def test_the_app_figure_states_each_lanes_tokens_per_pass_as_the_counters_do(four):
    fig = passes_figure(four, fit=True)
    cap = fig.layout.meta["caption"]
    assert cap["title"] == "Race: tokens generated against forward passes"
    for name, t in four.items():
        c = run_counts(t)
        assert f"{label(name)}: {c.tokens_per_pass:.2f}" in cap["subtitle"]
        legend = _legend(fig, label(name) + ":")
        assert run_words(c) in legend and f"{c.tokens_per_pass:.2f} tokens per pass" in legend
    assert "64 tokens:<br>what a GPU verifies in one pass" in _legend(fig, label("logitspec-static") + ":")
    assert "not time" in cap["subtitle"]


def test_a_running_race_has_no_rates_yet(four):
    running = {name: _cut(t, 3) for name, t in four.items()}
    fig = passes_figure(running, fit=True)
    assert "tokens per pass" not in " ".join(d.name or "" for d in fig.data)
    assert "(running)" in _legend(fig, label("logitspec") + ":")


def test_a_stopped_race_gives_each_lanes_tokens_per_pass_as_the_table_does(four):
    stopped = {"vanilla": _cut(four["vanilla"], 20), "pld": _cut(four["pld"], 24),
               "logitspec": _cut(four["logitspec"], 26), "logitspec-static": _cut(four["logitspec-static"], 16)}
    res = result_of(stopped)
    n = res.compared_tokens
    assert n == min(len(t.tokens) for t in stopped.values()) and res.comparable
    rates = per_pass(res)
    table = counters_html(stopped, False, stop_reason="stopped")
    for name, t in stopped.items():
        # The verdict, the figure and the table's tokens/pass column: one number, the lane's own run.
        assert rates[name] == pytest.approx(run_counts(t).tokens_per_pass)
        assert f"<td>{run_counts(t).tokens_per_pass:.2f}</td>" in _row(table, name)
    assert run_counts(stopped["logitspec"]).tokens > n  # a longer lane's later steps count too
    fig = passes_figure(stopped, stopped=True, fit=True)
    assert f"{rates['logitspec']:.2f} tokens per pass" in _legend(fig, label("logitspec") + ":")
    assert "each over its own run in a stopped race" in fig.layout.meta["caption"]["subtitle"]
    text = verdict_text(res, "stopped")
    assert f"per forward pass, <b>{rates['logitspec']:.2f}</b> tokens" in text
    assert f"{rates['pld']:.2f} for prompt lookup" in text and "(each lane over its own run)" in text
    assert f"<b>{rates['logitspec']:.2f}</b>" in _verdict_of(table)


def test_a_race_stopped_after_a_few_tokens_gives_no_speed_up(four):
    stopped = {name: _cut(t, 1) for name, t in four.items()}
    res = result_of(stopped)
    assert 0 < res.compared_tokens < MIN_COMPARED_TOKENS and not res.comparable and res.speedups == {}
    text = verdict_text(res, "stopped")
    assert "stopped too early to compare speed" in text and "×" not in text and "per forward pass" not in text
    assert "those tokens identical to vanilla's" in text.lower()
    table = counters_html(stopped, False, stop_reason="stopped")
    assert "×" not in table and table.count("—") == len(stopped) - 1
    fig = race_figure(stopped, stopped=True, fit=True)
    assert not any("vanilla's speed" in (d.name or "") for d in fig.data)
    # At the threshold, the speed-up is given.
    enough = {name: _cut(t, MIN_COMPARED_TOKENS) for name, t in four.items()}
    assert result_of(enough).comparable and "×" in verdict_text(result_of(enough), "stopped")


def _row(table: str, name: str) -> str:
    return table.split(f"<tr data-lane='{name}'>")[1].split("</tr>")[0]


def _verdict_of(table: str) -> str:
    return table.split("<p class='verdict'>")[1].split("</p>")[0]


def test_the_verdict_states_speed_on_this_cpu_and_tokens_per_pass_against_each_lane(four):
    res = result_of(four)
    c = {name: run_counts(t).tokens_per_pass for name, t in four.items()}
    text = verdict_text(res)
    rates = compared_rates(res)
    assert text.startswith(f"LogitSpec (cost tree) <b>{res.speedups['logitspec']:.2f}×</b> the tokens/s of vanilla greedy "
                           f"decoding on this CPU ({rates['logitspec']:.1f} against {rates['vanilla']:.1f} "
                           "tokens/s); per forward pass, ")
    assert (f"per forward pass, <b>{c['logitspec']:.2f}</b> tokens against {c['pld']:.2f} for prompt lookup, "
            f"{c['logitspec-static']:.2f} for LogitSpec, the paper's static tree (64 tokens: what a GPU verifies in "
            f"one pass; {res.speedups['logitspec-static']:.2f}× vanilla's tokens/s here) and {c['vanilla']:.2f} "
            "for vanilla") in text
    assert "output identical to vanilla, token for token" in text and "DIFFERENT" not in text


def test_the_two_lane_verdict_compares_with_vanilla_alone():
    lanes = {name: t for name, t in load_race(RECORDED)[0].items() if name in ("vanilla", "logitspec")}
    c = {name: run_counts(t).tokens_per_pass for name, t in lanes.items()}
    text = verdict_text(result_of(lanes))
    assert f"per forward pass, <b>{c['logitspec']:.2f}</b> tokens against {c['vanilla']:.2f} for vanilla;" in text
    assert "prompt lookup" not in text and "paper's" not in text


def test_a_lane_other_than_logitspec_that_differs_is_named(four):
    lanes = dict(four)
    st = _as(four["logitspec-static"], "logitspec")
    st.steps = list(st.steps)
    st.steps[1] = dataclasses.replace(st.steps[1], tokens=[t + 1 for t in st.steps[1].tokens])
    lanes["logitspec-static"] = st
    text = verdict_text(result_of(lanes))
    at = len(st.steps[0].tokens)
    assert f"the output of LogitSpec, the paper's static tree DIFFERENT from token {at} on" in text
    assert "output identical to vanilla" in text  # LogitSpec's own lane still is


def test_the_compute_time_race_is_unchanged_by_the_passes_view(four):
    fig = race_figure(four)
    line = trace_named(fig, label("logitspec"))
    assert line.x[-1] == pytest.approx(four["logitspec"].clock_seconds)  # measured seconds: prefill and measuring included
    assert fig.layout.xaxis.title.text == "Compute time (s)"


def _with_choices(trace: RunTrace, at: int, token: int, lead: float, runner_up: int) -> RunTrace:
    """`trace` with every token's lead recorded (far from a tie) and token `at` replaced by
    `token`, chosen by `lead` ulps over `runner_up`."""
    out = copy.deepcopy(trace)
    seen = 0
    for s in out.steps:
        s.leads, s.runners_up = [500.0] * len(s.tokens), [0] * len(s.tokens)
        if seen <= at < seen + len(s.tokens):
            s.tokens[at - seen], s.leads[at - seen], s.runners_up[at - seen] = token, lead, runner_up
        seen += len(s.tokens)
    return out


def test_a_lane_that_parts_at_a_near_tie_is_said_to_be_equal_up_to_it(four):
    lanes = {name: t for name, t in four.items() if name in ("vanilla", "logitspec")}
    at = len(lanes["logitspec"].steps[0].tokens) + 1
    want = lanes["vanilla"].tokens[at]
    other = want + 1
    lanes["vanilla"] = _with_choices(lanes["vanilla"], at, want, 0.0, other)
    for t in lanes.values():
        t.dtype = "bfloat16"
    lanes["logitspec"] = _with_choices(lanes["logitspec"], at, other, 1.0, want)
    res = result_of(lanes)
    assert not res.lossless and res.near_ties == 1 and res.first_difference == {"logitspec": at}
    text = verdict_text(res)
    assert (f"output equal to vanilla's up to a near-tie: the same first {at} tokens, then a near-tie: the top "
            "two tokens there were 0 and 1 units in the last place of bfloat16 apart in the two runs") in text
    assert "DIFFERENT" not in text
    lanes["logitspec"] = _with_choices(lanes["logitspec"], at, other, 40.0, want)  # more than rounding moves
    text = verdict_text(result_of(lanes))
    assert f"output DIFFERENT from vanilla from token {at} on" in text and "near-tie" not in text


def test_a_race_read_from_a_file_is_judged_on_the_machine_it_ran_on(four):
    """A recorded race's verdict is judged on the machine it was recorded on (named in the note under the
    table), never "on this CPU" beside "Recorded race (not live)"."""
    from visual.verdict import recorded_note

    lanes = four
    live = counters_html(lanes, False)
    assert "on this CPU" in live and "tokens/s here)" in live
    machine = "AMD EPYC 7551 32-Core Processor, 2 cores, AVX2, no AVX-512"
    recorded = counters_html(lanes, False, recorded_on=machine)
    assert "on this CPU" not in recorded and " here)" not in recorded
    assert "decoding on the recording's machine (" in recorded and "tokens/s there)" in recorded
    assert "AMD EPYC 7551 32-Core Processor, 2 cores</span>; not live" in counters_html(lanes, False, recorded_note(machine), recorded_on=machine)
    unnamed = counters_html(lanes, False, recorded_on="")
    assert "on the recording's machine" in unnamed and "on this CPU" not in unnamed
