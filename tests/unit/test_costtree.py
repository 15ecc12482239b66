"""The cost-aware tree's choices on synthetic cost curves, and how it learns."""
from __future__ import annotations

import pytest

from helpers.retrieval_steps import step_inputs
from logitspec.sizing.curve import CostCurve
from logitspec.sizing.costtree import FIT_EVIDENCE, AcceptanceStats, CostSizer, RunFit, RunRate, evidence, fit_group
from logitspec.sizing.retrievaltree import RetrievalCostTree, cont_key
from logitspec.core.retrieval import NgramPool


def curve(fn, max_n: int = 256) -> CostCurve:
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    return CostCurve(sizes, [fn(n) for n in sizes], 256, "cpu", "float32")


FLAT = curve(lambda n: 0.010)  # GPU-like: a tree is nearly free


STEEP = curve(lambda n: 0.058 + 0.002 * n)  # this machine's shape: ~3x at 64 tokens


LINEAR = curve(lambda n: 0.058 * n)  # every token costs a full pass


def build(c: CostCurve, capacity: int = 64, stats: AcceptanceStats | None = None, run_rate: float = 1.0):
    """One step's tree; `run_rate`: the tokens per c(1) the run has made so far."""
    d = RetrievalCostTree(model=None, stats=stats or AcceptanceStats(), curve=c)
    d.sizer.rate = RunRate(tokens=run_rate, cost=1.0)
    root, g1, g2 = step_inputs()
    nodes, sizing = d.build(root, g1, g2, capacity=capacity, g1_len=20, context_len=40)
    return d, nodes, sizing


def verified(nodes):
    return [n for n in nodes if not n.pruned]


def test_flat_curve_fills_the_capacity():
    _, nodes, sizing = build(FLAT, capacity=64)
    assert len(verified(nodes)) == 64 == sizing.size
    assert sizing.mode == "cost"
    # Every node left out would have paid: the capacity cut it, not its cost.
    assert {n.prune_reason for n in nodes if n.pruned} == {"capacity"}


def test_steep_curve_keeps_a_small_tree_of_likely_nodes():
    _, nodes, sizing = build(STEEP, run_rate=1.6)
    v = verified(nodes)
    assert 2 <= len(v) < 64
    # Everything kept is at least as likely as anything left out (the frontier shown pruned).
    kept = min(n.accept_prob for n in v[1:])
    cut = [n.accept_prob for n in nodes if n.pruned]
    assert cut and kept >= max(cut)
    assert {n.prune_reason for n in nodes if n.pruned} == {"cost"}  # the tree was not full


def test_linear_curve_verifies_the_root_alone():
    _, nodes, sizing = build(LINEAR)
    assert len(verified(nodes)) == 1 and sizing.size == 1
    assert "stops here" in sizing.reason


def test_sizing_matches_the_chosen_tree_and_its_stopping_rule():
    for c in (STEEP, FLAT):
        _, nodes, sizing = build(c, capacity=32)
        v = verified(nodes)
        expected = 1 + sum(n.accept_prob for n in v[1:])
        assert sizing.expected_accepted == pytest.approx(expected, abs=1e-4)
        assert sizing.expected_seconds == pytest.approx(c(len(v)))
        assert sizing.run_rate == pytest.approx(1 / c(1))  # a fresh run starts at vanilla's rate
        if sizing.next_gain is not None:
            # The next node earns less than the run's rate on the seconds it adds.
            extra = sizing.next_seconds - sizing.expected_seconds
            assert sizing.next_gain <= sizing.run_rate * extra + 1e-9 or len(v) == 32


def test_a_run_that_makes_more_tokens_per_pass_sets_a_higher_bar():
    # The same step, once early in a run and once after passes that each committed four
    # tokens for the cost of two: nodes must now earn twice vanilla's rate, so the tree is
    # no larger, and each node it kept earns the higher rate on its own.
    d, nodes, sizing = build(STEEP)
    for _ in range(200):
        d.sizer.rate.observe(4, 2.0)
    assert sizing.size > 2
    assert d.sizer.rate.per_second(STEEP(1)) == pytest.approx(2 / STEEP(1), rel=1e-3)
    root, g1, g2 = step_inputs()
    nodes2, sizing2 = d.build(root, g1, g2, capacity=64, g1_len=20, context_len=40)
    assert sizing2.run_rate == pytest.approx(2 / STEEP(1), rel=1e-3)
    assert sizing2.size < sizing.size
    extra = STEEP(sizing2.size) - STEEP(sizing2.size - 1)
    assert min(n.accept_prob for n in verified(nodes2)[1:]) >= sizing2.run_rate * extra - 1e-6


def test_observing_a_step_moves_the_run_rate_towards_it():
    d, _, sizing = build(STEEP)
    before = d.sizer.rate.per_second(1.0)
    d.observe([8, 9, 10, 11, 12])  # four tokens committed for the tree built
    assert d.sizer.rate.per_second(1.0) > before


def test_trie_holds_no_token_twice_under_a_parent():
    _, nodes, _ = build(FLAT)
    seen = set()
    for n in nodes:
        assert (n.parent, n.token) not in seen
        seen.add((n.parent, n.token))
    ids = {n.id for n in nodes}
    assert all(n.parent in ids for n in nodes if n.parent >= 0)
    # Parents come before children among verified nodes.
    v = verified(nodes)
    assert all(v[i].parent < i for i in range(1, len(v)))


def test_observing_the_truth_raises_the_right_kinds_and_lowers_the_wrong():
    stats = AcceptanceStats()
    d, nodes, _ = build(FLAT, stats=stats)
    trie = d.trie
    right_key = trie.key[trie.child[(0, 9)]]
    wrong_key = trie.key[trie.child[(0, 102)]]
    before_right, before_wrong = stats.p(right_key), stats.p(wrong_key)
    for _ in range(5):
        d, _, _ = build(FLAT, stats=stats)
        d.observe([8, 9, 10, 11])  # root 8, then the true tokens 9, 10, 11
    assert stats.p(right_key) > before_right
    assert stats.p(wrong_key) < before_wrong


def test_unlikely_candidates_stay_out_of_the_trie_but_still_teach():
    stats = AcceptanceStats()
    d, nodes, _ = build(STEEP, stats=stats)
    assert d.skipped, "a steep curve should leave low-rank candidates out"
    tok, key = d.skipped[0]
    assert (0, tok) not in d.trie.child
    same_kind = sum(1 for _, k in d.skipped if k == key)
    d.observe([8, tok, 10])  # the skipped candidate was in fact right
    hits, seen = stats.counts[key]
    assert seen == same_kind and hits == 1


def test_a_free_first_step_does_not_let_every_candidate_into_the_trie():
    # CPU with the few-row kernel: two tokens cost what one does, then the curve rises.
    # Only the first node added rides the free step; every other node must pay for a later
    # step, so unlikely candidates stay out (and still teach) instead of filling the trie.
    free_first = curve(lambda n: 0.034 if n <= 2 else 0.034 + 0.0015 * (n - 2))
    d, nodes, sizing = build(free_first)
    assert d.skipped, "candidates below the later steps' floor should stay out"
    assert len(d.trie.token) < 1 + 64
    assert 2 <= sizing.size < 64
    # A measured curve can time two sizes alike (here 3 and 4 tokens); one flat step must
    # not open the trie to everything either.
    flat_step = CostCurve([1, 2, 3, 4, 6, 8, 16, 32, 64], [0.0339, 0.0339, 0.0355, 0.0355, 0.0397, 0.0416,
                                                           0.053, 0.0764, 0.1184], 512, "cpu", "float32")
    d, _, _ = build(flat_step)
    assert d.skipped and len(d.trie.token) < 1 + 64
    # A flat curve still takes every candidate in.
    flat_d, _, _ = build(FLAT)
    assert not flat_d.skipped


def test_a_fixed_curve_never_probes():
    stats = AcceptanceStats()
    for _ in range(3 * 8):
        _, _, sizing = build(LINEAR, stats=stats)
        assert sizing.size == 1 and "probe" not in sizing.reason


def test_evidence_keys_long_matches_apart_from_bare_ngrams():
    from logitspec.sizing.costtree import evidence
    from logitspec.core.trace import QueryRecord

    def q(n, length):
        return QueryRecord("g1", None, (), (), n, 0 if n else None, [1] if n else [], length)

    assert [evidence(q(None, None)), evidence(q(2, 2)), evidence(q(3, None))] == [0, 2, 3]
    assert [evidence(q(3, 5)), evidence(q(3, 8)), evidence(q(3, 15)), evidence(q(3, 16))] == [4, 8, 8, 16]


def test_a_run_whose_g1_drafts_come_true_trusts_them_more():
    # Process-wide chances are shared; the run's own record lifts g1's continuation only.
    stats = AcceptanceStats()
    d, _, _ = build(FLAT, stats=stats)
    for _ in range(6):
        root, g1, g2 = step_inputs()
        d.build(root, g1, g2, capacity=64, g1_len=20, context_len=40)
        d.observe([8, 9, 10, 11, 12, 5, 6])  # g1's chain 9, 10, 11, 12, 5 was right each time
    root, g1, g2 = step_inputs()
    d.build(root, g1, g2, capacity=64, g1_len=20, context_len=40)
    fresh, _, _ = build(FLAT, stats=stats)  # a new run over the same process-wide chances

    key = d.trie.key[d.trie.child[(d.trie.child[(d.trie.child[(0, 9)], 10)], 11)]]
    assert key[0] == "cont"
    assert d.sizer.run_fit.factor(fit_group(key, "g1")) > 1.0
    assert d.sizer.chance(key, "g1") > fresh.sizer.chance(key, "g1") == stats.p(key)
    # g2's candidates other than the true one were predicted unlikely and were wrong: no lift.
    assert all(d.sizer.run_fit.factor(g) <= 1.0 for g in d.sizer.run_fit.record if g[:2] == ("g2", "first"))


def test_the_run_fits_short_and_long_matches_apart():
    """Drafts after bare 1-grams that keep coming true lift those chances, however many
    drafts after long matches fared just as the process expected."""
    fit = RunFit()
    short, long_ = ("cont", 1, 3), ("cont", 16, 3)
    for _ in range(10):
        fit.observe(fit_group(long_, "g1"), 0.9, [True] * 9 + [False])  # as expected
        fit.observe(fit_group(short, "g1"), 0.4, [True, True])  # far above 0.4
    assert fit_group(short, "g1") != fit_group(long_, "g1")
    assert fit.adjust(fit_group(short, "g1"), 0.4) > 0.7
    assert fit.adjust(fit_group(long_, "g1"), 0.9) == pytest.approx(0.9, abs=0.02)
    assert fit_group(("first", 1, 0, 2), "g2") == ("g2", "first", 2)
    assert fit_group(("first", 0, 16, 0), "g1") == ("g1", "first", FIT_EVIDENCE)


def test_a_chain_cut_short_still_learns_from_the_text_that_follows():
    """The trie stops g1's chain where its chance falls under the floor; the tokens the
    chain held past there are tested as the following steps commit the text, up to the
    first miss, so a kind of node cut early still learns how often it would have been right."""
    stats = AcceptanceStats()
    d = RetrievalCostTree(model=None, stats=stats, curve=LINEAR)  # a high floor: the chain is cut early
    pool = NgramPool((1, 2, 3), list(range(100, 130)) + [100, 101, 102])
    g1 = pool.query("g1", pool.tokens[-3:] + [103], 20)
    chain = g1.continuation  # 104, 105, ...: the text copies on
    d.build(103, g1, [], capacity=64, g1_len=20, context_len=len(pool))
    cut = max(d.trie.depth.values())
    deeper = [cont_key(evidence(g1), cut + i) for i in (1, 2, 3, 4)]
    assert cut + 4 <= 8 and len(chain) > cut + 4  # each depth its own key
    assert all(k not in stats.counts for k in deeper)
    d.observe([103, *chain[:cut], chain[cut]])  # all the trie held came true, and the bonus is the next
    d.build(chain[cut], None, [], capacity=64, g1_len=20, context_len=len(pool) + cut + 1)
    # One more right, then the text leaves the chain (and meets it again by chance: not tested).
    d.observe([chain[cut], chain[cut + 1], 999, chain[cut + 3]])
    d.build(chain[cut + 3], None, [], capacity=64, g1_len=20, context_len=len(pool) + cut + 4)
    d.observe([chain[cut + 3], chain[cut + 3], 7])
    assert stats.counts[deeper[0]] == [1.0, 1.0]
    assert stats.counts[deeper[1]] == [1.0, 1.0]
    assert stats.counts[deeper[2]] == [0.0, 1.0]
    assert deeper[3] not in stats.counts and d.tail is None


def test_a_chain_node_the_trie_tested_is_not_tested_again():
    """Where the truth leaves a chain at a node the trie held, that node was tested with
    the step's other nodes; the chain's tail adds nothing."""
    stats = AcceptanceStats()
    d = RetrievalCostTree(model=None, stats=stats, curve=FLAT)  # a free tree: the whole chain is in the trie
    pool = NgramPool((1, 2, 3), list(range(100, 130)) + [100, 101, 102])
    g1 = pool.query("g1", pool.tokens[-3:] + [103], 20)
    chain = g1.continuation
    d.build(103, g1, [], capacity=64, g1_len=20, context_len=len(pool))
    assert (d.trie.child[(d.trie.child[(0, chain[0])], chain[1])], chain[2]) in d.trie.child
    d.observe([103, chain[0], chain[1], 999])
    assert stats.counts[cont_key(evidence(g1), 3)] == [0.0, 1.0]
    assert d.tail is None


def test_on_a_cpu_the_cost_tree_keeps_within_cpu_capacity_and_an_accelerator_within_capacity(monkeypatch):
    import random
    from types import SimpleNamespace

    import torch

    from helpers.tiny_models import greedy_reference, repetitive_prompt, tiny_llama
    from logitspec.core.settings import DecodeSettings
    from logitspec.core.drafter import cost_capacity
    from logitspec.decoders import decode

    s = DecodeSettings(capacity=64, cpu_capacity=4, max_new_tokens=40)
    assert cost_capacity(s, SimpleNamespace(device=torch.device("cuda"))) == 64
    assert cost_capacity(DecodeSettings(capacity=3, cpu_capacity=16), None) == 3  # the smaller bound holds
    # A free tree, whatever this machine's load: only the bound can stop it.
    monkeypatch.setattr(CostSizer, "_curve", lambda self, context_len, capacity: (FLAT, None))
    model = tiny_llama(seed=0)
    prompt = repetitive_prompt(random.Random(3), 80)
    sizes = {}
    for bound in (4, 64):
        steps = list(decode(model, prompt, "logitspec", DecodeSettings(capacity=64, cpu_capacity=bound,
                                                                       max_new_tokens=40)))
        assert [t for st in steps for t in st.tokens] == greedy_reference(model, prompt, 40)
        sizes[bound] = max(st.sizing.size for st in steps if st.sizing is not None)
        full = [st.sizing.reason for st in steps if st.sizing is not None and "at its capacity" in st.sizing.reason]
        assert full and all(f"at its capacity of {bound}" in r for r in full)  # the bound it was built with
    assert sizes[4] == 4 < sizes[64]  # the bound, not the text, kept the trees small
