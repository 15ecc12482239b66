"""Out of accelerator memory during verification: a smaller tree, or a clear message."""
from __future__ import annotations

import random

import pytest
import torch

from logitspec.core.errors import DecodeError
from logitspec.decoders import decode
from logitspec.core.settings import DecodeSettings
from helpers.tiny_models import greedy_reference, repetitive_prompt, tiny_llama


class MemoryCeiling:
    """Make the second decoder layer fail like an allocator would above `limit` tokens.

    It fires after the first layer has already appended to the KV cache, as a real failure
    midway through a forward pass would. The first call (the prefill) always passes.
    """

    def __init__(self, model, limit: int) -> None:
        self.limit, self.fired, self.calls = limit, 0, 0
        self.handle = model.model.layers[1].register_forward_pre_hook(self.check)

    def check(self, module, args):
        self.calls += 1
        if self.calls > 1 and args[0].shape[1] > self.limit:
            self.fired += 1
            raise torch.OutOfMemoryError("CUDA out of memory (test ceiling)")


@pytest.mark.lossless
def test_out_of_memory_falls_back_to_a_smaller_tree_and_stays_lossless():
    model = tiny_llama(seed=3)
    prompt = repetitive_prompt(random.Random(5), 120)
    settings = DecodeSettings(max_new_tokens=40, tree="static", capacity=32)
    expected = greedy_reference(model, prompt, 40)
    ceiling = MemoryCeiling(model, limit=5)
    steps = list(decode(model, prompt, "logitspec", settings))
    ceiling.handle.remove()
    assert ceiling.fired > 0
    assert [t for s in steps for t in s.tokens] == expected
    shrunk = [s for s in steps if any(n.prune_reason == "memory" for n in s.tree)]
    assert shrunk, "no step recorded a tree cut for memory"
    for s in shrunk:
        assert 1 <= len(s.verified_nodes) <= 5
        assert all(n.id < len(s.verified_nodes) for n in s.verified_nodes)


def test_out_of_memory_for_one_token_ends_with_a_clear_message():
    model = tiny_llama(seed=3)
    prompt = repetitive_prompt(random.Random(6), 60)
    ceiling = MemoryCeiling(model, limit=0)  # after the prefill, even the root alone fails
    gen = decode(model, prompt, "logitspec", DecodeSettings(max_new_tokens=10, tree="static"))
    with pytest.raises(DecodeError, match="out of accelerator memory"):
        list(gen)
    ceiling.handle.remove()
