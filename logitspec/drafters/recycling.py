"""Token Recycling (arXiv 2408.08696): draft from each token's top successors, kept from past passes.

Every forward pass computes logits for the nodes it verifies, and the top-k of each row are
the tokens the model found likeliest after that node's token. Token Recycling keeps them in
an adjacency matrix (row t: the k likeliest successors of t, as last seen) instead of throwing
them away, and drafts each step's tree by breadth-first search over the matrix from the root:
the root's row gives the guesses for x_{i+2}, each guess's row the guesses after it, and so on.

Two trees are grown from the matrix here:
- `static_tree`: the paper's static template (80 nodes, depth 6, top-8), filled breadth first;
- `RecycledCostTree`: the same search, best first by each node's chance of acceptance (learnt
  per rank), sized by the measured cost c(n) as LogitSpec's cost-aware tree is (costtree.py).

Drafting never changes what is committed: the tree is verified and walked like any other, so
decoding stays lossless (greedy and sampled) whatever the matrix holds.
"""
from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from ..core.drafter import Draft, Drafter, cost_capacity
from ..core.profile import profile_of
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..sizing.costtree import AcceptanceStats, CostSizer, rank_bucket, temperature_bucket
from ..sizing.retrievaltree import RetrievalCostTree, first_key
from ..sizing.trie import Trie
from ..core.trace import Candidate, SourceLookup, TreeNode, TreeSizing

if TYPE_CHECKING:
    from transformers import PreTrainedModel

ORIGIN = "recycled"  # TreeNode.origin of a node drawn from the matrix; its rank is its place in the row

# The paper's static tree as each node's number of children, keyed by the node's path of ranks
# from the root (1 = likeliest successor); a node's children are always its row's first ranks.
# It holds 80 nodes below the root, 6 deep, at most 8 wide: the template ("2.2.2") of the
# authors' code (github.com/Luowaterbi/TokenRecycling, model/recycling/tree_template_.py);
# that Spec-Bench's port runs this very template was not checked here.
TEMPLATE_WIDTHS: dict[tuple[int, ...], int] = {
    (): 8,
    (1,): 8, (2,): 4, (3,): 3, (4,): 2, (5,): 1, (6,): 1, (7,): 1, (8,): 1,
    (1, 1): 8, (1, 2): 3, (1, 3): 2, (1, 4): 1, (1, 5): 1, (1, 6): 1, (1, 7): 1, (1, 8): 1,
    (2, 1): 2, (2, 2): 1, (3, 1): 1, (4, 1): 1, (5, 1): 1, (6, 1): 1,
    (1, 1, 1): 5, (1, 1, 2): 2, (1, 1, 3): 1, (1, 1, 4): 1, (1, 1, 5): 1, (1, 2, 1): 1, (1, 3, 1): 1,
    (2, 1, 1): 1, (3, 1, 1): 1, (4, 1, 1): 1,
    (1, 1, 1, 1): 3, (1, 1, 1, 2): 1, (1, 1, 1, 3): 1, (1, 1, 2, 1): 1, (1, 2, 1, 1): 1, (2, 1, 1, 1): 1,
    (1, 1, 1, 1, 1): 2, (1, 1, 1, 2, 1): 1,
}
TEMPLATE_NODES = sum(TEMPLATE_WIDTHS.values())  # 80, the root not counted


@dataclass
class SuccessorMatrix:
    """The adjacency matrix: token -> its k likeliest successors as last seen, best first.

    Sparse (a dict of rows): a token the model has not yet been run on has no row, so no
    successors, and a tree grown from it stops there.
    """

    k: int = 8
    rows: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def successors(self, token: int, unseen: tuple[int, ...] = ()) -> tuple[int, ...]:
        return self.rows.get(token, unseen)

    def unseen(self, rule: str) -> tuple[int, ...]:
        """What a token without a row reads as: token 0 in each rank (the authors' zero-filled
        matrix, "zeros"), or nothing ("none")."""
        return (0,) * self.k if rule == "zeros" else ()

    def update(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        """Row tokens[j] := the top-k of logits[j] ([n, V]); a later row of one token wins,
        as the last one computed is the freshest."""
        if not len(tokens):
            return
        top = torch.topk(logits, min(self.k, logits.shape[-1]), dim=-1).indices.tolist()
        for tok, row in zip(tokens, top):
            self.rows[int(tok)] = tuple(row)


_LOCK = threading.Lock()


def matrix_for(model: PreTrainedModel, k: int) -> SuccessorMatrix:
    """The model's matrix, shared by the runs of this process (the paper's hot start: a
    question's drafts start from what earlier ones left); a new one if k changed."""
    with _LOCK:
        prof = profile_of(model)
        if prof.successors is None or prof.successors.k != k:
            prof.successors = SuccessorMatrix(k)
        return prof.successors


def static_tree(root: int, matrix: SuccessorMatrix, widths: dict[tuple[int, ...], int] = TEMPLATE_WIDTHS,
                unseen: tuple[int, ...] = ()) -> list[TreeNode]:
    """The template filled breadth first from the matrix: parents come before children, and a
    node whose row is empty (or shorter than its width) has fewer children, or none; a token with
    no row reads as `unseen`."""
    nodes = [TreeNode(id=0, token=int(root), parent=-1, depth=0, origin="root")]
    queue = [(0, ())]  # (node id, its path of ranks)
    for nid, path in queue:  # the queue grows as it is read: breadth first
        row = matrix.successors(nodes[nid].token, unseen)
        for rank, tok in enumerate(row[: widths.get(path, 0)], start=1):
            child = len(nodes)
            nodes.append(TreeNode(id=child, token=int(tok), parent=nid, depth=nodes[nid].depth + 1,
                                  origin=ORIGIN, rank=rank))
            queue.append((child, (*path, rank)))
    return nodes


def static_sizing(nodes: Sequence[TreeNode]) -> TreeSizing:
    return TreeSizing("static", len(nodes), None, None, None, None,
                      f"Token Recycling's static template ({TEMPLATE_NODES} nodes, depth 6, top-8): "
                      f"{len(nodes) - 1} of its nodes had successors in the matrix")


# Starting guesses of P(rank r's successor is the true next token | its parent was right);
# the run's own record takes over within a few steps.
RANK_PRIOR = (0.35, 0.12, 0.07, 0.05, 0.035, 0.03, 0.025, 0.02)


@dataclass
class RankStats:
    """Beta-smoothed chance that a row's successor of each rank is right, learnt by the run."""

    strength: float = 4.0  # weight of the prior, in observations
    counts: dict[int, list[float]] = field(default_factory=dict)  # rank -> [hits, seen]

    def p(self, rank: int) -> float:
        prior = RANK_PRIOR[rank - 1] if rank <= len(RANK_PRIOR) else RANK_PRIOR[-1] / 2
        hit, seen = self.counts.get(rank, (0.0, 0.0))
        return (hit + self.strength * prior) / (seen + self.strength)

    def observe(self, rank: int, right: bool) -> None:
        c = self.counts.setdefault(rank, [0.0, 0.0])
        c[0] += right
        c[1] += 1.0


def rank_stats_for(model: PreTrainedModel, temperature: float = 0.0) -> RankStats:
    """The model's rank chances, shared by the runs of this process as its matrix is, one set
    per temperature bucket: a draw agrees with a row's top ranks less often as it rises."""
    with _LOCK:
        return profile_of(model).ranks.setdefault(temperature_bucket(temperature), RankStats())


class RecycledCostTree:
    """The matrix's tree grown best first by path chance (a node's chance: its parent's times
    its rank's), then cut where the next node no longer pays for its seconds at the run's rate:
    LogitSpec's cost-aware sizing (`CostSizer.size`) over another trie."""

    def __init__(self, model: PreTrainedModel | None, matrix: SuccessorMatrix, depth: int, width: int,
                 ranks: RankStats | None = None) -> None:
        # Its own AcceptanceStats: the g1/g2 statistics other runs learn stay untouched.
        self.sizer = CostSizer(model, AcceptanceStats())
        self.matrix, self.depth, self.width = matrix, depth, width
        self.ranks = ranks or RankStats()
        self._rows: dict[int, tuple[int, ...]] = {}  # trie node -> the row it was expanded with

    @property
    def calibration_seconds(self) -> float:
        return self.sizer.calibration_seconds

    def draft(self, root: int, capacity: int, context_len: int) -> tuple[list[TreeNode], TreeSizing]:
        return self.sizer.size(lambda floor: self._grow(root, capacity, floor), capacity, context_len)

    def _grow(self, root: int, capacity: int, floor: float) -> Trie:
        """Expand nodes best first until `capacity` are taken; their children form the frontier
        the sizing may still reach. Children under `floor` stay out."""
        trie, self._rows = Trie(root), {}
        heap, taken = [(-1.0, 0)], 0
        while heap and taken < capacity:
            negp, node = heapq.heappop(heap)
            taken += 1
            if trie.depth[node] >= self.depth:
                continue
            row = self._rows[node] = self.matrix.successors(trie.token[node])[: self.width]
            for rank, tok in enumerate(row, start=1):
                p = -negp * self.ranks.p(rank)
                if p >= floor:
                    child = trie.grow(node, int(tok), ORIGIN, rank, None, (ORIGIN, rank), p)
                    heapq.heappush(heap, (-p, child))
        return trie

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        """Learn the cost curve and the run's rate as LogitSpec does, and each rank's chance
        from every expanded row on the true path (all its ranks were tested, verified or not)."""
        t = self.sizer.learn_pass(truth, verified, seconds, threads)
        if t is None:
            return
        node = 0
        for depth in range(1, len(truth)):
            row = self._rows.get(node)
            if row is None:
                break
            for rank, tok in enumerate(row, start=1):
                self.ranks.observe(rank, tok == truth[depth])
            node = t.child.get((node, int(truth[depth])))
            if node is None:
                break


# ---------------------------------------------------------------- LogitSpec with recycled guesses
def recycled_candidates(row: Sequence[int], cands: Sequence[Candidate], logits: torch.Tensor,
                        k: int) -> list[Candidate]:
    """The root's successors in the matrix (`row`, best first) as more next-next candidates,
    those the logits' own candidates lack, ranked k + their rank in the row; their logit and
    probability are read from the same logits [V], for the pictures."""
    have = {c.token for c in cands}
    extra = [(r, int(t)) for r, t in enumerate(row, start=1) if int(t) not in have]
    if not extra:
        return []
    z = logits.float()
    lse = float(torch.logsumexp(z, dim=-1))
    vals = z[[t for _, t in extra]].tolist()
    return [Candidate(rank=k + r, token=t, logit=v, prob=float(torch.tensor(v - lse).exp()))
            for (r, t), v in zip(extra, vals)]


def mark_recycled(nodes: Sequence[TreeNode], k: int) -> None:
    """A recycled candidate's own node says so: origin "recycled", its rank the one in the
    root's row. Its g2 continuation keeps origin "g2" and the candidate's rank (k + r)."""
    for n in nodes:
        if n.origin == "g2" and n.depth == 1 and n.rank is not None and n.rank > k:
            n.origin, n.rank = ORIGIN, n.rank - k


def hybrid_cost_tree(model: PreTrainedModel | None, stats: AcceptanceStats | None, k: int) -> RetrievalCostTree:
    """LogitSpec's cost-aware tree, with a recycled candidate (ranked past the logits' k)
    learnt as a kind of its own rather than as the logits' far tail."""

    def kind(cand: Candidate | None, g1n: int, g2n: int) -> tuple:
        if cand is not None and cand.rank > k:
            return ("first", (ORIGIN, rank_bucket(cand.rank - k)), g1n, g2n)
        return first_key(cand, g1n, g2n)

    return RetrievalCostTree(model, stats, first=kind)


class RecyclingDrafter(Drafter):
    """Token Recycling as a drafter: the tree grown from each token's top successors in past passes,
    the paper's static template or sized by c(n) as LogitSpec's is."""

    method = "recycling"
    wants_logits = True

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        self.s = s
        shared = s.recycle_across_runs and model is not None
        self.matrix = matrix_for(model, s.recycle_k) if shared else SuccessorMatrix(s.recycle_k)
        ranks = rank_stats_for(model, s.temperature) if shared else None
        self.cost = (RecycledCostTree(model, self.matrix, s.recycle_depth, s.recycle_k, ranks)
                     if s.tree == "cost" else None)
        self.cost_capacity = cost_capacity(s, model)
        self.tree_room = TEMPLATE_NODES + 1 if self.cost is None else 0
        self.unseen = self.matrix.unseen(s.recycle_unseen_rows)
        # "every": each verified node's row updates the matrix (read_rows), as the authors' code does.
        self.wants_logits = s.recycle_rows == "computed"
        self.started = False

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        if not self.started:  # the prefill's row of the prompt's last token, the one their first pass computes
            self.matrix.update(pool.tokens[-1:], logits[None])
            self.started = True
        if self.cost is None:
            nodes = static_tree(root, self.matrix, unseen=self.unseen)
            return Draft(nodes=nodes, sizing=static_sizing(nodes), lookups=self._lookups(root, nodes),
                         read_rows=self._rows(nodes))
        before = self.cost.calibration_seconds
        nodes, sizing = self.cost.draft(root, self.cost_capacity, context_len)
        return Draft(nodes=nodes, sizing=sizing, calibration_seconds=self.cost.calibration_seconds - before,
                     lookups=self._lookups(root, nodes), read_rows=self._rows(nodes))

    def _rows(self, nodes: list[TreeNode]) -> list[int]:
        """Every verified node's place among the verified (pruned nodes are not verified), under "every"."""
        return [] if self.wants_logits else list(range(sum(not n.pruned for n in nodes)))

    def _lookups(self, root: int, nodes: list[TreeNode]) -> list[SourceLookup]:
        """The matrix as the step's one source: whether it held a row for the root, and what it drafted."""
        held = 1 if self.matrix.successors(int(root)) else 0
        return [SourceLookup(ORIGIN, held, sum(1 for n in nodes if n.origin == ORIGIN))]

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        self.matrix.update(tokens, logits)

    def observe_rows(self, nodes: Sequence[TreeNode], logits: torch.Tensor) -> None:
        self.matrix.update([n.token for n in nodes], logits)
