"""The hybrid: LogitSpec's drafter with Token Recycling's guesses added to its next-next
candidates (recycling.py's successor matrix), sized by the same cost-aware tree."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from ..core.drafter import Draft
from ..core.logitspec_drafter import LogitSpecDrafter
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..core.trace import Candidate
from ..sizing.costtree import stats_for
from .recycling import SuccessorMatrix, hybrid_cost_tree, mark_recycled, matrix_for, recycled_candidates


class HybridDrafter(LogitSpecDrafter):
    """LogitSpec with Token Recycling's guesses: the root's successors in the matrix join the
    next-next candidates (after the logits' k, so ranked k+1...), and g2 runs for them too."""

    method = "logitspec+recycling"
    wants_logits = True

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        # Acceptance falls as the temperature rises: each temperature learns its own rates.
        stats = stats_for(model, s.temperature) if model is not None and s.tree == "cost" else None
        super().__init__(s, model, hybrid_cost_tree(model, stats, s.k) if s.tree == "cost" else None)
        shared = s.recycle_across_runs and model is not None
        self.matrix = matrix_for(model, s.recycle_k) if shared else SuccessorMatrix(s.recycle_k)
        self.started = False

    def speculate(self, logits: torch.Tensor, root: int) -> tuple[list[Candidate], float]:
        cands, root_prob = super().speculate(logits, root)
        return cands + recycled_candidates(self.matrix.successors(root), cands, logits, self.s.k), root_prob

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        if not self.started:  # the prefill's row, as RecyclingDrafter takes it
            self.matrix.update(pool.tokens[-1:], logits[None])
            self.started = True
        draft = super().draft(root, logits, pool, context_len)
        mark_recycled(draft.nodes, self.s.k)
        return draft

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        self.matrix.update(tokens, logits)
