"""The draft tree: a trie of drafted tokens under the root x_{i+1}, its pruning and its mask.

Branches that share a prefix share nodes, so no token is verified twice. Tokens that
pruning cut are kept (marked `pruned`) for the explainer but never reach the model.
`TreeIndex` is the tree's one lookup structure; this module's index half is plain Python,
so the pictures use it without the model.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .retrieval import PRUNED_SHOWN_PER_BRANCH
from .settings import PruningRule
from .trace import Candidate, QueryRecord, TreeNode

if TYPE_CHECKING:
    import torch


# Nodes of these origins are computed in the pass but never verified: Lookahead decoding's
# Jacobi window (lookahead.py) rides in the same pass to grow its pool, and the walk leaves it.
UNWALKED = frozenset({"window"})


class TreeIndex:
    """A tree's structure by node id: the child a token leads to, each node's children in
    insertion order, its parent and its depth.

    Built once per tree, node by node as the tree is drafted (`add`) or from finished nodes
    (`of`), and read by all that walks the tree: the drafting, the acceptance walk, the cost
    model's learning and the branch view.
    """

    def __init__(self) -> None:
        self.child: dict[tuple[int, int], int] = {}  # (parent id, token) -> child id
        self.children: dict[int, list[int]] = {}  # parent id -> child ids; leaves have no entry
        self.parent: dict[int, int] = {}  # -1 for the root
        self.depth: dict[int, int] = {}

    def add(self, node: int, parent: int, token: int, depth: int, walk: bool = True) -> None:
        self.parent[node], self.depth[node] = parent, depth
        if parent >= 0:
            if walk:
                self.child[(parent, token)] = node
            self.children.setdefault(parent, []).append(node)

    @classmethod
    def of(cls, nodes: Iterable[TreeNode]) -> "TreeIndex":
        """The index of finished nodes (parents before children)."""
        index = cls()
        for n in nodes:
            index.add(n.id, n.parent, n.token, n.depth, n.origin not in UNWALKED)
        return index

    def follow(self, tokens: Iterable[int], start: int = 0) -> list[int | None]:
        """The node each token of a chain leads to from `start`; None from where the chain
        leaves the tree."""
        out: list[int | None] = []
        node: int | None = start
        for tok in tokens:
            node = None if node is None else self.child.get((node, tok))
            out.append(node)
        return out


class DraftTree:
    """A trie under a root token. Node ids follow insertion order, so parents come first."""

    def __init__(self, root: int) -> None:
        self.nodes: list[TreeNode] = []
        self.index = TreeIndex()
        self.size = 0  # verified (not pruned) nodes
        self._append(TreeNode(id=0, token=int(root), parent=-1, depth=0, origin="root"))

    def child(self, parent: int, token: int) -> int | None:
        return self.index.child.get((parent, token))

    def add_branch(
        self,
        parent: int,
        tokens: Sequence[int],
        keep: int,
        capacity: int,
        origin: str,
        rank: int | None = None,
        query: int | None = None,
        probs: Sequence[float] | None = None,
    ) -> list[int]:
        """Insert `tokens` as a chain under `parent`, merging shared prefixes.

        At most `keep` tokens of the branch are verified and the tree never grows past
        `capacity` verified nodes; the first few tokens past either limit are added as
        pruned nodes. Returns the ids along the branch (pruned ones included).
        """
        ids: list[int] = []
        node, shown_pruned = parent, 0
        for j, tok in enumerate(tokens):
            tok = int(tok)
            reason = "rank" if j >= keep else "capacity" if self.size >= capacity else None
            existing = self.child(node, tok)
            if existing is not None:  # a shared prefix: the branches share the node
                self._verify_if_wanted(existing, reason)
                node = existing
                ids.append(node)
                continue
            above = self.nodes[node]
            pruned = reason is not None or above.pruned  # below a cut node, everything is cut
            if pruned:
                if shown_pruned >= PRUNED_SHOWN_PER_BRANCH:
                    break
                shown_pruned += 1
            node = self._append(TreeNode(
                id=len(self.nodes), token=tok, parent=node, depth=above.depth + 1, origin=origin,
                rank=rank, query=query, pruned=pruned,
                prune_reason=(reason or above.prune_reason) if pruned else None,
                accept_prob=None if probs is None else float(probs[j]),
            ))
            ids.append(node)
        return ids

    def _verify_if_wanted(self, node: int, reason: str | None) -> None:
        """Un-prune a node another branch cut when this branch keeps it (and its parent is kept)."""
        n = self.nodes[node]
        if n.pruned and reason is None and not self.nodes[n.parent].pruned:
            n.pruned, n.prune_reason = False, None
            self.size += 1

    def _append(self, node: TreeNode) -> int:
        self.nodes.append(node)
        self.index.add(node.id, node.parent, node.token, node.depth)
        self.size += not node.pruned
        return node.id

    def finalize(self) -> list[TreeNode]:
        """Nodes renumbered so verified ones come first (see `verified_first`)."""
        return verified_first(self.nodes)


def verified_first(nodes: Sequence[TreeNode]) -> list[TreeNode]:
    """New nodes renumbered so verified ones come first (in their order), then pruned ones.

    The verified nodes are then exactly the ids 0..n-1 of the forward pass's rows.
    """
    order = [n for n in nodes if not n.pruned] + [n for n in nodes if n.pruned]
    new_id = {n.id: i for i, n in enumerate(order)}
    return [
        TreeNode(id=new_id[n.id], token=n.token, parent=new_id[n.parent] if n.parent >= 0 else -1,
                 depth=n.depth, origin=n.origin, rank=n.rank, query=n.query, pruned=n.pruned,
                 prune_reason=n.prune_reason, accept_prob=n.accept_prob)
        for n in order
    ]


def build_static_tree(
    root: int,
    g1: QueryRecord | None,
    g2: Sequence[tuple[Candidate, QueryRecord]],
    capacity: int = 64,
    g1_len: int = 20,
    rule: PruningRule = PruningRule(),
    g2_offset: int = 1,
) -> list[TreeNode]:
    """The paper's tree: g1's continuation, then one branch per candidate in rank order.

    `g2` holds (candidate, its g2 query) pairs; `g2_offset` is the index of the first g2
    query in the step's query list (g1 is index 0).
    """
    tree = DraftTree(root)
    if g1 is not None and g1.continuation:
        tree.add_branch(0, g1.continuation, keep=g1_len, capacity=capacity, origin="g1", query=0)
    for i, (cand, q) in enumerate(g2):
        branch = [cand.token] + list(q.continuation)
        tree.add_branch(0, branch, keep=rule.keep(cand.rank), capacity=capacity,
                        origin="g2", rank=cand.rank, query=g2_offset + i)
    return tree.finalize()


def chain_tree(root: int, chain: Sequence[int], origin: str, query: int | None = 0) -> list[TreeNode]:
    """A single chain under the root (prompt lookup's draft)."""
    tree = DraftTree(root)
    if chain:
        tree.add_branch(0, chain, keep=len(chain), capacity=len(chain) + 1, origin=origin, query=query)
    return tree.finalize()


def tree_inputs(
    nodes: Sequence[TreeNode], context_len: int, dtype: torch.dtype, device: torch.device | str,
    window: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Input ids [1,T], position ids [1,T] and the additive 4D mask for one kind of layer.

    Full attention (`window` None): the mask is [1,1,T,context+T]; row i lets node i see the
    whole cached context, its ancestors and itself. A sliding window of W: see `window_mask`.
    `nodes` must be the verified nodes only, parents before children.
    """
    ids, pos, masks = layered_tree_inputs(nodes, context_len, dtype, device, (window,))
    return ids, pos, masks[window]


def layered_tree_inputs(
    nodes: Sequence[TreeNode], context_len: int, dtype: torch.dtype, device: torch.device | str,
    windows: Sequence[int | None],
) -> tuple[torch.Tensor, torch.Tensor, dict[int | None, torch.Tensor]]:
    """`tree_inputs` with one mask per window in `windows` (None: full attention), the
    tree's ancestry computed once for all of them."""
    import torch  # here, not at the top: the pictures import the index and never load torch

    t = len(nodes)
    parents = np.fromiter((n.parent for n in nodes), dtype=np.int64, count=t)
    depth = np.fromiter((n.depth for n in nodes), dtype=np.int64, count=t)
    anc = np.zeros((t, t), dtype=bool)
    anc[np.arange(t), np.arange(t)] = True
    # Parents precede children, so one pass copies each parent's finished row (O(T) row ops).
    for i in range(1, t):
        anc[i] |= anc[parents[i]]
    # Made on the host and moved once: small torch calls cost more than a small tree's arithmetic.
    ints = torch.from_numpy(np.array([[n.token for n in nodes], depth + context_len], dtype=np.int64))
    ints = ints.to(device)
    masks = {w: window_mask(anc, depth, context_len, w, dtype, device) for w in dict.fromkeys(windows)}
    return ints[0:1], ints[1:2], masks


def window_mask(anc: np.ndarray, depth: np.ndarray, context_len: int, window: int | None,
                dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """The additive mask of a tree with ancestry `anc` [T,T] and node depths `depth`.

    With a window W, a sliding layer holds keys for the last min(context, W-1) context
    positions followed by the tree (kvcache.WindowedLayer), so the mask is
    [1,1,T,min(context, W-1)+T]. Node i sits at position context + depth_i and sees a key
    of its own path (context, ancestors, itself) only if it lies fewer than W positions
    back, as in greedy decoding; other branches never count toward its window.
    """
    import torch  # see layered_tree_inputs

    t = len(depth)
    see, seen = anc, context_len
    cols = None
    if window is not None:
        seen = min(context_len, window - 1)
        see = anc & ((depth[:, None] - depth[None, :]) < window)
        # Context column c holds position context - seen + c.
        cols = np.arange(seen)[None, :] > seen + depth[:, None] - window
    host = {torch.float64: np.float64, torch.float16: np.float16}.get(dtype, np.float32)  # bfloat16: cast below
    low = torch.finfo(dtype).min
    block = torch.from_numpy(np.where(see, 0.0, low).astype(host))
    mask = torch.zeros((1, 1, t, seen + t), dtype=dtype, device=device)
    mask[0, 0, :, seen:] = block.to(device=device, dtype=dtype)
    if cols is not None and seen and not cols.all():
        mask[0, 0, :, :seen] = torch.from_numpy(np.where(cols, 0.0, low).astype(host)).to(device=device, dtype=dtype)
    return mask
