"""RACER (arXiv 2604.14885; code hkr04/RACER): retrieval joined with copied logits in one draft tree.
Follows the authors' automaton at fc494a3 (racer/automaton/src/automaton.cpp, cited as cpp:LINE) and
their loop (evaluation/inference_racer.py), and their revision 4b25165's Logits Tree (the paper's
breadths), drafted node for node alike at both (tests/unit/test_racer_reference.py).

- The Retrieval Tree: every n-gram of the context (n = `racer_ngram`) in a trie with counts, an
  Aho-Corasick automaton (racer_automaton.py) whose nodes are evicted least recently used past
  `racer_nodes`, its state moved on token by token. The nodes that follow the state and its fail
  chain with the root x_{i+1} (at least `racer_min_depth` deep) are the matches, and the most
  frequent nodes under them are drafted.
- The Logits Tree (copy-logit): each token's top-k (`racer_breadth`) from the last pass that ran on
  it (every prompt position's row and every verified node's: `racer_rows`), grown breadth first
  from the root with halving breadths (`racer_logits_rule`), in the room the Retrieval Tree left.
Both merge into one trie under the root, at most `racer_drafts` tokens with the root (the reference's
max_num_draft). On a CPU the cost tree sizes the merged tree (keyedtree.py), as LogitSpec's lane is sized.
Not the reference's: eviction's order (its least recently used node may have children, cpp:157,
197-208; here it is a leaf).
"""
from __future__ import annotations

import heapq
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..core.drafter import Draft, Drafter, cost_capacity
from ..core.profile import profile_of
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..sizing.costtree import evidence, rank_bucket
from ..core.trace import QueryRecord, SourceLookup
from .keyedtree import Branch, KeyedCostTree, static_branches
from .racer_automaton import Automaton, std_order
from .recycling import SuccessorMatrix

__all__ = ["Automaton", "RacerDrafter", "logits_branches", "retrieval_branches"]

AUTOMATON, COPIED = "automaton", "copied"  # TreeNode.origin of the two trees' nodes
LOGITS_RULES = ("paper", "first-release")


def retrieval_branches(ac: Automaton, borders: Sequence[int], most: int) -> tuple[list[Branch], int]:
    """The Retrieval Tree (cpp:390-498): breadth first under the matches, one layer (depth below the
    match) at a time, each layer's nodes offered in turn to a heap of the `most` best (by count, then
    shallower, then made later); a node joins while the heap has room or it outcounts the heap's
    least, and a layer that adds none ends the search. Returns the chains from each match to its
    chosen leaves, and how many nodes were chosen (the matches counted)."""
    if most <= 0:
        return [], 0
    heap: list[tuple[int, int, int, int]] = []  # (count, -depth, node, match): the first to go first
    queue, layer, level = deque((b, b) for b in borders), [], 0
    while queue:
        u, start = queue.popleft()
        if ac.depth[u] - ac.depth[start] > level:
            joined, layer = _offer(ac, heap, layer, most), []
            if not joined:
                break  # counts never grow downwards: no deeper node can join either
            level = ac.depth[u] - ac.depth[start]
        layer.append((u, start))
        kids = ac.children[u]
        queue.extend((kids[t], start) for t in std_order(list(kids)))
    _offer(ac, heap, layer, most)
    chosen = {(u, start) for *_, u, start in heap}
    branches = []
    for _, _, node, start in sorted(heap, reverse=True):
        if node == start or any((c, start) in chosen for c in ac.children[node].values()):
            continue  # a match alone is the root; an inner node lies on a leaf's chain
        n = evidence(QueryRecord("racer", None, (), (), ac.depth[start] - 1, None, [], ac.depth[start] - 1))
        path = ac.path(node)[ac.depth[start]:]
        branches.append(Branch(path, AUTOMATON, [("cont", n, j + 1) for j in range(len(path))]))
    return branches, len(heap)


def _offer(ac: Automaton, heap: list, layer: list[tuple[int, int]], most: int) -> bool:
    """A layer's nodes offered to the heap in turn (cpp:413-429); whether any joined."""
    joined = False
    for v, start in layer:
        if len(heap) < most or ac.freq[v] > heap[0][0]:
            heapq.heappush(heap, (ac.freq[v], -ac.depth[v], v, start))
            joined = True
            if len(heap) > most:
                heapq.heappop(heap)
    return joined


def logits_branches(matrix: SuccessorMatrix, root: int, most: int, breadth: int, rule: str,
                    unseen: tuple[int, ...] = ()) -> list[Branch]:
    """The Logits Tree (cpp:78-121): breadth first from the root over each token's copied top-k, at most
    `most` nodes below the root. A node of breadth b gives its children b', b'/2, b'/4... (at least 1):
    under `rule` "paper" b' = b at the root and b/2 elsewhere (the paper's Eq. 3 and figure 9, the
    authors' 4b25165, `depth == 0`: the root's children 8, 4, 2, 1...); under "first-release" b' = b
    at depth 1 (fc494a3's cpp:99, `depth == 1`: the root's children 4, 2, 1...). A token with no row
    reads `unseen` (the reference's matrix starts all zeros, cpp:59-62)."""
    if rule not in LOGITS_RULES:
        raise ValueError(f"racer logits rule: {rule!r} is not one of {LOGITS_RULES}")
    keep = 0 if rule == "paper" else 1  # the depth whose nodes pass their breadth on whole
    nodes = [(root, -1, breadth, 0, None)]  # (token, parent, breadth, depth, rank)
    head, left = 0, most
    while head < len(nodes) and left > 0:
        tok, _, width, depth, _ = nodes[head]
        nxt = width if depth == keep else width >> 1
        for rank, child in enumerate((matrix.successors(tok) or unseen)[:width], start=1):
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


_MADE = threading.Lock()  # one memory per model when two lanes start at once


@dataclass
class RacerMemory:
    """What RACER learns, kept on the model across runs as the reference keeps one automaton for every
    question (inference_racer.py:262, 285; its state too); `key`: the settings it was made under."""

    key: tuple
    ac: Automaton
    matrix: SuccessorMatrix
    lock: threading.Lock = field(default_factory=threading.Lock)  # concurrent lanes take turns at it


def memory_for(s: DecodeSettings, model) -> RacerMemory:
    """The model's memory, made anew when absent, across runs is off, or the settings it holds differ."""
    key = (s.racer_nodes, s.racer_links, s.racer_breadth)
    if not s.racer_across_runs or model is None:
        return RacerMemory(key, Automaton(s.racer_nodes, s.racer_links), SuccessorMatrix(s.racer_breadth))
    with _MADE:
        prof = profile_of(model)
        if prof.racer is None or prof.racer.key != key:
            prof.racer = RacerMemory(key, Automaton(s.racer_nodes, s.racer_links), SuccessorMatrix(s.racer_breadth))
        return prof.racer


class RacerDrafter(Drafter):
    """RACER: the Retrieval Tree from the context's automaton and the Logits Tree from copied logits, merged."""

    method = "racer"

    def __init__(self, s: DecodeSettings, model=None) -> None:
        self.s = s
        self.memory = memory_for(s, model)
        self.ac, self.matrix = self.memory.ac, self.memory.matrix
        self.cost = KeyedCostTree(model) if s.tree == "cost" else None
        self.cost_capacity = cost_capacity(s, model)
        self.most = min(s.racer_drafts, s.capacity)  # the reference's max_num_draft: the tree's tokens, the root's counted
        self.unseen = (0,) * s.racer_breadth if s.racer_unseen_rows == "zeros" else ()
        self.wants_logits = s.racer_rows == "computed"  # else every verified node's row is asked for (read_rows)
        # The reference's prefill computes every prompt position's row and stores them all (inference_racer.py:51-53).
        self.wants_prompt_rows = s.racer_rows == "every"
        self.read = 0  # context tokens the automaton has read

    def absorb(self, text: Sequence[int]) -> None:
        """The prompt's n-grams and links (inference_racer.py:55-63); later, the n-grams that end in each
        new token, newest first, and the state moved on by the tokens accepted after the last root
        (inference_racer.py:112-121: the root itself was read when it was drafted from)."""
        n = self.s.racer_ngram
        if self.read == 0:
            for start in range(len(text) - n + 1):
                self.ac.insert(text[start:start + n])
            self.ac.build()
        else:
            for end in range(len(text), max(self.read, n - 1), -1):
                self.ac.insert(text[end - n:end])
            self.ac.feed(text[self.read + 1:])
        self.read = len(text)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        with self.memory.lock:
            return self._draft(int(root), logits, pool.tokens, context_len)

    def _draft(self, root: int, logits: torch.Tensor, text: Sequence[int], context_len: int) -> Draft:
        s = self.s
        if self.read == 0:  # the prefill's own row (under "every" the loop handed every prompt row before)
            self.matrix.update(text[-1:], logits[None])
        self.absorb(text)
        borders = self.ac.advance(root, s.racer_min_depth)
        retrieved, used = retrieval_branches(self.ac, borders, self.most)
        copied = logits_branches(self.matrix, root, self.most - used - 1, s.racer_breadth, s.racer_logits_rule,
                                 self.unseen)
        lookups = [SourceLookup(AUTOMATON, self.ac.depth[borders[0]] if borders else 0, offered(retrieved)),
                   SourceLookup(COPIED, int(bool(self.matrix.successors(root))), offered(copied))]
        if self.cost is None:
            nodes = static_branches(root, retrieved + copied, self.most - 1)
            return Draft(nodes=nodes, lookups=lookups, read_rows=self._rows(nodes))
        before = self.cost.calibration_seconds
        nodes, sizing = self.cost.draft(root, retrieved + copied, self.cost_capacity, context_len)
        return Draft(nodes=nodes, sizing=sizing, calibration_seconds=self.cost.calibration_seconds - before,
                     lookups=lookups, read_rows=self._rows(nodes))

    def _rows(self, nodes) -> list[int]:
        """Every verified node's row, rejected ones too (inference_racer.py:108-110), unless only the computed ones."""
        return [] if self.wants_logits else list(range(sum(not n.pruned for n in nodes)))

    def observe(self, truth, verified=None, seconds=None, threads=None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        with self.memory.lock:
            self.matrix.update(tokens, logits)

    def observe_rows(self, nodes, logits: torch.Tensor) -> None:
        """Rows stored shallow first, so a token's deepest row wins, as the reference's breadth-first update."""
        order = sorted(range(len(nodes)), key=lambda i: nodes[i].depth)
        with self.memory.lock:
            self.matrix.update([nodes[i].token for i in order], logits[order])
