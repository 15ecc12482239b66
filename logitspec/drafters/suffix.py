"""SuffixDecoding (arXiv 2411.04975; Snowflake's arctic-inference, vLLM's `suffix` method): drafts
from suffix trees over the prompt and over earlier outputs, sized by the trees' counts.

Two trees, each every substring of its text up to `suffix_depth` tokens with its count of
occurrences (a suffix tree truncated at that depth, as arctic-inference's):
- the prompt tree: this run's prompt and the tokens generated so far;
- the output tree: the outputs of earlier runs of the same model in this process, and this run's
  as it goes, kept on the model's profile (`OutputTree`) and bounded by `suffix_cache_requests`
  (the oldest outputs go first, as vLLM's `max_cached_requests`); `suffix_cache_tokens`, off by
  default, bounds its tokens too (finished outputs go first).
Each step matches every suffix of the text (the root last) against each tree; from the node a
match of m tokens reaches, it drafts by path probability (the product of count(child) /
count(parent)) while the probability stays at least `suffix_min_prob` and the draft holds at most
`suffix_spec_factor` * m tokens: best first as a tree (`suffix_tree`, the paper's mode and
arctic-inference's `use_tree_spec`) or the likeliest child each time as a chain (vLLM's `suffix`).
The draft of highest score (the sum of its tokens' probabilities) over both trees and every match
length is verified; ties go to the longer match and to the prompt tree, as arctic-inference's.

Children of equal counts are ranked as arctic-inference's sibling lists rank them, and the tree's
best-first queue breaks equal probabilities as libstdc++'s `std::priority_queue` does, so the
drafts are arctic-inference's node for node (tests/engines/test_suffix_reference.py).

arctic-inference is not a dependency: it is a C++ source build of minutes on these machines
(docs/performance.md); this is the same rule in Python, small enough to read beside the paper.
"""
from __future__ import annotations

import threading
import weakref
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from ..core.drafter import Draft, Drafter
from ..core.profile import profile_of
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..core.trace import SourceLookup
from ..core.tree import DraftTree

PROMPT_TREE, OUTPUT_TREE = "prompt-tree", "output-tree"  # TreeNode.origin of a draft from each tree
# Probabilities and scores in single precision, as arctic-inference computes them: a score that ties
# in double precision may not in single, and then the other draft wins there.
F32 = np.float32


class SuffixTrie:
    """Every substring of the sequences added, up to `depth` tokens, with its count (node ids reused).

    `order[n]` holds n's children as arctic-inference's sibling list holds them: by decreasing
    count; a new child last; a child counted again first among its new equals if it led its old
    ones, else last among them; a child uncounted first among its new equals."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.children: list[dict[int, int]] = [{}]
        self.order: list[list[int]] = [[]]
        self.token: list[int] = [-1]
        self.count: list[int] = [0]
        self.level: list[int] = [0]
        self.free: list[int] = []

    def __len__(self) -> int:
        return len(self.children) - len(self.free)

    def _new(self, node: int, token: int) -> int:
        nxt = self.free.pop() if self.free else len(self.children)
        if nxt == len(self.children):
            self.children.append({}), self.order.append([]), self.token.append(0)
            self.count.append(0), self.level.append(0)
        self.children[nxt], self.order[nxt], self.level[nxt] = {}, [], self.level[node] + 1
        self.token[nxt], self.count[nxt] = token, 1
        self.children[node][token] = nxt
        self.order[node].append(nxt)  # arctic's Case 1b: inserted after the tail child
        return nxt

    def _recount(self, node: int, child: int, by: int) -> None:
        """count[child] += by (1 or -1), moved in its parent's list as arctic's _increment_count and
        _decrement_count move it."""
        siblings, was = self.order[node], self.count[child]
        self.count[child] = was + by
        if len(siblings) == 1:
            return
        i = siblings.index(child)
        led = i == 0 or self.count[siblings[i - 1]] > was  # it headed its group of equal counts
        del siblings[i]
        find = bisect_left if by < 0 or led else bisect_right
        siblings.insert(find(siblings, -(was + by), key=lambda n: -self.count[n]), child)

    def extend(self, active: list[int], tokens: Sequence[int]) -> list[int]:
        """Append tokens to a sequence whose suffixes end at the `active` nodes (shorter than the
        depth); each substring ending at a new token is counted once. Returns the new active nodes."""
        for t in tokens:
            t = int(t)
            self.count[0] += 1
            nxt = []
            for node in [0, *active]:
                child = self.children[node].get(t)
                if child is None:
                    child = self._new(node, t)
                else:
                    self._recount(node, child, 1)
                if self.level[child] < self.depth:
                    nxt.append(child)
            active = nxt
        return active

    def remove(self, tokens: Sequence[int]) -> None:
        """Uncount a sequence added before: each of its substrings once, dropping nodes no longer seen."""
        for i in range(len(tokens)):
            self.count[0] -= 1
            node = 0
            for t in tokens[i:i + self.depth]:
                child = self.children[node][int(t)]
                if self.count[child] == 1:
                    del self.children[node][int(t)]
                    self.order[node].remove(child)
                    self._drop(child)
                    break
                self._recount(node, child, -1)
                node = child

    def _drop(self, node: int) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            stack.extend(self.children[n].values())
            self.children[n] = {}
            self.free.append(n)

    def walk(self, tokens: Sequence[int]) -> int | None:
        node = 0
        for t in tokens:
            node = self.children[node].get(int(t))
            if node is None:
                return None
        return node

    def ranked(self, node: int) -> list[tuple[int, int]]:
        """(token, child) by decreasing count, equals as arctic-inference's sibling list holds them."""
        return [(self.token[c], c) for c in self.order[node]]

    def in_edge(self, node: int) -> tuple[int, int] | None:
        """The one child every suffix through `node` goes on to (arctic-inference's path-compressed
        node goes on: the same probability, no queueing), else None."""
        kids = self.children[node]
        if node == 0 or len(kids) != 1:
            return None
        tok, child = next(iter(kids.items()))
        return (tok, child) if self.count[child] == self.count[node] else None


class QueueItem(NamedTuple):
    """An entry of the tree's best-first queue: a node to draft (`emit`) or to open (its children)."""

    prob: float
    node: int
    token: int
    parent: int  # index in the draft of the node's parent, -1 for the match
    emit: bool


class StdHeap:
    """libstdc++'s std::priority_queue on `prob` alone (push_heap, pop_heap), so equal probabilities
    leave in the order arctic-inference's C++ queue gives them."""

    def __init__(self) -> None:
        self.a: list[QueueItem] = []

    def __bool__(self) -> bool:
        return bool(self.a)

    def push(self, item: QueueItem) -> None:
        self.a.append(item)
        self._up(len(self.a) - 1, 0, item)

    def pop(self) -> QueueItem:
        a, n = self.a, len(self.a)
        if n > 1:
            value, a[n - 1] = a[n - 1], a[0]
            self._down(n - 1, value)
        return a.pop()

    def _up(self, hole: int, top: int, value: QueueItem) -> None:
        a = self.a
        parent = (hole - 1) // 2
        while hole > top and a[parent].prob < value.prob:
            a[hole], hole = a[parent], parent
            parent = (hole - 1) // 2
        a[hole] = value

    def _down(self, size: int, value: QueueItem) -> None:
        a, hole, second = self.a, 0, 0
        while second < (size - 1) // 2:
            second = 2 * (second + 1)
            if a[second].prob < a[second - 1].prob:
                second -= 1
            a[hole], hole = a[second], second
        if size % 2 == 0 and second == (size - 2) // 2:
            second = 2 * (second + 1)
            a[hole], hole = a[second - 1], second - 1
        self._up(hole, 0, value)


def _opened(trie: SuffixTrie, node: int, prob: float, parent: int) -> QueueItem:
    """What the queue holds after `node`: its in-edge child to draft, or the node to open."""
    nxt = trie.in_edge(node)
    return QueueItem(prob, nxt[1], nxt[0], parent, True) if nxt else QueueItem(prob, node, -1, parent, False)


def speculate_tree(trie: SuffixTrie, start: int, most: int, min_prob: float) -> list[tuple[int, int, float]]:
    """Best first from `start` by path probability, at most `most` nodes, none under `min_prob`:
    (token, index of its parent in the list or -1 for the root, path probability) each."""
    out: list[tuple[int, int, float]] = []
    queue, floor = StdHeap(), F32(min_prob)
    queue.push(_opened(trie, start, 1.0, -1))
    while queue and len(out) < most:
        it = queue.pop()
        if it.emit:
            out.append((it.token, it.parent, it.prob))
            queue.push(_opened(trie, it.node, it.prob, len(out) - 1))
            continue
        total = F32(trie.count[it.node])
        for tok, child in trie.ranked(it.node):
            p = F32(F32(it.prob) * F32(trie.count[child])) / total  # single precision, as the C++ computes it
            if p < floor:
                break  # the rest are less likely still
            queue.push(QueueItem(float(p), child, tok, it.parent, True))
    return out


def speculate_chain(trie: SuffixTrie, start: int, most: int, min_prob: float) -> list[tuple[int, int, float]]:
    """The likeliest child each time from `start` (vLLM's `suffix`), as `speculate_tree` returns nodes."""
    out: list[tuple[int, int, float]] = []
    p, floor, node = F32(1.0), F32(min_prob), start
    while len(out) < most and p >= floor:
        nxt = trie.in_edge(node)
        if nxt is None:
            kids = trie.ranked(node)
            if not kids:
                break
            nxt = kids[0]
            p = F32(p * (F32(trie.count[nxt[1]]) / F32(trie.count[node])))  # as `prob *= count / node->count`
            if p < floor:
                break
        out.append((nxt[0], len(out) - 1, float(p)))
        node = nxt[1]
    return out


@dataclass
class Speculation:
    """A draft from one tree: (token, parent index, path probability) per node, -1 the root, its score."""

    origin: str
    match_len: int
    nodes: list[tuple[int, int, float]] = field(default_factory=list)

    @property
    def score(self) -> float:
        total = F32(0.0)
        for _, _, p in self.nodes:  # summed in single precision, as arctic-inference's C++ sums
            total = F32(total + F32(p))
        return float(total)


def tree_speculation(origin: str, trie: SuffixTrie, tail: Sequence[int], s: DecodeSettings,
                     most: int) -> tuple[Speculation | None, int]:
    """One tree's highest-scoring draft over every match length (the longer of equals), and the
    longest suffix of `tail` it holds (0: not even its last token)."""
    best: Speculation | None = None
    longest = 0
    speculate = speculate_tree if s.suffix_tree else speculate_chain
    for m in range(1, len(tail) + 1):
        node = trie.walk(tail[-m:])
        if node is None:
            break  # a longer suffix holds this one: it is missing too
        longest = m
        room = min(most, int(float(F32(m) * F32(s.suffix_spec_factor)) + 1e-6))  # as the C++ rounds it
        if room <= 0:
            continue
        spec = Speculation(origin, m, speculate(trie, node, room, s.suffix_min_prob))
        if spec.nodes and (best is None or spec.score >= best.score):
            best = spec
    return best, longest


def _tail(text: Sequence[int], s: DecodeSettings) -> list[int]:
    return list(text[-(s.suffix_depth - 1):]) if s.suffix_depth > 1 else []


def best_speculation(trees: Sequence[tuple[str, SuffixTrie]], text: Sequence[int], s: DecodeSettings,
                     most: int) -> Speculation | None:
    """The highest-scoring draft over both trees and every match length (arctic-inference's rule)."""
    return best_of([tree_speculation(origin, trie, _tail(text, s), s, most)[0] for origin, trie in trees])


def best_of(specs: Sequence[Speculation | None]) -> Speculation | None:
    """The highest score, the first tree's of equals (the request's own over past outputs, as
    arctic-inference's `speculate` keeps)."""
    best: Speculation | None = None
    for spec in specs:
        if spec is not None and (best is None or spec.score > best.score):
            best = spec
    return best


class OutputTree:
    """Earlier outputs of one model in one tree, at most `max_outputs` of them (vLLM's
    `max_cached_requests`: the oldest are uncounted first when a run starts, still writing or not,
    as arctic-inference evicts; 0 keeps none) and, if `max_tokens` is set, at most so many tokens
    of the finished ones (this trie is not path-compressed: a node for each of a token's `depth`
    suffixes). Held on the model's profile (`output_tree_for`), so every run of the process shares it."""

    def __init__(self, depth: int, max_outputs: int, max_tokens: int | None = None) -> None:
        self.trie = SuffixTrie(depth)
        self.max_outputs, self.max_tokens = max_outputs, max_tokens
        self.outputs: deque[OutputSequence] = deque()  # oldest first; the last ones may still grow
        self.tokens = 0
        self.lock = threading.Lock()

    def start(self) -> "OutputSequence":
        with self.lock:
            seq = OutputSequence(self, [])
            if self.max_outputs == 0:  # vLLM's 0: no tree of past outputs at all
                seq.evicted = True
                return seq
            self.outputs.append(seq)
            while 0 < self.max_outputs < len(self.outputs):  # below 0: unbounded, as arctic-inference's -1
                self._evict(self.outputs.popleft())
            return seq

    def _evict(self, seq: "OutputSequence") -> None:
        """Uncount an output; a run still writing it writes on outside the tree (its nodes may be reused)."""
        self.trie.remove(seq.tokens)
        self.tokens -= len(seq.tokens)
        seq.evicted, seq.active = True, []

    def _append(self, seq: "OutputSequence", tokens: Sequence[int]) -> None:
        with self.lock:
            if seq.evicted:
                return
            seq.active = self.trie.extend(seq.active, tokens)
            seq.tokens.extend(int(t) for t in tokens)
            self.tokens += len(tokens)
            if self.max_tokens is not None and self.tokens > self.max_tokens:
                self._shed()

    def _shed(self) -> None:
        """Uncount the oldest finished outputs down to `max_tokens`: no run still writing loses its nodes."""
        for seq in [o for o in self.outputs if not o.writing]:
            if self.tokens <= self.max_tokens:
                break
            self.outputs.remove(seq)
            self._evict(seq)


@dataclass
class OutputSequence:
    """One run's output as it enters the output tree; `writing` until its run lets it go."""

    tree: OutputTree
    tokens: list[int]
    active: list[int] = field(default_factory=list)
    evicted: bool = False
    writing: bool = True

    def append(self, tokens: Sequence[int]) -> None:
        if tokens:
            self.tree._append(self, tokens)

    def finish(self) -> None:
        self.writing = False


_LOCK = threading.Lock()


def output_tree_for(model, s: DecodeSettings) -> OutputTree:
    """The model's output tree, shared by the runs of this process; a new one if its depth or bounds changed."""
    bounds = (s.suffix_depth, s.suffix_cache_requests, s.suffix_cache_tokens)
    with _LOCK:
        prof = profile_of(model)
        tree = prof.suffix_outputs
        if tree is None or (tree.trie.depth, tree.max_outputs, tree.max_tokens) != bounds:
            tree = prof.suffix_outputs = OutputTree(*bounds)
        return tree


class SuffixDrafter(Drafter):
    """SuffixDecoding: the best-scoring draft of the prompt tree and the model's output tree."""

    method = "suffix"

    def __init__(self, s: DecodeSettings, model=None) -> None:
        self.s = s
        self.prompt_tree = SuffixTrie(s.suffix_depth)
        self.active: list[int] = []
        shared = output_tree_for(model, s) if model is not None else \
            OutputTree(s.suffix_depth, s.suffix_cache_requests, s.suffix_cache_tokens)
        self.output = shared.start()
        weakref.finalize(self, self.output.finish)  # the run has ended once its drafter is gone
        self.outputs = shared
        self.read = 0  # tokens of the text the trees hold: the context and the last step's root
        self.prompt_len: int | None = None
        self.most = min(s.suffix_depth, s.capacity - 1)  # vLLM's num_speculative_tokens: the trees' depth

    def absorb(self, text: Sequence[int], root: int) -> None:
        """Add the context's new tokens and the root (sampled, so it is text now: vLLM adds it to the
        request before speculating) to the prompt tree, and those generated to the output tree."""
        if self.prompt_len is None:
            self.prompt_len = len(text)
        new = [*text[self.read:], int(root)]
        self.active = self.prompt_tree.extend(self.active, new)
        self.output.append(new[max(0, self.prompt_len - self.read):])
        self.read = len(text) + 1

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        self.absorb(pool.tokens, root)
        tail = _tail([*pool.tokens[-(self.s.suffix_depth - 1):], int(root)], self.s)
        found = [tree_speculation(origin, trie, tail, self.s, self.most)
                 for origin, trie in ((PROMPT_TREE, self.prompt_tree), (OUTPUT_TREE, self.outputs.trie))]
        lookups = [SourceLookup(origin, longest, len(spec.nodes) if spec else 0)
                   for (spec, longest), origin in zip(found, (PROMPT_TREE, OUTPUT_TREE))]
        return Draft(nodes=speculation_tree(int(root), best_of([spec for spec, _ in found])), lookups=lookups)


def speculation_tree(root: int, spec: Speculation | None) -> list:
    """The draft as the step's tree: every node verified, each with its path probability."""
    tree = DraftTree(root)
    if spec is not None:
        ids = [0] * len(spec.nodes)
        for i, (tok, at, p) in enumerate(spec.nodes):
            parent = 0 if at < 0 else ids[at]
            ids[i] = tree.add_branch(parent, [tok], keep=1, capacity=len(spec.nodes) + 1, origin=spec.origin,
                                     probs=[p])[0]
    return tree.finalize()
