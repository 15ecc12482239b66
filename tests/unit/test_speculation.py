"""Next-next speculation: the top-k of the last logits, the root excluded."""
from __future__ import annotations

import pytest
import torch

from logitspec.core.speculation import speculate


def test_speculate_ranks_the_others_by_logit_with_their_probabilities():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3000, generator=g) * 3
    root = int(logits.argmax())
    cands, root_prob = speculate(logits, root, 8)
    probs = torch.softmax(logits, -1)
    order = [i for i in torch.argsort(logits, descending=True).tolist() if i != root][:8]
    assert [c.token for c in cands] == order
    assert [c.rank for c in cands] == list(range(1, 9))
    assert root_prob == pytest.approx(float(probs[root]))
    for c in cands:
        assert c.prob == pytest.approx(float(probs[c.token]))
        assert c.logit == pytest.approx(float(logits[c.token]))


def test_speculate_keeps_k_when_the_root_is_not_the_argmax():
    # A sampled root may lie anywhere in the vocabulary: k others are still returned.
    logits = torch.arange(50, dtype=torch.float32)
    cands, root_prob = speculate(logits, 3, 5)
    assert [c.token for c in cands] == [49, 48, 47, 46, 45]
    assert root_prob == pytest.approx(float(torch.softmax(logits, -1)[3]))
