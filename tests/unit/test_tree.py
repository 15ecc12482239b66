"""The draft tree: trie merging, rank and capacity pruning, and the tree attention mask."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from logitspec.core.trace import Candidate, QueryRecord, TreeNode
from logitspec.core.tree import PRUNED_SHOWN_PER_BRANCH, PruningRule, build_static_tree, chain_tree, tree_inputs


def query(kind: str, continuation: list[int], rank: int | None = None) -> QueryRecord:
    """A matched query record that returns `continuation` (the tree reads only that)."""
    return QueryRecord(kind, rank, (), (), 1 if continuation else None, 0 if continuation else None, list(continuation))


def g2_pairs(branches: list[tuple[int, list[int]]]) -> list[tuple[Candidate, QueryRecord]]:
    """(candidate token, continuation) per rank 1, 2, ... as the decoder hands them over."""
    return [(Candidate(rank=r, token=t, logit=0.0, prob=0.0), query("g2", c, r))
            for r, (t, c) in enumerate(branches, start=1)]


def path_tokens(nodes: list[TreeNode], node_id: int) -> list[int]:
    """Tokens from the root's child down to `node_id`."""
    out = []
    while nodes[node_id].parent >= 0:
        out.append(nodes[node_id].token)
        node_id = nodes[node_id].parent
    return out[::-1]


def find_path(nodes: list[TreeNode], tokens: list[int]) -> list[TreeNode | None]:
    """The node reached by each prefix of `tokens` from the root (None once off the trie)."""
    child = {(n.parent, n.token): n for n in nodes if n.parent >= 0}
    out, at = [], 0
    for t in tokens:
        n = child.get((at, t)) if at is not None else None
        out.append(n)
        at = n.id if n is not None else None
    return out


def check_structure(nodes: list[TreeNode]) -> None:
    """Invariants every finalized tree keeps."""
    assert nodes[0].parent == -1 and nodes[0].depth == 0 and not nodes[0].pruned
    seen_pruned = False
    children: set[tuple[int, int]] = set()
    for i, n in enumerate(nodes):
        assert n.id == i
        if i == 0:
            continue
        assert 0 <= n.parent < i, "parents precede children"
        parent = nodes[n.parent]
        assert n.depth == parent.depth + 1
        # The trie never holds a token twice under one parent, pruned nodes included.
        assert (n.parent, n.token) not in children
        children.add((n.parent, n.token))
        # Verified nodes come first, and a verified node hangs under a verified one.
        if n.pruned:
            seen_pruned = True
            assert n.prune_reason in ("rank", "capacity", "cost")
        else:
            assert not seen_pruned, "verified nodes must precede pruned ones"
            assert not parent.pruned and n.prune_reason is None


# ----- hand-made trees --------------------------------------------------------------------

def test_rank_rule_keeps_4_3_1_tokens():
    long = [50, 51, 52, 53, 54, 55, 56]
    branches = [(10 + r, long) for r in range(1, 35)]  # ranks 1..34, each with 7 more tokens
    nodes = build_static_tree(0, None, g2_pairs(branches), capacity=1000)
    check_structure(nodes)
    for rank in (1, 8, 9, 32, 33, 34):
        along = find_path(nodes, [10 + rank] + long)
        keep = PruningRule().keep(rank)
        assert keep == (4 if rank <= 8 else 3 if rank <= 32 else 1)
        assert all(n is not None and not n.pruned for n in along[:keep])
        cut = [n for n in along[keep:] if n is not None]
        assert len(cut) == PRUNED_SHOWN_PER_BRANCH  # a few cut tokens are kept for the picture
        assert all(n.pruned and n.prune_reason == "rank" for n in cut)
        assert along[0].origin == "g2" and along[0].rank == rank and along[0].query == rank


def test_g1_branch_keeps_its_continuation_length():
    nodes = build_static_tree(7, query("g1", list(range(100, 130))), [], capacity=64, g1_len=20)
    along = find_path(nodes, list(range(100, 130)))
    assert [n is not None and not n.pruned for n in along[:20]] == [True] * 20
    assert all(n.origin == "g1" and n.query == 0 for n in along[:20])
    assert all(n is None or n.pruned for n in along[20:])
    assert nodes[0].token == 7 and nodes[0].origin == "root"


def test_shared_prefixes_merge_into_one_trie():
    nodes = build_static_tree(
        1, query("g1", [5, 6, 7]), g2_pairs([(5, [6, 8]), (9, [6]), (5, [6, 7, 3])]), capacity=64)
    check_structure(nodes)
    verified = [n for n in nodes if not n.pruned]
    # root, 5, 6, 7 (g1), 8 under 6 (rank 1), 9, 6 under 9 (rank 2), 3 under 7 (rank 3)
    assert sorted(tuple(path_tokens(nodes, n.id)) for n in verified) == sorted([
        (), (5,), (5, 6), (5, 6, 7), (5, 6, 8), (9,), (9, 6), (5, 6, 7, 3)])
    five = find_path(nodes, [5])[0]
    assert five.origin == "g1"  # first inserted by g1; rank 1 reused it


def test_capacity_stops_the_tree():
    nodes = build_static_tree(1, query("g1", [5, 6, 7, 8]), g2_pairs([(9, [10])]), capacity=3)
    check_structure(nodes)
    verified = [n for n in nodes if not n.pruned]
    assert [n.token for n in verified] == [1, 5, 6]
    seven = find_path(nodes, [5, 6, 7])[2]
    assert seven.pruned and seven.prune_reason == "capacity"
    nine = find_path(nodes, [9])[0]
    assert nine.pruned and nine.prune_reason == "capacity"


def test_capacity_one_is_the_root_alone():
    nodes = build_static_tree(1, query("g1", [5, 6]), g2_pairs([(9, [])]), capacity=1)
    assert [n.token for n in nodes if not n.pruned] == [1]


def test_pruned_node_is_revived_when_a_later_branch_may_keep_it():
    # Rank 1 may keep 1 token here, so 4 and 5 are first cut; rank 2 drafts the same branch
    # and may keep 3 tokens, so they must end up verified.
    rule = PruningRule(top_ranks=1, top_keep=1, mid_ranks=2, mid_keep=3, rest_keep=1)
    nodes = build_static_tree(0, None, g2_pairs([(3, [4, 5]), (3, [4, 5])]), capacity=64, rule=rule)
    check_structure(nodes)
    along = find_path(nodes, [3, 4, 5])
    assert all(n is not None and not n.pruned for n in along)


def test_chain_tree_is_one_chain():
    nodes = chain_tree(9, [4, 4, 5], "pld")
    check_structure(nodes)
    assert [(n.token, n.parent, n.depth, n.origin) for n in nodes] == [
        (9, -1, 0, "root"), (4, 0, 1, "pld"), (4, 1, 2, "pld"), (5, 2, 3, "pld")]
    assert chain_tree(9, [], "root") == [TreeNode(id=0, token=9, parent=-1, depth=0, origin="root")]


# ----- property-based: random retrieval results -------------------------------------------

small_tokens = st.integers(0, 5)  # a tiny alphabet: branches collide and share prefixes
branch_st = st.tuples(small_tokens, st.lists(small_tokens, max_size=8))


@settings(max_examples=300, deadline=None)
@given(
    root=small_tokens,
    g1=st.lists(small_tokens, max_size=25),
    branches=st.lists(branch_st, max_size=40),
    capacity=st.integers(1, 40),
    g1_len=st.integers(1, 20),
)
def test_static_tree_invariants(root, g1, branches, capacity, g1_len):
    rule = PruningRule()
    nodes = build_static_tree(root, query("g1", g1), g2_pairs(branches), capacity=capacity, g1_len=g1_len)
    check_structure(nodes)
    verified = [n for n in nodes if not n.pruned]
    assert len(verified) <= capacity
    full = len(verified) == capacity

    # Every verified node is allowed by some branch: it lies on that branch within its limit.
    allowed: set[tuple[int, ...]] = {()}
    limits = [(list(g1), g1_len)] + [([t] + c, rule.keep(r)) for r, (t, c) in enumerate(branches, 1)]
    for toks, keep in limits:
        for j in range(min(keep, len(toks))):
            allowed.add(tuple(toks[: j + 1]))
    for n in verified:
        assert tuple(path_tokens(nodes, n.id)) in allowed

    # And unless the capacity is used up, every allowed prefix is verified.
    if not full:
        assert {tuple(path_tokens(nodes, n.id)) for n in verified} == allowed
        assert all(n.prune_reason != "capacity" for n in nodes)


# ----- the tree attention mask --------------------------------------------------------------

@st.composite
def random_trees(draw):
    n = draw(st.integers(1, 24))
    nodes = [TreeNode(id=0, token=draw(st.integers(0, 99)), parent=-1, depth=0, origin="root")]
    for i in range(1, n):
        p = draw(st.integers(0, i - 1))
        nodes.append(TreeNode(id=i, token=draw(st.integers(0, 99)), parent=p,
                              depth=nodes[p].depth + 1, origin="g2"))
    return nodes


def ancestors_or_self(nodes: list[TreeNode], i: int) -> set[int]:
    out = set()
    while i >= 0:
        out.add(i)
        i = nodes[i].parent
    return out


@settings(max_examples=200, deadline=None)
@given(nodes=random_trees(), context_len=st.integers(0, 12),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64]))
def test_every_mask_row_allows_context_ancestors_and_itself(nodes, context_len, dtype):
    ids, pos, mask = tree_inputs(nodes, context_len, dtype, "cpu")
    t = len(nodes)
    assert ids.tolist() == [[n.token for n in nodes]]
    assert pos.tolist() == [[context_len + n.depth for n in nodes]]
    assert mask.shape == (1, 1, t, context_len + t) and mask.dtype == dtype
    blocked = torch.finfo(dtype).min
    for i in range(t):
        row = mask[0, 0, i]
        allowed = {j for j in range(context_len + t) if row[j].item() == 0}
        expected = set(range(context_len)) | {context_len + a for a in ancestors_or_self(nodes, i)}
        assert allowed == expected
        assert all(row[j].item() == blocked for j in range(context_len + t) if j not in expected)


def test_mask_of_a_hand_made_tree():
    #      0
    #     / \
    #    1   2
    #    |
    #    3
    nodes = [TreeNode(0, 10, -1, 0, "root"), TreeNode(1, 11, 0, 1, "g1"),
             TreeNode(2, 12, 0, 1, "g2"), TreeNode(3, 13, 1, 2, "g1")]
    _, pos, mask = tree_inputs(nodes, 2, torch.float32, "cpu")
    allowed = (mask[0, 0] == 0).int().tolist()
    assert allowed == [
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 0, 1, 0],
        [1, 1, 1, 1, 0, 1],
    ]
    assert pos.tolist() == [[2, 3, 3, 4]]


@pytest.mark.parametrize("capacity", [1, 2, 8, 64])
def test_static_tree_from_defaults_never_exceeds_capacity(capacity):
    branches = [(r % 7, [(r * 3 + j) % 11 for j in range(20)]) for r in range(1, 65)]
    nodes = build_static_tree(0, query("g1", list(range(20, 40))), g2_pairs(branches), capacity=capacity)
    check_structure(nodes)
    assert sum(not n.pruned for n in nodes) == capacity  # plenty of drafts: the tree fills up


def test_tree_inputs_for_an_accelerator_are_made_on_its_device():
    # "meta" stands in for an accelerator here: only the tree's block travels there.
    nodes = [TreeNode(0, 10, -1, 0, "root"), TreeNode(1, 11, 0, 1, "g1"), TreeNode(2, 12, 0, 1, "g2")]
    ids, pos, mask = tree_inputs(nodes, 5, torch.bfloat16, "meta")
    assert ids.device.type == pos.device.type == mask.device.type == "meta"
    assert ids.shape == pos.shape == (1, 3) and mask.shape == (1, 1, 3, 8) and mask.dtype == torch.bfloat16
