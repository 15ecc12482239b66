"""One decoding step's retrieval on a context that repeats: the root, g1's query and k candidates
with their g2 queries, as LogitSpec's cost tree is handed them."""
from __future__ import annotations

from logitspec.core.retrieval import NgramPool
from logitspec.core.trace import Candidate


def step_inputs(k: int = 64):
    """A context with repeats so g1 and g2 find continuations, plus k candidates."""
    text = [5, 6, 7, 8, 9, 10, 11, 12] * 4 + [5, 6, 7]
    pool = NgramPool((1, 2, 3), text)
    root = 8
    tail = pool.tokens[-3:] + [root]
    g1 = pool.query("g1", tail, 20)
    cands = [Candidate(rank=r, token=100 + r, logit=-r, prob=0.5 / (r + 1)) for r in range(1, k + 1)]
    cands[0] = Candidate(rank=1, token=9, logit=0.0, prob=0.4)  # the true next-next token
    g2 = [(c, pool.query("g2", tail + [c.token], 8, candidate_rank=c.rank)) for c in cands]
    return root, g1, g2
