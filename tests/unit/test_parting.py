"""Where two outputs part, and when a near-tie explains it (logitspec/analysis/parting.py), from the
leads recorded at each choice (sampling.leads_of)."""
from __future__ import annotations

import pytest
import torch

from logitspec.analysis.parting import NEAR_TIE_ULPS, Choices, parting
from logitspec.core.sampling import SamplingRule, choose_with_lead, leads_of, perturbed, process, ulp


def test_ulp_is_the_spacing_of_the_dtype_at_that_magnitude():
    assert ulp(33.0, torch.bfloat16) == 0.25 and ulp(31.9, torch.bfloat16) == 0.125
    assert ulp(-1.5, torch.float16) == 2.0 ** -10
    assert ulp(33.0, torch.float32) == 2.0 ** -18


def test_a_lead_is_the_top_two_scores_apart_in_ulps_of_the_logits_dtype():
    logits = torch.tensor([[33.0, 33.5, 10.0], [0.0, 2.0, 1.0]], dtype=torch.bfloat16)
    first, second = leads_of(logits, [1, 1])
    assert (first.ulps, first.runner_up) == (2.0, 0)  # 0.5 apart, 0.25 a step at 33
    assert second.runner_up == 2 and second.ulps == 1.0 / ulp(2.0, torch.bfloat16)


def test_an_exact_tie_names_the_token_not_chosen_as_runner_up():
    logits = torch.tensor([5.0, 7.0, 7.0, 1.0])
    token, lead = choose_with_lead(logits, 0, None)
    assert token == 1 and lead.ulps == 0.0 and lead.runner_up == 2


def test_a_sampled_lead_is_in_logit_units_and_none_when_nothing_else_could_be_drawn():
    logits = torch.tensor([3.0, 1.0, 2.0, -4.0])
    rule = SamplingRule(temperature=0.5, top_p=1.0, top_k=0, seed=1)
    token, lead = choose_with_lead(logits, 9, rule)
    scores = perturbed(process(logits, rule), 9, rule)
    top = scores.topk(2).values
    size = ulp(float(logits[scores.topk(2).indices].abs().max()), torch.float32)
    assert token == int(scores.argmax()) and lead.ulps == pytest.approx(float(top[0] - top[1]) * 0.5 / size)
    _, only = choose_with_lead(logits, 9, SamplingRule(temperature=1.0, top_p=1.0, top_k=1, seed=1))
    assert only.ulps is None and only.runner_up == -1


def choices(tokens, leads, runners, dtype="bfloat16"):
    return Choices(tokens, leads, runners, dtype)


BASE = choices([5, 6, 7, 8], [None, 3.0, 0.0, 40.0], [9, 9, 4, 9])


def test_two_runs_that_swap_their_top_two_within_the_rounding_part_at_a_near_tie():
    lane = choices([5, 6, 4, 1], [None, 3.0, 1.0, 50.0], [9, 9, 7, 2])
    p = parting(lane, BASE, 4)
    assert (p.index, p.near_tie, p.lead, p.lane_lead) == (2, True, 0.0, 1.0)


@pytest.mark.parametrize("lane, why", [
    (choices([5, 6, 4, 1], [None, 3.0, 1.0, 0.0], [9, 9, 3, 2]), "the lane's runner-up is not vanilla's token"),
    (choices([5, 6, 4, 1], [None, 3.0, 40.0, 0.0], [9, 9, 7, 2]), "the lane led by far more than rounding"),
    (choices([5, 6, 4, 1], [], [], "bfloat16"), "no leads recorded (an older trace)"),
])
def test_anything_else_is_a_real_difference(lane, why):
    p = parting(lane, BASE, 4)
    assert p.index == 2 and not p.near_tie, why


def test_the_tolerance_is_the_dtypes():
    lane = choices([5, 6, 4, 1], [None, 3.0, 20.0, 0.0], [9, 9, 7, 2])
    assert not parting(lane, BASE, 4).near_tie  # 20 ulps of bfloat16: more than its kernels part by
    edge = choices([5, 6, 4, 1], [None, 3.0, NEAR_TIE_ULPS["bfloat16"], 0.0], [9, 9, 7, 2])
    assert parting(edge, BASE, 4).near_tie  # the two leads add up to the bound: still a near-tie
    f32 = parting(choices(lane.tokens, lane.leads, lane.runners_up, "float32"),
                  choices(BASE.tokens, BASE.leads, BASE.runners_up, "float32"), 4)
    assert f32.near_tie and 20.0 <= NEAR_TIE_ULPS["float32"]


def test_equal_runs_do_not_part_unless_one_ended_sooner():
    same = choices(BASE.tokens, BASE.leads, BASE.runners_up)
    assert parting(same, BASE, 4) is None
    short = choices(BASE.tokens[:3], BASE.leads[:3], BASE.runners_up[:3])
    assert parting(short, BASE, 3) is None
    ended = parting(short, BASE, 3, both_ended=True)
    assert ended.index == 3 and not ended.near_tie
