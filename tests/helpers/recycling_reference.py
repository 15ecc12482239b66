"""Token Recycling replayed against its authors' code, draft for draft: the harness both sides run.

A context is a Spec-Bench question's tokens (the bundled tokenizer), read as the model's output.
Each pass drafts a tree under the token the output has reached; the walk accepts the longest
drafted path the output agrees with (ties to the first in node order), as greedy verification
would, and the next root is the output's next token. After each pass every node's row names its
token's top-k successors, from a stand-in model: the token that followed it most recently in the
output so far, then ranks drawn from a seeded generator. The authors' matrix
(scripts/recycling_reference_fixtures.py) and the lane's drafter hear the same rows.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recycling_reference.json.gz"
K = 8  # the successors a row keeps (the authors' output_id_topk)
PASSES = 30  # at most per context

Tree = tuple[list[int], list[int]]  # the nodes' tokens and parents, root first (parent -1)


def stand_in_rows(tokens: Sequence[int], output: Sequence[int], pos: int, seed: int, vocab: int) -> list[list[int]]:
    """Each node's top-k successors after a pass at output position `pos`: the token that last
    followed it in output[:pos + 1], if any, then distinct seeded draws."""
    last: dict[int, int] = {}
    for a, b in zip(output[:pos], output[1 : pos + 1]):
        last[a] = b
    rng = random.Random(seed * 1_000_003 + pos)
    rows = []
    for t in tokens:
        row = [last[t]] if t in last else []
        while len(row) < K:
            c = rng.randrange(vocab)
            if c not in row:
                row.append(c)
        rows.append(row)
    return rows


def walk(tree: Tree, ahead: Sequence[int]) -> int:
    """The most draft tokens one path of the tree matches with `ahead`, the output after the root."""
    tokens, parents = tree
    depth = [0] * len(tokens)
    best = 0
    for i in range(1, len(tokens)):  # parents precede children
        p = parents[i]
        if (p == 0 or depth[p] > 0) and depth[p] < len(ahead) and tokens[i] == ahead[depth[p]]:
            depth[i] = depth[p] + 1
            best = max(best, depth[i])
    return best


def replay(output: Sequence[int], seed: int, vocab: int, draft: Callable[[int], Tree],
           update: Callable[[list[int], list[list[int]]], None]) -> list[Tree]:
    """One context decoded by a drafter (`draft` a root's tree, `update` the matrix from the pass's
    rows); the trees it drafted, pass by pass."""
    trees, pos = [], 0
    while len(trees) < PASSES and pos + 1 < len(output):
        tree = draft(output[pos])
        trees.append(tree)
        update(tree[0], stand_in_rows(tree[0], output, pos, seed, vocab))
        pos += 1 + walk(tree, output[pos + 1 :])
    return trees


def digest(tree: Tree) -> str:
    """A tree's nodes (tokens and parents, in order) as a short hash."""
    return hashlib.sha256(json.dumps(tree).encode()).hexdigest()[:16]
