"""Sampling that stays lossless: every decoder equals plain sampling with the same seed,
token for token, and plain sampling draws from softmax(process(logits)).

The noise of position j depends only on (seed, j) (logitspec/sampling.py), so the tree
decoders reproduce one-token-at-a-time sampling exactly; the tests below check that, check
that keying the noise by anything else breaks it, and check the sampler against the exact
distribution of the first two tokens with a chi-square test.
"""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
import torch

import logitspec.sampling as sampling
from logitspec.costtree import stats_for, temperature_bucket
from logitspec.decoders import DecodeSettings, decode
from logitspec.sampling import SamplingRule, gumbel, probabilities, process, sample
from logitspec.trace import RunTrace
from logitspec.verify import LazyHead
from tiny_models import greedy_reference, repetitive_prompt, sampling_reference, tiny_from_config

pytestmark = pytest.mark.usefixtures("one_thread")

MAX_NEW = 40
VARIANTS = [("vanilla", "static"), ("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]
SAMPLING = [  # (temperature, top_p, top_k, first seed); each prompt adds its index to the seed
    pytest.param(0.5, 1.0, 0, 11, id="T0.5"),
    pytest.param(1.0, 0.9, 0, 101, id="T1.0-top_p0.9"),
    pytest.param(1.5, 1.0, 20, 1001, id="T1.5-top_k20"),
]
FALSE_ALARM = 1e-3  # chi-square tests reject at p below this


def tiny_prompts(n: int, length: int = 48) -> list[list[int]]:
    return [repetitive_prompt(random.Random(700 + i), length) for i in range(n)]


def tokens_of(model, prompt, method: str, s: DecodeSettings) -> tuple[list[int], int]:
    """The decoder's tokens, and how many tokens drafts added beyond one per forward pass."""
    steps = list(decode(model, list(prompt), method, s))
    got = [t for st in steps for t in st.tokens]
    return got, len(got) - sum(st.forward for st in steps)


def check_equal_to_plain_sampling(model, prompts, temperature, top_p, top_k, seed) -> int:
    """Assert every decoder equals plain sampling; return the tokens drafts added."""
    extra = 0
    for i, prompt in enumerate(prompts):
        s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=temperature, top_p=top_p, top_k=top_k, seed=seed + i)
        want = sampling_reference(model, prompt, MAX_NEW, s)
        for method, tree in VARIANTS:
            got, added = tokens_of(model, prompt, method, replace(s, tree=tree))
            assert got == want, (method, tree, i)
            extra += added
    return extra


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


def test_top_k_one_is_greedy(tiny_llama):
    prompt = tiny_prompts(1)[0]
    s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.5, top_k=1, seed=3)
    want = greedy_reference(tiny_llama, prompt, MAX_NEW)
    for method, tree in VARIANTS:
        assert tokens_of(tiny_llama, prompt, method, replace(s, tree=tree))[0] == want, (method, tree)


def test_temperature_zero_is_greedy_and_draws_no_noise(tiny_llama, monkeypatch):
    def no_noise(*args, **kwargs):
        raise AssertionError("temperature 0 drew noise")

    monkeypatch.setattr(sampling, "gumbel", no_noise)
    s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=0.0, top_p=0.3, top_k=2, seed=12345)
    assert SamplingRule.of(s) is None
    for prompt in tiny_prompts(3):
        want = greedy_reference(tiny_llama, prompt, MAX_NEW)
        for method, tree in VARIANTS:
            assert tokens_of(tiny_llama, prompt, method, replace(s, tree=tree))[0] == want, (method, tree)


# ----- lossless: every decoder equals plain sampling ------------------------------------------

@pytest.mark.parametrize("temperature, top_p, top_k, seed", SAMPLING)
@pytest.mark.parametrize("model_name", ["tiny_llama", "tiny_gpt2"])
def test_tiny_models_equal_plain_sampling(request, model_name, temperature, top_p, top_k, seed):
    model = request.getfixturevalue(model_name)
    assert check_equal_to_plain_sampling(model, tiny_prompts(3), temperature, top_p, top_k, seed) > 0


@pytest.mark.parametrize("family", ["mistral-window8", "cohere", "granite"])
def test_sliding_window_and_scaled_head_families_equal_plain_sampling(family):
    from test_families import prepared

    assert check_equal_to_plain_sampling(prepared(family), tiny_prompts(2), 1.0, 0.9, 0, 5) > 0


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2-window8", "gemma3-window16", "gemma2-window8", "phi"])
@pytest.mark.parametrize("temperature, top_p, top_k, seed", SAMPLING)
def test_more_families_equal_plain_sampling(family, temperature, top_p, top_k, seed):
    from test_families import prepared

    assert check_equal_to_plain_sampling(prepared(family), tiny_prompts(3), temperature, top_p, top_k, seed) > 0


def test_noise_per_forward_pass_instead_of_per_position_breaks_equality(tiny_llama, monkeypatch):
    """Keyed by the forward pass (every depth of a tree sharing its first position's draw),
    vanilla is still a sampler, but the tree decoders no longer reproduce it."""
    monkeypatch.setattr(LazyHead, "position", lambda self, node: self.context_len + 1)
    differs = 0
    for i, prompt in enumerate(tiny_prompts(6)):
        s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.0, seed=40 + i, tree="static")
        want = sampling_reference(tiny_llama, prompt, MAX_NEW, s)
        assert tokens_of(tiny_llama, prompt, "vanilla", s)[0] == want  # one token per pass: unchanged
        differs += tokens_of(tiny_llama, prompt, "logitspec", s)[0] != want
    assert differs > 0


@pytest.mark.slow
def test_bundled_model_equals_plain_sampling(bundled):
    from logitspec.runner import run_trace
    from lossless_prompts import lossless_prompts

    prompts = {p.id: p.text for p in lossless_prompts()}
    extra = 0
    for pid, (temperature, top_p, top_k, seed) in [("copy-list", (0.7, 1.0, 0, 1)),
                                                   ("summarization-241", (1.0, 0.9, 0, 2)),
                                                   ("code-121", (1.5, 1.0, 50, 3))]:
        s = DecodeSettings(max_new_tokens=48, temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)
        want = run_trace(bundled, prompts[pid], "vanilla", s).tokens
        for method, tree in VARIANTS[1:]:
            got = run_trace(bundled, prompts[pid], method, replace(s, tree=tree))
            assert got.tokens == want, (pid, method, tree)
            extra += len(got.tokens) - got.forward_steps
    assert extra > 0


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
