"""RACER (arXiv 2604.14885; code hkr04/RACER): retrieval joined with copied logits in one draft tree.

- The Retrieval Tree: every n-gram of the context (n = `racer_ngram`) in a trie with counts, an
  Aho-Corasick automaton whose nodes are evicted least recently used past `racer_nodes`. The
  automaton's state is the longest suffix of the text in the trie; its fail chain lists every
  shorter one. Each of them followed by the root x_{i+1} (at least `racer_min_depth` deep) is a
  match, and the most frequent nodes under the matches (best first by count) are drafted.
- The Logits Tree (copy-logit): each token's top-k (`racer_breadth`) as computed the last time
  the model ran on that token, grown breadth first from the root with halving breadths, in the
  draft room the Retrieval Tree left.
Both merge into one trie under the root. The authors verify up to `racer_drafts` tokens on a GPU;
on a CPU the cost tree sizes the merged tree (keyedtree.py), as LogitSpec's lane is sized.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Sequence

import torch

from ..core.drafter import Draft, Drafter, cost_capacity
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..sizing.costtree import evidence, rank_bucket
from ..core.trace import QueryRecord, SourceLookup
from .keyedtree import Branch, KeyedCostTree, static_branches
from .recycling import SuccessorMatrix

AUTOMATON, COPIED = "automaton", "copied"  # TreeNode.origin of the two trees' nodes


class Automaton:
    """A trie of token n-grams with occurrence counts, fail links and LRU eviction (node ids reused)."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max(2, max_nodes)
        self.children: list[dict[int, int]] = [{}]
        self.parent, self.token, self.freq, self.depth = [-1], [-1], [0], [0]
        self.lru: OrderedDict[int, None] = OrderedDict()  # least recently used first; the root never enters
        self.free: list[int] = []
        self.state = 0  # the longest suffix of the text read so far that is a trie path
        self._fail: dict[int, int] = {}  # fail links, computed when first asked, dropped when the trie changes

    def __len__(self) -> int:
        return len(self.children) - len(self.free)

    def path(self, node: int) -> list[int]:
        out = []
        while node > 0:
            out.append(self.token[node])
            node = self.parent[node]
        return out[::-1]

    def walk(self, tokens: Sequence[int]) -> int | None:
        node = 0
        for t in tokens:
            node = self.children[node].get(t)
            if node is None:
                return None
        return node

    def insert(self, pattern: Sequence[int]) -> None:
        """Count one occurrence of `pattern` and of each of its prefixes."""
        node = 0
        self.freq[0] += 1
        for t in pattern:
            nxt = self.children[node].get(int(t))
            if nxt is None:
                nxt = self._new(node, int(t))
            node = nxt
            self.freq[node] += 1
        self._touch_up(node)
        self._evict()

    def _new(self, parent: int, token: int) -> int:
        nid = self.free.pop() if self.free else len(self.children)
        if nid == len(self.children):
            self.children.append({}), self.parent.append(parent), self.token.append(token)
            self.freq.append(0), self.depth.append(self.depth[parent] + 1)
        else:
            self.children[nid], self.parent[nid], self.token[nid] = {}, parent, token
            self.freq[nid], self.depth[nid] = 0, self.depth[parent] + 1
        self.children[parent][token] = nid
        self.lru[nid] = None
        self._fail.clear()
        return nid

    def _touch_up(self, node: int) -> None:
        """Mark a node and its ancestors used, parents after children: the least recently used node is a leaf."""
        while node > 0:
            self.lru.move_to_end(node)
            node = self.parent[node]

    def _evict(self) -> None:
        while len(self) > self.max_nodes:
            victim = next(iter(self.lru))
            del self.lru[victim]
            del self.children[self.parent[victim]][self.token[victim]]
            self.free.append(victim)
            self._fail.clear()
            if self.state == victim:
                self.state = 0

    def fail(self, node: int) -> int:
        """The longest proper suffix of the node's path that is itself a trie path (the root: none)."""
        if node == 0:
            return 0
        got = self._fail.get(node)
        if got is None:
            path = self.path(node)
            got = next((n for i in range(1, len(path)) if (n := self.walk(path[i:])) is not None), 0)
            self._fail[node] = got
        return got

    def feed(self, tokens: Sequence[int]) -> None:
        """Read tokens: the Aho-Corasick transition (follow fail links until a child holds the token)."""
        u = self.state
        for t in tokens:
            while u and t not in self.children[u]:
                u = self.fail(u)
            u = self.children[u].get(t, 0)
        self.state = u

    def resync(self, text: Sequence[int], longest: int) -> None:
        """The state after `text`, found anew: the longest suffix (up to `longest` tokens) in the trie."""
        for n in range(min(longest, len(text)), 0, -1):
            node = self.walk(text[-n:])
            if node is not None:
                self.state = node
                return
        self.state = 0

    def matches(self, token: int, min_depth: int) -> list[int]:
        """The nodes that follow each suffix of the text in the trie with `token`, longest suffix
        first, at least `min_depth` deep: the fail chain from the state, the root last."""
        out, u = [], self.state
        while True:
            v = self.children[u].get(token)
            if v is not None and self.depth[v] >= min_depth:
                out.append(v)
            if u == 0:
                return out
            u = self.fail(u)

    def touch(self, node: int) -> None:
        self._touch_up(node)


def retrieval_branches(ac: Automaton, borders: Sequence[int], most: int) -> tuple[list[Branch], int]:
    """The most frequent nodes under the matches (at most `most`, the matches counted), best first
    by count and shallower first among equals, as chains from each match to its chosen leaves;
    and how many nodes were chosen."""
    heap = [(-ac.freq[b], 0, i, b, b) for i, b in enumerate(borders)]
    heapq.heapify(heap)
    chosen: dict[tuple[int, int], int] = {}  # (node, its match) -> depth below the match
    seq = len(heap)
    while heap and len(chosen) < most:
        _, d, _, node, start = heapq.heappop(heap)
        chosen[(node, start)] = d
        for child in ac.children[node].values():
            seq += 1
            heapq.heappush(heap, (-ac.freq[child], d + 1, seq, child, start))
    branches = []
    for (node, start), d in chosen.items():
        if d == 0 or any((c, start) in chosen for c in ac.children[node].values()):
            continue  # a match alone is the root; an inner node lies on a leaf's chain
        n = evidence(QueryRecord("racer", None, (), (), ac.depth[start] - 1, None, [], ac.depth[start] - 1))
        path = []
        u = node
        while u != start:
            path.append(ac.token[u])
            u = ac.parent[u]
        path.reverse()
        branches.append(Branch(path, AUTOMATON, [("cont", n, j + 1) for j in range(len(path))]))
    return branches, len(chosen)


def logits_branches(matrix: SuccessorMatrix, root: int, most: int, breadth: int) -> list[Branch]:
    """The Logits Tree: breadth first from the root over each token's copied top-k, a node's children
    given halving breadths (the root's first child the root's own breadth, then half of that...;
    a deeper node's first child half its breadth), at most `most` nodes below the root: the paper's
    rule (8, 4, 2, 1... under the root) as public ports implement it; the authors' first release
    halved at the root instead (4, 2, 1...), docs/performance.md."""
    nodes = [(root, -1, breadth, 0, None)]  # (token, parent, breadth, depth, rank)
    head, left = 0, most
    while head < len(nodes) and left > 0:
        tok, _, width, depth, _ = nodes[head]
        nxt = width if depth == 0 else width >> 1
        for rank, child in enumerate(matrix.successors(tok)[:width], start=1):
            if left <= 0:
                break
            nodes.append((int(child), head, max(1, nxt), depth + 1, rank))
            nxt >>= 1
            left -= 1
        head += 1
    parents = {p for _, p, _, _, _ in nodes}
    branches = []
    for i in range(1, len(nodes)):
        if i in parents:
            continue
        chain, u = [], i
        while u > 0:
            chain.append(u)
            u = nodes[u][1]
        chain.reverse()
        branches.append(Branch([nodes[u][0] for u in chain], COPIED,
                               [("first", rank_bucket(nodes[u][4]), 0, 0) for u in chain],
                               [nodes[u][4] for u in chain]))
    return branches


def offered(branches: Sequence[Branch]) -> int:
    """The distinct nodes the branches hold below the root (shared prefixes once)."""
    return len({tuple(b.tokens[:j]) for b in branches for j in range(1, len(b.tokens) + 1)})


class RacerDrafter(Drafter):
    """RACER: the Retrieval Tree from the context's automaton and the Logits Tree from copied logits, merged."""

    method = "racer"
    wants_logits = True

    def __init__(self, s: DecodeSettings, model=None) -> None:
        self.s = s
        self.ac = Automaton(s.racer_nodes)
        self.matrix = SuccessorMatrix(s.racer_breadth)
        self.cost = KeyedCostTree(model) if s.tree == "cost" else None
        self.cost_capacity = cost_capacity(s, model)
        self.drafts = min(s.racer_drafts, s.capacity - 1)
        self.read = 0  # context tokens whose n-grams the automaton holds (their windows' starts)

    def absorb(self, text: Sequence[int]) -> None:
        """Insert the n-grams that end in the text's new tokens (a full window each, as the authors')."""
        n = self.s.racer_ngram
        for start in range(max(0, self.read - n + 1), len(text) - n + 1):
            self.ac.insert(text[start:start + n])
        self.read = len(text)
        self.ac.resync(text, n - 1)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s, text = self.s, pool.tokens
        if self.read == 0:  # the prefill's row: the only one computed before the first pass
            self.matrix.update(text[-1:], logits[None])
        self.absorb(text)
        borders = self.ac.matches(int(root), s.racer_min_depth)
        for b in borders:
            self.ac.touch(b)
        retrieved, used = retrieval_branches(self.ac, borders, self.drafts)
        copied = logits_branches(self.matrix, int(root), self.drafts - used, s.racer_breadth)
        lookups = [SourceLookup(AUTOMATON, self.ac.depth[borders[0]] if borders else 0, offered(retrieved)),
                   SourceLookup(COPIED, int(bool(self.matrix.successors(int(root)))), offered(copied))]
        if self.cost is None:
            return Draft(nodes=static_branches(int(root), retrieved + copied, self.drafts), lookups=lookups)
        before = self.cost.calibration_seconds
        nodes, sizing = self.cost.draft(int(root), retrieved + copied, self.cost_capacity, context_len)
        return Draft(nodes=nodes, sizing=sizing, calibration_seconds=self.cost.calibration_seconds - before,
                     lookups=lookups)

    def observe(self, truth, verified=None, seconds=None, threads=None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        self.matrix.update(tokens, logits)
