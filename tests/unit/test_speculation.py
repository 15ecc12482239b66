"""Next-next speculation: the top-k of the last logits, the root excluded."""
from __future__ import annotations

import pytest
import torch

from logitspec.speculation import BLOCK, speculate, top_entries


@pytest.mark.parametrize("vocab", [7, BLOCK * 3, 1000, 49152, 50257, 151936])
@pytest.mark.parametrize("k", [1, 5, 65])
def test_top_entries_equals_a_full_topk(vocab, k):
    g = torch.Generator().manual_seed(vocab + k)
    x = torch.randn(vocab, generator=g) * 4  # continuous values: no ties, one right answer
    k = min(k, vocab)
    values, indices = top_entries(x, k)
    want = torch.topk(x, k)
    assert torch.equal(values, want.values)
    assert torch.equal(indices, want.indices)


def test_top_entries_finds_a_cluster_inside_one_block():
    # All of the top entries in one block: the block stage must not stop at one per block.
    x = torch.zeros(BLOCK * 40)
    x[BLOCK * 7: BLOCK * 7 + 10] = torch.arange(10, 0, -1, dtype=torch.float32)
    values, indices = top_entries(x, 10)
    assert indices.tolist() == list(range(BLOCK * 7, BLOCK * 7 + 10))
    assert values.tolist() == list(range(10, 0, -1))


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
