"""The budget figure (visual.observations.budget_figure) builds for every shipped trace, for the
page and for the app with its slide, and draws exactly what logitspec.analysis.budget replays."""
from __future__ import annotations

from dataclasses import replace

import pytest

from helpers.figures import shipped_traces, trace_named
from logitspec.analysis.budget import BUDGET_MAX, replay_budgets
from visual import budget_figure, fit
from visual.observations import BUDGET_NAMES, GPU_BUDGET_WORDS, _own_name

SHIPPED = shipped_traces()


@pytest.mark.parametrize("name,trace", SHIPPED, ids=[n for n, _ in SHIPPED])
def test_the_figure_draws_the_replay_for_every_shipped_trace(name, trace):
    rep = replay_budgets(trace)
    page = budget_figure(trace, theme="dark")
    for key, curve in rep.curves.items():
        line = trace_named(page, BUDGET_NAMES[key])
        assert list(line.x) == list(range(1, BUDGET_MAX + 1)) and list(line.y) == curve.per_pass
        assert list(trace_named(page, f"{BUDGET_NAMES[key]} at {BUDGET_MAX}").y) == [curve.per_pass[-1]]
    own = trace_named(page, _own_name(rep))
    assert (own.x[0], own.y[0]) == (rep.own_budget, rep.tokens_per_pass)
    gpu = trace_named(page, f"{BUDGET_MAX}: {GPU_BUDGET_WORDS}")  # written beside the line on a page
    assert list(gpu.x) == [BUDGET_MAX, BUDGET_MAX] and GPU_BUDGET_WORDS in gpu.text[1] and not gpu.showlegend
    app = budget_figure(trace, fit=True)
    gpu = [t for t in app.data if t.name.replace("<br>", " ") == f"{BUDGET_MAX}: {GPU_BUDGET_WORDS}"]
    assert len(gpu) == 1 and gpu[0].showlegend  # in the legend on a narrow plot
    assert "tree budget" in fit.caption_html(app) and "no speed simulated" in fit.caption_html(app)
    assert len(fit.slide_figure(app).data) == len(app.data)


def test_a_run_without_a_pass_or_whose_steps_do_not_add_up_says_why():
    trace = SHIPPED[0][1]
    empty = budget_figure(replace(trace, steps=[]), fit=True)
    assert not empty.data and "no forward pass yet" in empty.layout.annotations[0].text
    broken = replace(trace, prompt_tokens=trace.prompt_tokens[1:])
    assert "does not add up" in budget_figure(broken).layout.annotations[0].text.replace("<br>", " ")


def test_the_bench_figure_draws_the_curves_pooled_over_its_runs():
    from logitspec.analysis.budget import pooled
    from visual.bench import BUDGET_NAMES as BENCH_NAMES, budget_curve_figure

    runs = [t for _, t in SHIPPED if t.method == "logitspec" and t.settings.get("tree") == "static"]
    b = pooled([replay_budgets(t) for t in runs]).summary()
    assert b["own_replayed"] == b["tokens_per_pass"] and set(b["curves"]) == {"paper", "pld"}
    assert budget_curve_figure({"methods": {"pld": {"overall": {}}}}) is None  # a report without the replay
    fig = budget_curve_figure({"methods": {"logitspec-static": {"overall": {"budget": b}}}})
    for key, ys in b["curves"].items():
        assert list(trace_named(fig, BENCH_NAMES[key]).y) == ys
    own = [t for t in fig.data if t.name.startswith("logitspec-static's own trees")]
    assert len(own) == 1 and (own[0].x[0], own[0].y[0]) == (b["own_budget"], b["tokens_per_pass"])
    assert "what a GPU would verify in one pass" in trace_named(fig, "B = 64").text[1]
