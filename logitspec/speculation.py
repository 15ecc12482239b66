"""Next-next token speculation: x_{i+1} = argmax, the top-k others guess x_{i+2}."""
from __future__ import annotations

import torch

from .trace import Candidate


def speculate(logits: torch.Tensor, root: int, k: int) -> tuple[list[Candidate], float]:
    """Up to k next-next candidates from the row of logits whose argmax is `root` (x_{i+1}),
    and the root's own softmax probability.

    The candidates are the best entries of the same logits other than the root, ranked 1..k,
    each with its logit and softmax probability.
    """
    logits = logits.float()
    probs_all = torch.softmax(logits, dim=-1)
    root_prob = float(probs_all[root])
    if k <= 0:
        return [], root_prob
    top = torch.topk(logits, min(k + 1, logits.shape[-1]))
    # softmax runs as one kernel; exp(v - logsumexp) is several parallel passes, each of
    # which waits for every thread to be scheduled, costly on a busy two-core machine.
    probs = probs_all[top.indices]
    # One transfer to the host for all three lists.
    vals, idx, ps = top.values.tolist(), top.indices.tolist(), probs.tolist()
    cands: list[Candidate] = []
    for v, i, p in zip(vals, idx, ps):
        if i == root:
            continue
        cands.append(Candidate(rank=len(cands) + 1, token=int(i), logit=float(v), prob=float(p)))
        if len(cands) == k:
            break
    return cands, root_prob
