"""A draft tree drafted elsewhere, sized by measured cost: the branches a drafter proposes, each
node with its kind, grown into one trie and cut by the cost tree's sizer (`CostSizer`,
sizing/costtree.py) where the next node no longer pays for its seconds at the run's rate. RACER
(racer.py) sizes its merged tree so on a CPU, as LogitSpec's lane sizes its own."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.trace import TreeNode, TreeSizing
from ..core.tree import DraftTree
from ..sizing.costtree import AcceptanceStats, CostSizer, walk_tests
from ..sizing.trie import Trie


@dataclass
class Branch:
    """One drafted chain under the root: its tokens, where they came from, each token's kind (an
    AcceptanceStats key: ("first", rank bucket, 0, 0) or ("cont", evidence, depth)) and rank."""

    tokens: list[int]
    origin: str
    keys: list[tuple]
    ranks: list[int | None] = field(default_factory=list)


class KeyedCostTree:
    """The branches in one trie, each node's chance its parent's times its kind's (learnt by the
    run), then the prefix that gains most over the run's rate (`CostSizer.size`)."""

    def __init__(self, model) -> None:
        # Its own statistics: LogitSpec's g1/g2 chances stay untouched.
        self.sizer = CostSizer(model, AcceptanceStats())

    @property
    def calibration_seconds(self) -> float:
        return self.sizer.calibration_seconds

    def draft(self, root: int, branches: Sequence[Branch], capacity: int,
              context_len: int) -> tuple[list[TreeNode], TreeSizing]:
        return self.sizer.size(lambda floor: self._grow(root, branches, floor), capacity, context_len)

    def _grow(self, root: int, branches: Sequence[Branch], floor: float) -> Trie:
        trie = Trie(root)
        for b in branches:
            node, prob = 0, 1.0
            for j, (tok, key) in enumerate(zip(b.tokens, b.keys)):
                prob *= self.sizer.chance(key, b.origin)
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

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        """Learn the cost curve and the run's rate, and each kind's chance from every node whose
        parent lay on the true path (the branches are no lookups' chains: nothing past the trie)."""
        trie = self.sizer.learn_pass(truth, verified, seconds, threads)
        if trie is None:
            return
        tests: dict[tuple, list[bool]] = {}
        walk_tests(trie, truth, tests)
        self.sizer.learn(tests)


def static_branches(root: int, branches: Sequence[Branch], drafts: int) -> list[TreeNode]:
    """The branches merged into one trie of at most `drafts` tokens below the root, in order."""
    tree = DraftTree(root)
    for b in branches:
        rank = b.ranks[0] if b.ranks else None
        tree.add_branch(0, b.tokens, keep=len(b.tokens), capacity=drafts + 1, origin=b.origin, rank=rank)
    return tree.finalize()
