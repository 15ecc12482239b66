"""Next-next token speculation: x_{i+1} = argmax, the top-k others guess x_{i+2}."""
from __future__ import annotations

import torch

from .trace import Candidate


def speculate(logits: torch.Tensor, root: int, k: int) -> tuple[list[Candidate], float]:
    """Up to k next-next candidates from logits: [V], the row whose argmax is `root` (x_{i+1}),
    and the root's own softmax probability.

    The candidates are the best entries of the same logits other than the root, ranked 1..k,
    each with its logit and softmax probability.
    """
    logits = logits.float()
    # One softmax kernel, not exp(v - logsumexp)'s several passes that each wait for every thread.
    probs_all = torch.softmax(logits, dim=-1)
    root_prob = float(probs_all[root])
    if k <= 0:
        return [], root_prob
    # One top-k over the whole vocabulary: between forward passes each small op costs far more
    # than in a loop of its own, so fewer ops beat a two-stage search (docs/performance.md).
    top = torch.topk(logits, min(k + 1, logits.shape[-1]))
    vals, idx, ps = top.values.tolist(), top.indices.tolist(), probs_all[top.indices].tolist()
    cands: list[Candidate] = []
    for v, i, p in zip(vals, idx, ps):
        if i == root:
            continue
        cands.append(Candidate(rank=len(cands) + 1, token=i, logit=v, prob=p))
        if len(cands) == k:
            break
    return cands, root_prob
