"""Losslessness as a property: whatever the prompt and the settings, LogitSpec emits exactly
what greedy decoding emits (tiny random Llama, float32)."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.tiny_models import VOCAB, greedy_reference
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode

pytestmark = [pytest.mark.lossless, pytest.mark.usefixtures("one_thread")]

TREE_MODES = ["static", "cost"]


@st.composite
def prompts(draw) -> list[int]:
    """Token ids; a small alphabet or a repeated motif makes n-gram matches likely."""
    alphabet = draw(st.sampled_from([3, 8, VOCAB]))
    body = draw(st.lists(st.integers(0, alphabet - 1), min_size=1, max_size=60))
    if draw(st.booleans()):
        motif = draw(st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=6))
        body = body + motif * draw(st.integers(1, 5))
    return body


decode_settings = st.builds(
    DecodeSettings,
    max_new_tokens=st.integers(1, 24),
    k=st.integers(1, 160),  # past the vocabulary too: the candidate list just ends
    capacity=st.integers(1, 96),
    ngram_sizes=st.sets(st.integers(1, 5), min_size=1).map(lambda s: tuple(sorted(s))),
    continuation=st.integers(1, 24),
    pld_tokens=st.integers(1, 16),
    tree=st.sampled_from(TREE_MODES),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=prompts(), s=decode_settings)
def test_logitspec_always_equals_greedy(tiny_llama, prompt, s):
    want = greedy_reference(tiny_llama, prompt, s.max_new_tokens)
    steps = list(decode(tiny_llama, prompt, "logitspec", s))
    assert [t for st_ in steps for t in st_.tokens] == want
    for step in steps:
        verified = [n for n in step.tree if not n.pruned]
        assert len(verified) <= max(s.capacity, 1)
        assert len(step.candidates) <= s.k


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=prompts(), s=decode_settings)
def test_logitspec_equals_greedy_on_learned_positions(tiny_gpt2, prompt, s):
    want = greedy_reference(tiny_gpt2, prompt, s.max_new_tokens)
    assert [t for step in decode(tiny_gpt2, prompt, "logitspec", s) for t in step.tokens] == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=prompts(), s=decode_settings, eos_at=st.integers(0, 23))
def test_logitspec_stops_where_greedy_meets_eos(tiny_llama, prompt, s, eos_at):
    free = greedy_reference(tiny_llama, prompt, s.max_new_tokens)
    eos = free[min(eos_at, len(free) - 1)]
    want = free[: free.index(eos) + 1]
    got = [t for step in decode(tiny_llama, prompt, "logitspec", s, eos_ids=[eos]) for t in step.tokens]
    assert got == want
