"""Sampling that stays lossless: every decoder equals plain sampling with the same seed,
token for token.

The noise of position j depends only on (seed, j) (logitspec/core/sampling.py), so the tree
decoders reproduce one-token-at-a-time sampling exactly; the tests below check that, and
check that keying the noise by anything else breaks it. The rule itself and the sampler's
distribution are checked in tests/unit/test_sampling_rule.py.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

import logitspec.core.sampling as sampling
from helpers.families import prepared
from helpers.lossless_prompts import lossless_prompts
from helpers.references import BUNDLED_MAX_NEW
from helpers.tiny_models import greedy_reference, sampling_reference, tiny_prompts
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.runner import run_trace
from logitspec.core.sampling import SamplingRule
from logitspec.core.verify import LazyHead

pytestmark = [pytest.mark.lossless, pytest.mark.usefixtures("one_thread")]

MAX_NEW = 40
VARIANTS = [("vanilla", "static"), ("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]
SAMPLING = [  # (temperature, top_p, top_k, first seed); each prompt adds its index to the seed
    pytest.param(0.5, 1.0, 0, 11, id="T0.5"),
    pytest.param(1.0, 0.9, 0, 101, id="T1.0-top_p0.9"),
    pytest.param(1.5, 1.0, 20, 1001, id="T1.5-top_k20"),
]


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


# ----- greedy as a special case -----------------------------------------------------------------

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
    assert check_equal_to_plain_sampling(prepared(family), tiny_prompts(2), 1.0, 0.9, 0, 5) > 0


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2-window8", "gemma3-window16", "gemma2-window8", "phi"])
@pytest.mark.parametrize("temperature, top_p, top_k, seed", SAMPLING)
def test_more_families_equal_plain_sampling(family, temperature, top_p, top_k, seed):
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
    prompts = {p.id: p.text for p in lossless_prompts()}
    extra = 0
    # top-p and top-k over the real vocabulary (the tiny models' is 128 tokens), each on a prompt the drafts reach
    for pid, (temperature, top_p, top_k, seed) in [("summarization-241", (1.0, 0.9, 0, 2)),
                                                   ("code-121", (1.5, 1.0, 50, 3))]:
        s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW, temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)
        want = run_trace(bundled, prompts[pid], "vanilla", s).tokens
        for method, tree in VARIANTS[1:]:
            got = run_trace(bundled, prompts[pid], method, replace(s, tree=tree))
            assert got.tokens == want, (pid, method, tree)
            extra += len(got.tokens) - got.forward_steps
    assert extra > 0
