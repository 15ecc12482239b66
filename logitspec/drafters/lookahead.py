"""Lookahead decoding (Fu et al., 2024; hao-ai-lab/LookaheadDecoding), as a drafter of this loop.

One pass holds two branches under the root x_{i+1}:
- the lookahead branch, a 2D Jacobi window: level 0 is a chain of W - 1 guesses after the
  root; each level l >= 1 holds W tokens, its column i one position further on than the
  column's token below it. As a tree: level 1's column i hangs under block 0's node i (the root,
  then level 0's tokens), level l's under level l-1's. Each token then sees the context, the
  root, level 0 up to its column and its own column below it: the authors' mask, with
  positions context + depth. The pass's argmax after each top-level token is the window's next
  level, and each column with it makes an N-gram for the pool;
- the verification branch: up to G stored N-grams whose first token is the root, their other
  N - 1 tokens as chains under the root (merged into a trie where they share a prefix).
The walk verifies the verification branch only (tree.UNWALKED): the window is never accepted.
The drafting is plain Python.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.drafter import Draft, Drafter
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..core.trace import QueryRecord, TreeNode
from ..core.tree import DraftTree

if TYPE_CHECKING:
    import torch

WINDOW, POOL = "window", "pool"  # TreeNode.origin of the two branches


class GuessPool:
    """N-grams by their first token: at most `size` (G) per token, the least recently seen
    dropped first, as the authors' pool keeps them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.grams: dict[int, list[tuple[int, ...]]] = {}

    def add(self, first: int, rest: Sequence[int]) -> None:
        tup, row = tuple(int(t) for t in rest), self.grams.setdefault(int(first), [])
        if tup in row:
            row.remove(tup)
        elif len(row) >= self.size:
            row.pop(0)
        row.append(tup)

    def guesses(self, first: int) -> list[tuple[int, ...]]:
        return list(self.grams.get(int(first), ()))


@dataclass
class JacobiWindow:
    """The lookahead branch's tokens: level 0 and the upper levels filled so far (up to N - 2).

    It starts as one level of W + N - 3 tokens copied from the prompt and gains a level per
    pass until it holds N - 1 levels (the authors' warm-up); from then on each pass yields W
    N-grams. Like the authors' code, the window moves on by one position per pass, whatever the
    pass accepted.
    """

    ngram: int  # N
    level0: list[int]
    upper: list[list[int]] = field(default_factory=list)  # levels 1.., each len(level0) + 1 long

    @classmethod
    def start(cls, window: int, ngram: int, prompt: Sequence[int], rng: random.Random) -> "JacobiWindow":
        if window < 2 or ngram < 3:
            raise ValueError("lookahead decoding needs a window of at least 2 and n-grams of at least 3 tokens")
        return cls(ngram, [rng.choice(list(prompt)) for _ in range(window + ngram - 3)])

    @property
    def full(self) -> bool:
        return len(self.upper) == self.ngram - 2

    def nodes(self, root_id: int, first_id: int) -> tuple[list[TreeNode], list[int]]:
        """The window's nodes (ids from `first_id`) under the root, and the ids of the top
        level's nodes, whose argmax the next level is (block 0, root included, before any
        upper level)."""
        out: list[TreeNode] = []

        def put(token: int, parent: int, depth: int) -> int:
            out.append(TreeNode(id=first_id + len(out), token=int(token), parent=parent, depth=depth, origin=WINDOW))
            return out[-1].id

        block = [root_id]
        for j, tok in enumerate(self.level0):
            block.append(put(tok, block[-1], j + 1))
        below = block
        for lv, level in enumerate(self.upper, start=1):
            below = [put(tok, below[i], i + lv) for i, tok in enumerate(level)]
        return out, below

    def advance(self, preds: Sequence[int], block_tokens: Sequence[int], pool: GuessPool) -> None:
        """Take the pass's argmax after each top-level node (`preds`); once full, hand the
        pool each column's N-gram: block 0's token (`block_tokens`: root, then level 0), the
        upper levels' tokens of that column, the new one."""
        preds = [int(p) for p in preds]
        if not self.full:  # warm-up: every level moves on a position and the new one joins
            self.level0 = self.level0[1:]
            self.upper = [lv[1:] for lv in self.upper] + [preds[1:]]
            return
        for i, new in enumerate(preds):
            pool.add(block_tokens[i], [lv[i] for lv in self.upper] + [new])
        self.level0 = self.upper[0][1:]
        self.upper = self.upper[1:] + [preds]


def lookahead_tree(root: int, guesses: Sequence[Sequence[int]], window: JacobiWindow
                   ) -> tuple[list[TreeNode], list[int], QueryRecord]:
    """The pass's nodes: the root, the verification branch's trie, then the window (ids after
    the trie's); the ids of the window's top level; the pool lookup as a query record."""
    tree = DraftTree(root)
    for g in guesses:
        tree.add_branch(0, g, keep=len(g), capacity=len(g) * len(guesses) + 1, origin=POOL, query=0)
    nodes = tree.finalize()
    win, top = window.nodes(0, len(nodes))
    query = QueryRecord("lookahead", None, (int(root),), (1,), 1 if guesses else None, None,
                        list(guesses[-1]) if guesses else [])
    return nodes + win, top, query


def most_nodes(window: int, ngram: int, guesses: int) -> int:
    """The most nodes a lookahead pass holds: the root, the window at its widest (N - 1
    levels, or a warm-up step), the guesses' chains."""
    widest = max((window + ngram - 3 - f) + f * (window + ngram - 2 - f) for f in range(ngram - 1))
    return 1 + widest + guesses * (ngram - 1)


class LookaheadDrafter(Drafter):
    """Lookahead decoding as a drafter: the verification branch holds the pool's
    N-grams that start with the root; the Jacobi window rides in the same pass and feeds the pool."""

    method = "lookahead"

    def __init__(self, s: DecodeSettings, model=None) -> None:  # it reads no model
        self.s = s
        self.pool = GuessPool(s.lookahead_guesses)
        self.window: JacobiWindow | None = None
        self.tree_room = most_nodes(s.lookahead_window, s.lookahead_ngram, s.lookahead_guesses)
        self.block: list[int] = []  # this step's block 0: the root, then level 0

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        if self.window is None:  # the authors fill it with tokens copied from the prompt at random
            self.window = JacobiWindow.start(s.lookahead_window, s.lookahead_ngram, pool.tokens, random.Random(s.seed))
        guesses = self.pool.guesses(root) if self.window.full else []
        nodes, top, query = lookahead_tree(root, guesses, self.window)
        self.block = [root, *self.window.level0]
        return Draft(nodes=nodes, queries=[query], read_rows=top)

    def observe_rows(self, nodes: Sequence[TreeNode], logits: torch.Tensor) -> None:
        if self.window is not None and len(nodes) == len(self.window.level0) + 1:
            # The window's guesses are the plain argmax, as the authors take them, whatever the sampling.
            self.window.advance(logits.argmax(dim=-1).tolist(), self.block, self.pool)
