"""The draft tree's one index (tree.TreeIndex): built from finished nodes or grown with the
tree, it agrees with the nodes, and the pictures can import it without torch."""
from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.paths import ROOT
from logitspec.core.trace import Candidate, QueryRecord, TreeNode
from logitspec.core.tree import DraftTree, TreeIndex, build_static_tree, verified_first

branch = st.lists(st.integers(0, 4), max_size=6)  # few tokens: branches share prefixes often
trees = st.tuples(branch, st.lists(st.tuples(st.integers(0, 4), branch), max_size=10), st.integers(1, 30))


def static_tree(g1: list[int], g2: list[tuple[int, list[int]]], capacity: int) -> list[TreeNode]:
    q1 = QueryRecord("g1", None, (), (), 1, 0, g1)
    pairs = [(Candidate(r, t, 0.0, 0.0), QueryRecord("g2", r, (), (), 1, 0, c)) for r, (t, c) in enumerate(g2, 1)]
    return build_static_tree(7, q1, pairs, capacity=capacity)


def path_tokens(nodes: list[TreeNode], node: int) -> list[int]:
    out = []
    while nodes[node].parent >= 0:
        out.append(nodes[node].token)
        node = nodes[node].parent
    return out[::-1]


@settings(max_examples=150, deadline=None)
@given(spec=trees)
def test_the_index_agrees_with_the_nodes(spec):
    nodes = static_tree(*spec)
    index = TreeIndex.of(nodes)
    assert len(index.child) == len(nodes) - 1
    for n in nodes:
        assert index.parent[n.id] == n.parent and index.depth[n.id] == n.depth
        if n.parent >= 0:
            assert index.child[(n.parent, n.token)] == n.id
        assert index.children.get(n.id, []) == [c.id for c in nodes if c.parent == n.id]
        path = path_tokens(nodes, n.id)
        reached = index.follow(path)
        assert reached[-1:] == ([n.id] if path else [])
        assert all(r is not None for r in reached)


@settings(max_examples=150, deadline=None)
@given(spec=trees)
def test_a_chain_that_leaves_the_tree_reaches_nothing_after(spec):
    nodes = static_tree(*spec)
    index = TreeIndex.of(nodes)
    off = 99  # no drafted token is 99
    leaf = max(range(len(nodes)), key=lambda i: nodes[i].depth)
    reached = index.follow(path_tokens(nodes, leaf) + [off, nodes[min(1, len(nodes) - 1)].token])
    assert reached[-2:] == [None, None]


@settings(max_examples=100, deadline=None)
@given(spec=trees)
def test_the_index_grown_with_the_tree_equals_one_built_from_its_nodes(spec):
    g1, g2, capacity = spec
    tree = DraftTree(7)
    tree.add_branch(0, g1, keep=20, capacity=capacity, origin="g1", query=0)
    for r, (t, c) in enumerate(g2, 1):
        tree.add_branch(0, [t, *c], keep=4, capacity=capacity, origin="g2", rank=r, query=r)
    built = TreeIndex.of(tree.nodes)
    for name in ("child", "children", "parent", "depth"):
        assert getattr(tree.index, name) == getattr(built, name)
    assert tree.size == sum(not n.pruned for n in tree.nodes)
    # Renumbered, the verified nodes are the ids 0..n-1, each after its parent.
    out = verified_first(tree.nodes)
    verified = [n for n in out if not n.pruned]
    assert [n.id for n in out] == list(range(len(out)))
    assert [n.id for n in verified] == list(range(len(verified)))
    assert all(0 <= n.parent < n.id for n in out[1:])


def test_the_tree_module_imports_without_torch():
    code = "import sys, logitspec.core.tree, visual.data; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
