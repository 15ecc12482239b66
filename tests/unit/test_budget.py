"""logitspec.analysis.budget: accepted tokens against tree budget, on hand-built runs (values worked out
by hand) and on every shipped trace (the replay's own budget gives back the run's real count)."""
from __future__ import annotations

import pytest

from helpers.figures import shipped_traces
from logitspec.analysis.budget import (BUDGET_MAX, accepted, cost_order, paper_order, pooled, prompt_lookup,
                                       replay_budgets)
from logitspec.core.limits import InputError
from logitspec.core.retrieval import NgramPool
from logitspec.core.settings import PruningRule
from logitspec.core.trace import Candidate, QueryRecord, RunTrace, StepRecord, TreeNode, TreeSizing
from logitspec.core.tree import build_static_tree, chain_tree
from visual.counts import run_counts


def query(kind: str, continuation: list[int], rank: int | None = None) -> QueryRecord:
    """A lookup record; only its kind, rank and continuation matter to the replay."""
    return QueryRecord(kind, rank, (), (), 1 if continuation else None, 0 if continuation else None, continuation)


def node(i: int, token: int, parent: int, depth: int, p: float, pruned: bool = False) -> TreeNode:
    return TreeNode(id=i, token=token, parent=parent, depth=depth, origin="g2", pruned=pruned,
                    prune_reason="cost" if pruned else None, accept_prob=p)


def pld_chain_run() -> RunTrace:
    """Prompt lookup on 10 11 12 13 14 10 11; the output is 12 13 14 99 50 51.

    Step 0 (root 12): the 3-gram 10 11 12 matches at the start, the chain is 13 14 10 11 (the
    context ends there) and the walk accepts 13 14. Steps 1 and 2 (roots 99, 50) find nothing.
    The last token (51) needed no pass."""
    steps = [
        StepRecord(0, "pld", 7, 12, [12, 13, 14], 99, queries=[query("pld", [13, 14, 10, 11])],
                   tree=chain_tree(12, [13, 14, 10, 11], "pld"), accepted_path=[0, 1, 2]),
        StepRecord(1, "pld", 10, 99, [99], 50, queries=[query("pld", [])], tree=chain_tree(99, [], "pld")),
        StepRecord(2, "pld", 11, 50, [50], 51, queries=[query("pld", [])], tree=chain_tree(50, [], "pld")),
        StepRecord(3, "pld", 12, 51, [51], None, forward=False, tree=chain_tree(51, [], "root")),
    ]
    return RunTrace("pld", "hand-built", "", [10, 11, 12, 13, 14, 10, 11], {"max_new_tokens": 6}, steps)


def cost_tree_run() -> RunTrace:
    """A LogitSpec run of the cost tree on the prompt 20 21 5 6; the output is 20 21 22 23 24 25.

    Step 0 (root 20): g1 (the 1-gram 20) continues 21 5 6; candidates 30 (rank 1, g2: 31 32),
    21 (rank 2, g2: 22 23) and 40 (rank 3, nothing). The paper's tree takes its nodes in the
    order 20 | 21 5 6 | 30 31 32 | 22 23 | 40, so the true 21, 22, 23 sit at positions 1, 7, 8.
    The cost tree chose 20 21 30 22 (chances .6 .3 .35) and recorded 5 (.2, under 21) and
    23 (.1, under 22) unchosen; its ranking is 20 21 22 30 5 23: the true nodes at 1, 2, 5.
    Step 1 (root 23): g1 finds nothing, candidate 24 (rank 1) is right in both trees.
    """
    tree0 = [TreeNode(id=0, token=20, parent=-1, depth=0, origin="root"), node(1, 21, 0, 1, 0.6),
             node(2, 30, 0, 1, 0.3), node(3, 22, 1, 2, 0.35), node(4, 23, 3, 3, 0.1, True), node(5, 5, 1, 2, 0.2, True)]
    cands0 = [Candidate(1, 30, 5.0, 0.3), Candidate(2, 21, 4.0, 0.2), Candidate(3, 40, 3.0, 0.1)]
    queries0 = [query("g1", [21, 5, 6]), query("g2", [31, 32], 1), query("g2", [22, 23], 2), query("g2", [], 3)]
    tree1 = [TreeNode(id=0, token=23, parent=-1, depth=0, origin="root"), node(1, 24, 0, 1, 0.3)]
    steps = [
        StepRecord(0, "logitspec", 4, 20, [20, 21, 22], 23, candidates=cands0, queries=queries0, tree=tree0,
                   accepted_path=[0, 1, 3], sizing=TreeSizing("cost", 4, None, None, None, None, "")),
        StepRecord(1, "logitspec", 7, 23, [23, 24], 25, candidates=[Candidate(1, 24, 5.0, 0.3)],
                   queries=[query("g1", []), query("g2", [], 1)], tree=tree1, accepted_path=[0, 1],
                   sizing=TreeSizing("cost", 2, None, None, None, None, "")),
        StepRecord(2, "logitspec", 9, 25, [25], None, forward=False, tree=chain_tree(25, [], "root")),
    ]
    return RunTrace("logitspec", "hand-built", "", [20, 21, 5, 6], {"max_new_tokens": 6, "tree": "cost"}, steps)


def curve(*pieces: tuple[int, float]) -> list[float]:
    """A curve over B = 1..64 from (first budget, value) pieces."""
    out = []
    for (start, v), nxt in zip(pieces, [*pieces[1:], (BUDGET_MAX + 1, None)]):
        out += [v] * (nxt[0] - start)
    return out


def test_a_chain_by_hand():
    r = replay_budgets(pld_chain_run())
    assert list(r.curves) == ["pld"] and r.own == "pld"
    # Three passes; B = 1 commits the roots and the free last token (4), B = 2 adds 13, B >= 3 also 14.
    assert r.curves["pld"].per_pass == curve((1, 4 / 3), (2, 5 / 3), (3, 2.0))
    # The chain held 5 nodes at step 0 (root and 4 tokens: the context ended there), 1 at steps 1, 2.
    assert r.curves["pld"].reached == [3] + [1] * 4 + [0] * 59
    assert r.own_budget == pytest.approx(7 / 3)
    assert r.own_tokens == r.tokens == 6 and r.tokens_per_pass == 2.0


def test_a_small_tree_by_hand():
    r = replay_budgets(cost_tree_run())
    assert list(r.curves) == ["paper", "cost", "pld"] and r.own == "cost"
    # Step 1 commits 1 (B = 1) or 2; the last token is free; step 0 as in the docstring.
    assert r.curves["paper"].per_pass == curve((1, 1.5), (2, 2.5), (8, 3.0), (9, 3.5))
    assert r.curves["cost"].per_pass == curve((1, 1.5), (2, 2.5), (3, 3.0), (6, 3.5))
    # Prompt lookup's chain 21 5 6 holds one true token; step 1's root 23 is nowhere in the context.
    assert r.curves["pld"].per_pass == curve((1, 1.5), (2, 2.0))
    assert r.curves["paper"].reached[:11] == [2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0]
    assert r.curves["cost"].reached[:7] == [2, 2, 1, 1, 1, 1, 0]
    # The run's own trees (4 and 2 nodes) replayed give back its 6 tokens in 2 passes.
    assert (r.own_budget, r.own_tokens, r.tokens_per_pass) == (3.0, 6, 3.0)


def test_orders_by_hand():
    step = cost_tree_run().steps[0]
    assert [n.token for n in paper_order(step, 20, PruningRule())] == [20, 21, 5, 6, 30, 31, 32, 22, 23, 40]
    assert [n.token for n in cost_order(step)] == [20, 21, 22, 30, 5, 23]
    # The walk that scripts/modelled_speedup.py counts with: verified nodes only.
    assert accepted(step.tree, [20, 21, 22, 23]) == 2 and accepted(step.tree, [20, 30, 31]) == 1


def test_pooled_runs_add_tokens_and_passes():
    a, b = replay_budgets(cost_tree_run()), replay_budgets(pld_chain_run())
    both = pooled([a, b])
    assert list(both.curves) == ["pld"] and both.own is None and both.own_tokens is None
    assert both.curves["pld"].tokens == [x + y for x, y in zip(a.curves["pld"].tokens, b.curves["pld"].tokens)]
    assert both.curves["pld"].per_pass[0] == pytest.approx(7 / 5)
    twice = pooled([a, a])
    assert twice.curves["cost"].per_pass == a.curves["cost"].per_pass and twice.own_tokens == 12


def test_a_trace_whose_contexts_do_not_add_up_is_refused():
    t = cost_tree_run()
    t.steps[1].context_len = 8
    with pytest.raises(InputError, match="does not add up"):
        replay_budgets(t)


# ---------------------------------------------------------------- the shipped traces

SHIPPED = shipped_traces()


@pytest.mark.parametrize("name,trace", SHIPPED, ids=[n for n, _ in SHIPPED])
def test_shipped_curves_rise_and_give_back_the_run(name, trace):
    r = replay_budgets(trace)
    assert r.tokens_per_pass == pytest.approx(run_counts(trace).tokens_per_pass)
    for c in r.curves.values():
        v = c.per_pass
        assert len(v) == BUDGET_MAX and all(a <= b for a, b in zip(v, v[1:])), c.name
        # B = 1 verifies the root alone: one token per pass, plus a final commit that needed none.
        assert v[0] == pytest.approx((r.passes + r.tokens - sum(len(s.tokens) for s in trace.steps if s.forward))
                                     / r.passes)
    if trace.method == "logitspec":
        # Each pass replayed at its own size, in its own tree's order, commits what it really did.
        assert r.own in ("paper", "cost") and r.own_tokens == r.tokens
        assert r.curves["paper"].per_pass[-1] >= r.curves["pld"].per_pass[0]


@pytest.mark.parametrize("name,trace", SHIPPED, ids=[n for n, _ in SHIPPED])
def test_shipped_orders_are_the_trees_own(name, trace):
    """The paper's tree of capacity B is the first B nodes of its capacity-64 tree (checked at a
    few B), a static run's rebuilt tree is its recorded one, a cost tree's first nodes are the
    ones it chose, and prompt lookup found again in the context starts with the recorded chain."""
    pool = NgramPool(tuple(trace.settings.get("ngram_sizes", (1, 2, 3))), trace.prompt_tokens)
    for s in trace.steps[:40]:
        if not s.forward:
            continue
        if trace.method == "logitspec":
            order = paper_order(s, trace.settings.get("continuation", 20), PruningRule(**trace.settings["rule"]))
            for b in (2, 7, 23):
                built = build_static_tree(s.root, s.queries[0], list(zip(s.candidates, s.queries[1:])), b,
                                          trace.settings.get("continuation", 20), PruningRule(**trace.settings["rule"]))
                assert [(n.token, n.depth) for n in built if not n.pruned] == [(n.token, n.depth) for n in order[:b]]
            if s.sizing.mode == "static":
                assert [(n.token, n.parent) for n in order] == [(n.token, n.parent) for n in s.verified_nodes]
            else:
                size = len(s.verified_nodes)
                assert {n.id for n in cost_order(s)[:size]} == {n.id for n in s.verified_nodes}
        if s.queries and s.queries[0].kind in ("g1", "pld"):
            recorded = s.queries[0].continuation
            assert prompt_lookup(pool, s.root, BUDGET_MAX - 1).continuation[:len(recorded)] == recorded
        pool.extend(s.tokens)
