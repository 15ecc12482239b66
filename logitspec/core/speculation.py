"""Next-next token speculation: x_{i+1} = argmax, the top-k others guess x_{i+2}."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from ..runtime.topk import top_entries
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
    if k <= 0:
        return [], float(probs_all[root])
    # One top-k over the whole vocabulary: between forward passes each small op costs far more
    # than in a loop of its own, so fewer ops beat a two-stage search (docs/performance.md).
    idx, (vals, ps) = top_entries(logits, min(k + 1, logits.shape[-1]), probs_all)
    cands, root_prob = rank_candidates(idx, vals, ps, root, k)
    if root_prob is None:  # a sampled root outside the top k + 1
        root_prob = float(probs_all[root])
    return cands, root_prob


def rank_candidates(ids: Sequence[int], logits: Sequence[float], probs: Sequence[float], root: int,
                    k: int) -> tuple[list[Candidate], float | None]:
    """The entries `ids` (best first, with their logits and probabilities) other than the
    root, ranked 1..k, and the root's probability if it is among them."""
    cands: list[Candidate] = []
    root_prob = None
    for v, i, p in zip(logits, ids, probs):
        if i == root:
            root_prob = p
        elif len(cands) < k:
            cands.append(Candidate(rank=len(cands) + 1, token=i, logit=v, prob=p))
    return cands, root_prob
