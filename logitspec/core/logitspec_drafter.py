"""LogitSpec's drafter, the paper's steps 2-4: speculate the next-next token from the root's own
logits, retrieve with g1 and g2 from the context, and build the draft tree (the paper's static
tree here, or one sized by measured cost from logitspec/sizing/). What a drafter is: drafter.py.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
from transformers import PreTrainedModel

from .drafter import Draft, Drafter, cost_capacity
from .retrieval import NgramPool, retrieve
from .settings import DecodeSettings
from .speculation import speculate
from .trace import Candidate, QueryRecord, TreeNode, TreeSizing
from .tree import build_static_tree


class TreeSizer(Protocol):
    """Builds LogitSpec's tree to the size a token of tree pays for (sizing/retrievaltree.py)."""

    calibration_seconds: float  # the seconds spent measuring c(n) so far

    def build(self, root: int, g1: QueryRecord | None, g2: Sequence[tuple[Candidate, QueryRecord]], capacity: int,
              g1_len: int, context_len: int) -> tuple[list[TreeNode], TreeSizing]: ...

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None: ...


class LogitSpecDrafter(Drafter):
    """Speculate the next-next token, retrieve with g1 and g2, build the draft tree."""

    method = "logitspec"

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None, cost: TreeSizer | None = None) -> None:
        self.s = s
        self.cost = cost  # None: the paper's static tree, pruned by rank up to `capacity`
        self.cost_capacity = cost_capacity(s, model)

    def speculate(self, logits: torch.Tensor, root: int) -> tuple[list[Candidate], float]:
        """The next-next candidates and the root's probability."""
        return speculate(logits, root, self.s.k)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        cands, root_prob = self.speculate(logits, root)  # speculate
        queries = retrieve(root, cands, pool, s)  # retrieve
        pairs = list(zip(cands, queries[1:]))
        calibration = 0.0
        if self.cost is not None:  # build tree
            before = self.cost.calibration_seconds
            nodes, sizing = self.cost.build(root, queries[0], pairs, self.cost_capacity, s.continuation,
                                            context_len)
            calibration = self.cost.calibration_seconds - before
        else:
            nodes = build_static_tree(root, queries[0], pairs, s.capacity, s.continuation, s.rule)
            sizing = TreeSizing("static", sum(not n.pruned for n in nodes), None, None, None, None,
                                f"the paper's rule: rank-based pruning up to the fixed capacity of {s.capacity}")
        return Draft(nodes=nodes, candidates=cands, queries=queries, sizing=sizing,
                     root_prob=root_prob, calibration_seconds=calibration)

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)
