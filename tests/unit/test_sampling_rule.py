"""The sampling rule and the sampler: process() matches transformers' warpers, the noise
depends on (seed, position) only, decoders draw from the exact distribution (chi-square
test), and what traces and the cost model record about the draws. That every decoder equals
plain sampling token for token is checked in tests/lossless/test_sampling.py.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers.tiny_models import tiny_from_config, tiny_prompts
from logitspec.sizing.costtree import stats_for, temperature_bucket
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.core.sampling import SamplingRule, gumbel, probabilities, process, sample
from logitspec.core.trace import RunTrace

pytestmark = pytest.mark.usefixtures("one_thread")

MAX_NEW = 40
FALSE_ALARM = 1e-3  # chi-square tests reject at p below this


# ----- the rule itself ------------------------------------------------------------------------

def test_process_matches_transformers_warpers():
    from transformers.generation.logits_process import (TemperatureLogitsWarper, TopKLogitsWarper,
                                                        TopPLogitsWarper)

    g = torch.Generator().manual_seed(0)
    for temperature, top_p, top_k in [(0.7, 1.0, 0), (1.0, 0.9, 0), (1.3, 0.5, 0), (0.9, 1.0, 5), (1.2, 0.8, 40)]:
        logits = torch.randn(1, 1000, generator=g) * 3
        want = TemperatureLogitsWarper(temperature)(None, logits.clone())
        if top_k:
            want = TopKLogitsWarper(top_k)(None, want)
        if top_p < 1:
            want = TopPLogitsWarper(top_p)(None, want)
        got = process(logits[0], SamplingRule(temperature, top_p, top_k, 0))
        assert torch.equal(torch.isinf(got), torch.isinf(want[0])), (temperature, top_p, top_k)
        assert torch.allclose(got[~torch.isinf(got)], want[0][~torch.isinf(want[0])])


def test_noise_depends_on_seed_and_position_only():
    a = gumbel(7, 100, 50)
    assert a.shape == (50,) and a.dtype == torch.float32 and a.device.type == "cpu"
    assert torch.equal(a, gumbel(7, 100, 50))
    assert not torch.equal(a, gumbel(7, 101, 50)) and not torch.equal(a, gumbel(8, 100, 50))
    # Standard Gumbel: mean is the Euler-Mascheroni constant, variance pi^2 / 6.
    big = gumbel(1, 2, 200_000).double()
    assert abs(big.mean().item() - 0.5772) < 0.01 and abs(big.var().item() - 1.6449) < 0.03


# ----- the sampler samples the right distribution ---------------------------------------------

def chi_square_p(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """p-value of Pearson's chi-square test of counts against probs (same shape); cells
    expected fewer than 5 times are merged into one (with the next smallest if still short)."""
    n = counts.sum().double()
    e, o = (probs.double() * n).flatten(), counts.double().flatten()
    order = torch.argsort(e)
    e, o = e[order], o[order]
    cut = int((e.cumsum(0) < 5).sum()) + 1  # the smallest cells, merged until they hold 5
    e = torch.cat([e[:cut].sum()[None], e[cut:]])
    o = torch.cat([o[:cut].sum()[None], o[cut:]])
    stat = ((o - e) ** 2 / e).sum()
    df = torch.tensor((len(e) - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(df, stat / 2))


@torch.inference_mode()
def first_two_exact(model, prompt: list[int], s: DecodeSettings) -> torch.Tensor:
    """[V, V]: P(t1) * P(t2 | t1) from the model's logits."""
    rule = SamplingRule.of(s)
    p1 = probabilities(model(input_ids=torch.tensor([prompt])).logits[0, -1], rule)
    vocab = p1.shape[-1]
    rows = model(input_ids=torch.tensor([prompt + [t] for t in range(vocab)])).logits[:, -1]
    p2 = torch.stack([probabilities(rows[t], rule) for t in range(vocab)])
    return p1[:, None] * p2


SMALL_VOCAB, DRAWS = 16, 2000


@pytest.mark.slow
@pytest.mark.parametrize("method, temperature, top_p", [("vanilla", 1.0, 1.0), ("logitspec", 1.0, 1.0),
                                                        ("logitspec", 0.8, 0.9)])
def test_first_two_tokens_follow_the_exact_distribution(method, temperature, top_p):
    model = tiny_from_config("LlamaConfig", "LlamaForCausalLM", seed=3, vocab_size=SMALL_VOCAB)
    prompt = [1, 2, 3, 4, 1, 2, 3]
    s = DecodeSettings(max_new_tokens=2, temperature=temperature, top_p=top_p, tree="static")
    counts = torch.zeros(SMALL_VOCAB, SMALL_VOCAB)
    drafted = 0
    for seed in range(DRAWS):  # fixed seeds: the test is deterministic
        steps = list(decode(model, prompt, method, replace(s, seed=seed)))
        t1, t2 = [t for st in steps for t in st.tokens]
        counts[t1, t2] += 1
        drafted += len(steps[0].tokens) == 2
    exact = first_two_exact(model, prompt, s)
    assert counts[exact == 0].sum() == 0  # nothing outside top-p's set was ever drawn
    assert chi_square_p(counts, exact) > FALSE_ALARM
    # The test has power: the same draws are rejected against a neighbouring temperature.
    assert chi_square_p(counts, first_two_exact(model, prompt, replace(s, temperature=temperature * 1.3))) < FALSE_ALARM
    if method == "logitspec":
        assert drafted > DRAWS // 2  # t2 came from the verified tree, not a second pass


# ----- what the trace and the cost model record -----------------------------------------------

def test_trace_records_the_draws_and_the_targets_probabilities(tiny_llama):
    prompt = tiny_prompts(1)[0]
    s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.0, top_p=0.9, seed=9, tree="static")
    steps = list(decode(tiny_llama, prompt, "logitspec", s))
    for st in steps:
        if not st.forward:
            continue
        assert len(st.sampled) == len(st.accepted_path)
        assert st.sampled == (st.tokens[1:] + [st.bonus])[: len(st.sampled)]
        visited = set(st.accepted_path)
        for node in st.verified_nodes:
            assert (node.target_prob is not None) == (node.parent in visited)
        for a, b in zip(st.accepted_path, st.accepted_path[1:]):
            assert 0 < st.tree[b].target_prob <= 1  # an accepted child was possible
    trace = RunTrace("logitspec", "tiny", "", prompt, s.to_dict(), steps=steps)
    again = RunTrace.from_json(trace.to_json())
    assert again.settings["temperature"] == 1.0 and again.settings["seed"] == 9
    assert [st.sampled for st in again.steps] == [st.sampled for st in steps]
    assert [n.target_prob for n in again.steps[0].tree] == [n.target_prob for n in steps[0].tree]


def test_old_traces_load_without_draws(fixture_traces):
    t = RunTrace.load(fixture_traces[0])
    assert all(st.sampled == [] for st in t.steps)
    assert all(n.target_prob is None for st in t.steps for n in st.tree)


def test_acceptance_statistics_are_kept_per_temperature():
    assert [temperature_bucket(t) for t in (0, 0.01, 0.7, 0.75, 1.0, 2.0)] == [0.0, 0.25, 0.75, 0.75, 1.0, 2.0]
    model = tiny_from_config("LlamaConfig", "LlamaForCausalLM", seed=5)
    assert stats_for(model, 0.7) is stats_for(model, 0.75) and stats_for(model, 0.7) is not stats_for(model, 0.0)
    prompt = tiny_prompts(1)[0]
    s = DecodeSettings(max_new_tokens=16, temperature=1.0, seed=1, tree="cost")
    list(decode(model, prompt, "logitspec", s))
    assert stats_for(model, 1.0).counts and not stats_for(model, 0.0).counts
    assert sample(torch.tensor([0.0, 5.0, 1.0]), 3, DecodeSettings()) == 1  # greedy by default
