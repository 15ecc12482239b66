"""Token Recycling's parts: the successor matrix, the static template, the trees grown from
the matrix, the rows a verification hands the drafter, and the bench's figures."""
from __future__ import annotations

import json

import pytest
import torch

from logitspec.bench.summary import summarise
from logitspec.analysis.lanes import run_spec
from logitspec.sizing.curve import CostCurve
from logitspec.core.settings import DecodeSettings
from logitspec.drafters.recycling import RecyclingDrafter
from logitspec.core.loop import computed_rows
from logitspec.decoders import REGISTRY, make_drafter
from logitspec.drafters.recycling import (ORIGIN, TEMPLATE_NODES, TEMPLATE_WIDTHS, RecycledCostTree, hybrid_cost_tree,
                                          SuccessorMatrix, mark_recycled, matrix_for, recycled_candidates, static_tree)
from logitspec.core.speculation import speculate
from logitspec.core.trace import Candidate, RunTrace, StepRecord, TreeNode
from logitspec.core.tree import TreeIndex
from logitspec.core.verify import LazyHead

VOCAB = 50


def full_matrix(k: int = 8) -> SuccessorMatrix:
    """Every token's successors are the next k tokens, mod VOCAB: rows are never empty."""
    m = SuccessorMatrix(k)
    for t in range(VOCAB):
        m.rows[t] = tuple((t + 1 + j) % VOCAB for j in range(k))
    return m


def test_the_template_is_the_papers_80_nodes_6_deep_8_wide():
    assert TEMPLATE_NODES == 80
    assert max(len(path) for path in TEMPLATE_WIDTHS) + 1 == 6
    assert max(TEMPLATE_WIDTHS.values()) == 8
    for path in TEMPLATE_WIDTHS:  # every widened node is itself in the template
        if path:
            assert path[-1] <= TEMPLATE_WIDTHS[path[:-1]]


def test_update_keeps_each_rows_top_k_best_first_and_the_last_row_wins():
    m = SuccessorMatrix(3)
    logits = torch.tensor([[0.0, 5.0, 1.0, 3.0, 2.0], [9.0, 0.5, 0.0, 0.0, 8.0], [0.0, 0.0, 7.0, 6.0, 5.0]])
    m.update([4, 1, 4], logits)
    assert m.successors(1) == (0, 4, 1)
    assert m.successors(4) == (2, 3, 4)  # the third row, computed later, replaced the first
    assert m.successors(0) == ()  # never seen: no successors


def test_a_static_tree_fills_the_template_breadth_first():
    nodes = static_tree(7, full_matrix())
    assert len(nodes) == TEMPLATE_NODES + 1 and nodes[0].origin == "root"
    assert max(n.depth for n in nodes) == 6
    depths = [n.depth for n in nodes]
    assert depths == sorted(depths)  # breadth first: parents before children
    for n in nodes[1:]:
        parent = nodes[n.parent]
        assert n.origin == ORIGIN and n.token == (parent.token + n.rank) % VOCAB  # rank r of the parent's row
    assert [n.token for n in nodes if n.depth == 1] == [(7 + r) % VOCAB for r in range(1, 9)]


def test_empty_rows_grow_nothing():
    assert len(static_tree(3, SuccessorMatrix())) == 1
    m = SuccessorMatrix(8, {3: (4, 5)})  # the root's row only, two wide
    nodes = static_tree(3, m)
    assert [(n.token, n.rank, n.depth) for n in nodes[1:]] == [(4, 1, 1), (5, 2, 1)]


def test_the_cost_tree_is_sized_by_the_curve_and_records_its_origin():
    # Trees cost next to nothing more than one token: the tree fills its capacity.
    cheap = CostCurve([1, 64], [0.01, 0.0100001], 0, "cpu", "float32")
    tree = RecycledCostTree(None, full_matrix(), depth=6, width=8)
    tree.sizer.curve = cheap
    nodes, sizing = tree.draft(7, capacity=16, context_len=0)
    verified = [n for n in nodes if not n.pruned]
    assert sizing.mode == "cost" and len(verified) == sizing.size == 16
    assert all(n.origin == ORIGIN and 1 <= n.rank <= 8 for n in nodes[1:])
    assert all(n.accept_prob is not None for n in nodes[1:])
    index = TreeIndex.of(verified)
    assert all(index.parent[n.id] < n.id for n in verified[1:])  # parents first: a valid tree
    steep = CostCurve([1, 2, 64], [0.01, 1.0, 60.0], 0, "cpu", "float32")  # a second token costs 100 times the first
    tree.sizer.curve = steep
    nodes, sizing = tree.draft(7, capacity=16, context_len=0)
    assert sizing.size == 1


def test_the_cost_tree_learns_each_ranks_chance_from_the_truth():
    tree = RecycledCostTree(None, full_matrix(), depth=6, width=8)
    tree.sizer.curve = CostCurve([1, 64], [0.01, 0.0100001], 0, "cpu", "float32")
    before = tree.ranks.p(2)
    for _ in range(20):
        tree.draft(7, capacity=16, context_len=0)
        tree.observe([7, 9, 11, 13])  # rank 2 right at every depth
    assert tree.ranks.p(2) > 0.8 > before
    assert tree.ranks.p(1) < 0.1


def test_the_verification_hands_over_only_the_rows_its_head_computed(tiny_llama):
    from logitspec.core.verify import WalkLog, prepare_inputs, verify_tree
    from logitspec.runtime.kvcache import new_cache

    prompt = [1, 2, 3, 4, 5]
    cache = new_cache(tiny_llama.config, 64)
    with torch.inference_mode():
        tiny_llama(input_ids=torch.tensor([prompt]), cache=cache, use_cache=True)
    nodes = static_tree(6, full_matrix())[:12]
    log = WalkLog()
    verify_tree(tiny_llama, cache, nodes, prepare_inputs(tiny_llama, nodes, len(prompt)), 1, None, len(prompt), log)
    assert isinstance(log.head, LazyHead)
    tokens, rows = computed_rows(log.head, nodes)
    assert rows.shape == (len(tokens), tiny_llama.config.vocab_size)
    assert len(tokens) < len(nodes)  # leaves the walk never reached were never computed
    with torch.inference_mode():
        want = log.head.row(0)
    assert tokens[0] == 6 and torch.equal(rows[0], want)


def test_the_method_is_offered_everywhere_a_method_is_named(tiny_llama):
    assert {"recycling", "logitspec+recycling"} <= set(REGISTRY.methods)
    assert run_spec("logitspec+recycling") == ("logitspec+recycling", "cost")
    assert run_spec("recycling") == ("recycling", "cost")
    assert run_spec("recycling-static") == ("recycling", "static")
    d = make_drafter("recycling", DecodeSettings(tree="static"), tiny_llama)
    assert isinstance(d, RecyclingDrafter) and d.tree_room == TEMPLATE_NODES + 1
    assert d.matrix is matrix_for(tiny_llama, 8)  # the hot start: one matrix per model
    alone = make_drafter("recycling", DecodeSettings(recycle_across_runs=False), tiny_llama)
    assert alone.matrix is not d.matrix and alone.tree_room == 0


def test_a_trace_with_recycled_nodes_round_trips_through_json():
    nodes = static_tree(7, full_matrix())
    step = StepRecord(0, "recycling", 10, 7, [7, 8], 9, tree=nodes, accepted_path=[0, 1])
    trace = RunTrace("recycling", "tiny", "", [1, 2], DecodeSettings(tree="static").to_dict(), steps=[step])
    back = RunTrace.from_json(trace.to_json())
    assert back.steps[0].tree == nodes
    assert json.loads(trace.to_json())["steps"][0]["tree"]["origin"][1] == ORIGIN


@pytest.mark.parametrize("method", ["recycling", "recycling-static"])
def test_the_bench_reports_tree_size_and_drafting_share_for_recycling(method):
    row = {"tokens": 30, "seconds": 2.0, "steps": 12, "overhead": 0.1, "decode_seconds": 1.9, "tree_nodes": 60}
    out = summarise([row], None)
    assert out["mean_tree_size"] == 5.0
    assert out["draft_bookkeeping_share"] == pytest.approx(0.1 / 1.9)
    assert out["mean_accepted_tokens"] == 2.5


def test_the_hybrid_adds_the_roots_recycled_successors_after_the_logits_candidates():
    logits = torch.arange(VOCAB, dtype=torch.float32)  # token 49 likeliest, then 48, ...
    cands, _ = speculate(logits, 49, 4)  # 48, 47, 46, 45
    extra = recycled_candidates((47, 3, 10), cands, logits, 4)
    assert [(c.rank, c.token) for c in extra] == [(6, 3), (7, 10)]  # 47 is the logits' own already
    assert extra[0].prob == pytest.approx(float(torch.softmax(logits, -1)[3]))
    nodes = [TreeNode(0, 49, -1, 0, "root"), TreeNode(1, 48, 0, 1, "g2", rank=1), TreeNode(2, 3, 0, 1, "g2", rank=6),
             TreeNode(3, 4, 2, 2, "g2", rank=6)]
    mark_recycled(nodes, 4)
    assert [(n.origin, n.rank) for n in nodes[1:]] == [("g2", 1), (ORIGIN, 2), ("g2", 6)]


def test_the_hybrid_learns_recycled_candidates_apart_from_the_logits_tail():
    tree = hybrid_cost_tree(None, None, k=64)
    far = tree.first_key(Candidate(rank=60, token=1, logit=0.0, prob=0.0), 0, 0)
    recycled = tree.first_key(Candidate(rank=65, token=2, logit=0.0, prob=0.0), 0, 0)
    assert far == ("first", 64, 0, 0) and recycled == ("first", (ORIGIN, 1), 0, 0)
