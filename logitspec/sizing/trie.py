"""The step's draft trie and its greedy search: every drafted branch in one trie with each
node's path chance (`Trie`), and the prefix of nodes, taken by falling chance, that gains
the most over what the run's rate earns in its cost (`best_prefix`)."""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.tree import TreeIndex


class Trie(TreeIndex):
    """Every drafted branch in one trie, with what the search needs per node (rebuilt every step)."""

    def __init__(self, root: int) -> None:
        super().__init__()
        self.add(0, -1, root, 0)
        self.token: list[int] = [root]
        self.origin: list[str] = ["root"]
        self.rank: list[int | None] = [None]
        self.query: list[int | None] = [None]
        self.key: list[tuple | None] = [None]  # the node's kind in AcceptanceStats
        self.p: list[float] = [1.0]  # chance the whole path to the node is accepted

    def grow(self, parent: int, token: int, origin: str, rank: int | None, query: int, key: tuple,
             p: float) -> int:
        """Add a child of `parent`; returns its id."""
        nid = len(self.token)
        self.add(nid, parent, token, self.depth[parent] + 1)
        self.token.append(token), self.origin.append(origin), self.rank.append(rank)
        self.query.append(query), self.key.append(key), self.p.append(p)
        return nid


@dataclass
class Prefix:
    """The greedy search's result: nodes by falling path chance, and the best cut of them."""

    order: list[int]  # trie nodes in the order taken, root excluded
    gains: list[float]  # expected accepted tokens of each prefix size (index = size - 1)
    size: int  # the size (root included) that gains the most over the run's rate (`best_prefix`)
    after: int | None  # the likeliest node left untaken when the search stopped (None: none left)


def best_prefix(trie: Trie, cost: Sequence[float], capacity: int, rate: float) -> Prefix:
    """Take nodes greedily by path chance (a child never beats its parent, so parents come
    first) up to `capacity`, and find the prefix whose expected tokens most exceed what the
    run's `rate` (tokens per second, `RunRate`) earns in its cost: c(0..capacity)."""
    p = trie.p
    heap = [(-p[c], c) for c in trie.children.get(0, [])]
    heapq.heapify(heap)
    expected, size = 1.0, 1
    best_value, best = expected - rate * cost[1], 1
    order: list[int] = []
    gains = [1.0]
    while heap and size < capacity:
        negp, nid = heapq.heappop(heap)
        order.append(nid)
        size += 1
        expected -= negp
        gains.append(expected)
        value = expected - rate * cost[size]
        if value > best_value:
            best_value, best = value, size
        for c in trie.children.get(nid, ()):
            heapq.heappush(heap, (-p[c], c))
    return Prefix(order, gains, best, heap[0][1] if heap else None)
