"""A draft tree drafted elsewhere, sized by measured cost: the branches a drafter proposes, each
node with its kind, grown into the cost tree's trie (sizing/costtree.py) and cut where the next
node no longer pays for its seconds at the run's rate. RACER (racer.py) sizes its merged tree so
on a CPU, as LogitSpec's lane sizes its own."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.trace import TreeNode, TreeSizing
from ..core.tree import DraftTree
from ..sizing.costtree import AcceptanceStats, CostAwareDrafter
from ..sizing.trie import Trie


@dataclass
class Branch:
    """One drafted chain under the root: its tokens, where they came from, each token's kind (an
    AcceptanceStats key: ("first", rank bucket, 0, 0) or ("cont", evidence, depth)) and rank."""

    tokens: list[int]
    origin: str
    keys: list[tuple]
    ranks: list[int | None] = field(default_factory=list)


class KeyedCostTree(CostAwareDrafter):
    """The branches in one trie, each node's chance its parent's times its kind's (learnt by the
    run), then the prefix that gains most over the run's rate (`CostAwareDrafter.build`)."""

    def __init__(self, model) -> None:
        # Its own statistics: LogitSpec's g1/g2 chances stay untouched.
        super().__init__(model, AcceptanceStats())
        self.branches: Sequence[Branch] = ()

    def draft(self, root: int, branches: Sequence[Branch], capacity: int,
              context_len: int) -> tuple[list[TreeNode], TreeSizing]:
        self.branches = branches
        return self.build(root, None, (), capacity, 0, context_len)

    def _grow(self, root: int, g1, g2, g1_len: int, floor: float) -> Trie:
        trie, self.skipped, self._chances = Trie(root), [], {}
        for b in self.branches:
            node, prob = 0, 1.0
            for j, (tok, key) in enumerate(zip(b.tokens, b.keys)):
                prob *= self.chance(key, b.origin)
                nxt = trie.child.get((node, int(tok)))
                if nxt is None:
                    if prob < floor:
                        break
                    rank = b.ranks[j] if j < len(b.ranks) else None
                    nxt = trie.grow(node, int(tok), b.origin, rank, None, key, prob)
                elif prob > trie.p[nxt]:  # a shared node takes its best-backed branch's chance
                    trie.p[nxt], trie.key[nxt] = prob, key
                node = nxt
        for nid in range(1, len(trie.token)):  # a child never beats its parent
            par = trie.parent[nid]
            if par > 0 and trie.p[nid] > trie.p[par]:
                trie.p[nid] = trie.p[par]
        return trie

    def _tail(self, node, after, tests):
        return None  # the branches are no lookups' chains: nothing past the trie to test


def static_branches(root: int, branches: Sequence[Branch], drafts: int) -> list[TreeNode]:
    """The branches merged into one trie of at most `drafts` tokens below the root, in order."""
    tree = DraftTree(root)
    for b in branches:
        rank = b.ranks[0] if b.ranks else None
        tree.add_branch(0, b.tokens, keep=len(b.tokens), capacity=drafts + 1, origin=b.origin, rank=rank)
    return tree.finalize()
