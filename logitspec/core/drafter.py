"""What a drafter is: it proposes each step's draft tree under the root x_{i+1}; the loop
(loop.py) verifies it and tells the drafter what was right.

LogitSpec's own drafter, the paper's steps 2-4, is logitspec_drafter.py; the other drafters
(prompt lookup, Token Recycling, the hybrid, Lookahead, REST, RACER, SuffixDecoding) are in
logitspec/drafters/; the tree sized by measured cost is in logitspec/sizing/.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel

from .retrieval import NgramPool
from .settings import DecodeSettings
from .trace import Candidate, QueryRecord, SourceLookup, TreeNode, TreeSizing
from .tree import chain_tree


@dataclass
class Draft:
    """What a drafter proposes for one step."""

    nodes: list[TreeNode]
    candidates: list[Candidate] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    sizing: TreeSizing | None = None
    root_prob: float | None = None
    calibration_seconds: float = 0.0  # one-off measuring of c(n) that happened while drafting
    read_rows: list[int] = field(default_factory=list)  # nodes whose logits the drafter hears (observe_rows)
    lookups: list[SourceLookup] = field(default_factory=list)  # what a drafter without queries found


class Drafter:
    """Proposes each step's tree; `observe` hears the truth afterwards (root, accepted, bonus)."""

    method = "vanilla"
    tree_room = 0  # the most verified nodes a tree may hold, past `capacity` (the cache reserves them)
    wants_logits = False  # whether `observe_logits` should hear the verified nodes' logits
    wants_prompt_rows = False  # whether `observe_logits` should hear every prompt position's row first

    @classmethod
    def build(cls, s: DecodeSettings, model: PreTrainedModel | None = None) -> "Drafter":
        """A drafter for one run's settings and model: how the decoders' registry makes a method's."""
        return cls(s, model)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        """The tree under `root`, from logits: [V], the row whose argmax (or draw) it is.
        Vanilla greedy drafts nothing: the tree is the root alone."""
        return Draft(nodes=chain_tree(root, [], "root"))

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        """Hear the step's truth (root, accepted drafts, bonus) and its forward pass: the
        tokens verified, the seconds they took and on how many threads."""

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        """Hear the logits the verification computed anyway: rows [m, V] after the verified
        nodes holding `tokens` (the head computes only the rows the walk may need); with
        `wants_prompt_rows`, before the first step, the rows after the prompt's tokens too."""

    def observe_rows(self, nodes: Sequence[TreeNode], logits: torch.Tensor) -> None:
        """Hear the logits [m, V] after the nodes the draft named in `read_rows` (those verified)."""


def cost_capacity(s: DecodeSettings, model: PreTrainedModel | None) -> int:
    """The cost-aware tree's capacity: `capacity`, and on a CPU at most `cpu_capacity`."""
    on_cpu = model is None or model.device.type == "cpu"
    # The bound was measured on CPUs only; an accelerator keeps `capacity`, as the paper does.
    return min(s.capacity, s.cpu_capacity) if on_cpu else s.capacity
