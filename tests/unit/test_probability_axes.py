"""Log probability axes label only 1, 2 and 5 times a power of ten, and Explain's axis stops near
a probability of 1 (it ran to 10, past anything a probability can be)."""
from __future__ import annotations

import math

import pytest

from helpers.paths import TRACE_FIXTURES
from logitspec.core.trace import RunTrace
from visual.candidates import candidates_figure, probability_ticks
from visual.explain import walkthrough
from visual.explain_words import choose_step


@pytest.mark.parametrize("lo, hi", [(-5.3, -0.2), (-1.4, 0.1), (-2.2, -0.6), (-0.9, -0.3)])
def test_ticks_are_one_two_or_five_times_a_power_of_ten_inside_the_range(lo, hi):
    ticks = probability_ticks(lo, hi)
    vals = ticks["tickvals"]
    assert vals and len(vals) == len(ticks["ticktext"]) and len(vals) <= 8
    for v in vals:
        assert lo <= math.log10(v) <= hi
        assert round(v / 10 ** math.floor(math.log10(v) + 1e-9)) in (1, 2, 5)
    assert ticks["minor"]["ticks"] == ""  # no unlabelled minor ticks either


@pytest.mark.parametrize("path", list(TRACE_FIXTURES.values()), ids=lambda p: p.name.split(".")[0])
def test_the_figures_log_axes_use_those_ticks_and_explains_stops_near_one(path):
    t = RunTrace.load(path)
    step = choose_step(t).step
    logits = next(p for p in walkthrough(t, step) if p.key == "logits").figure
    top = logits.layout.yaxis.range[1]
    assert top <= math.log10(1.3), f"the probability axis runs to {10 ** top:.1f}"
    assert max(logits.layout.yaxis.tickvals) <= 1
    cand = candidates_figure(t, step, fit=True)
    assert cand.layout.yaxis.type == "log" and cand.layout.yaxis.tickvals
