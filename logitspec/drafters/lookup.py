"""Prompt lookup decoding (PLD): one chain, the continuation of the longest n-gram (n <= 3) that
ends the context and occurred in it before. The baseline LogitSpec is measured against."""
from __future__ import annotations

import torch

from ..core.drafter import Draft, Drafter
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..core.tree import chain_tree


class PromptLookupDrafter(Drafter):
    """Prompt lookup: one chain from the longest matching n-gram (n <= 3)."""

    method = "pld"

    def __init__(self, s: DecodeSettings, model=None) -> None:  # it reads no model
        self.s = s

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        sizes = [n for n in pool.sizes if n <= 3]
        q = pool.query("pld", pool.tokens[-3:] + [root], self.s.pld_tokens, sizes=sizes)
        return Draft(nodes=chain_tree(root, q.continuation, "pld"), queries=[q])
