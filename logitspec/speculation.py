"""Next-next token speculation: x_{i+1} = argmax, the top-k others guess x_{i+2}."""
from __future__ import annotations

import torch

from .trace import Candidate


BLOCK = 64  # vocabulary block size of the two-stage top-k


def top_entries(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest entries of logits: [V] as (values [k], indices [k]), largest first.

    Two stages: the k blocks of BLOCK entries with the largest maxima must hold the top k
    (each of the top k lies in a block whose maximum is at least as large, and at most k
    blocks can have such a maximum), so a full top-k runs over k * BLOCK entries instead of
    the whole vocabulary.
    """
    vocab = logits.shape[-1]
    blocks = vocab // BLOCK
    if k >= blocks:
        return torch.topk(logits, k)
    main = logits[: blocks * BLOCK].view(blocks, BLOCK)
    chosen = torch.topk(main.amax(dim=1), k, sorted=False).indices
    values = main[chosen].reshape(-1)
    index = (chosen[:, None] * BLOCK + torch.arange(BLOCK, device=logits.device)).reshape(-1)
    if blocks * BLOCK < vocab:  # the ragged tail block takes part whole
        values = torch.cat([values, logits[blocks * BLOCK:]])
        index = torch.cat([index, torch.arange(blocks * BLOCK, vocab, device=logits.device)])
    top = torch.topk(values, k)
    return top.values, index[top.indices]


def speculate(logits: torch.Tensor, root: int, k: int) -> tuple[list[Candidate], float]:
    """Up to k next-next candidates from logits: [V], the row whose argmax is `root` (x_{i+1}),
    and the root's own softmax probability.

    The candidates are the best entries of the same logits other than the root, ranked 1..k,
    each with its logit and softmax probability.
    """
    logits = logits.float()
    probs_all = torch.softmax(logits, dim=-1)
    root_prob = float(probs_all[root])
    if k <= 0:
        return [], root_prob
    values, indices = top_entries(logits, min(k + 1, logits.shape[-1]))
    # One softmax kernel, not exp(v - logsumexp)'s several passes that each wait for every thread.
    probs = probs_all[indices]
    vals, idx, ps = values.tolist(), indices.tolist(), probs.tolist()
    cands: list[Candidate] = []
    for v, i, p in zip(vals, idx, ps):
        if i == root:
            continue
        cands.append(Candidate(rank=len(cands) + 1, token=int(i), logit=float(v), prob=float(p)))
        if len(cands) == k:
            break
    return cands, root_prob
