"""The cost-aware tree's choices on synthetic cost curves, and how it learns."""
from __future__ import annotations

import pytest

from logitspec.costmodel import AcceptanceStats, CostAwareDrafter, CostCurve
from logitspec.retrieval import NgramPool
from logitspec.trace import Candidate


def curve(fn, max_n: int = 256) -> CostCurve:
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    return CostCurve(sizes, [fn(n) for n in sizes], 256, "cpu", "float32")


FLAT = curve(lambda n: 0.010)  # GPU-like: a tree is nearly free
STEEP = curve(lambda n: 0.058 + 0.002 * n)  # this machine's shape: ~3x at 64 tokens
LINEAR = curve(lambda n: 0.058 * n)  # every token costs a full pass


def step_inputs(k: int = 64):
    """A context with repeats so g1 and g2 find continuations, plus k candidates."""
    text = [5, 6, 7, 8, 9, 10, 11, 12] * 4 + [5, 6, 7]
    pool = NgramPool((1, 2, 3), text)
    root = 8
    tail = pool.tokens[-3:] + [root]
    g1 = pool.query("g1", tail, 20)
    cands = [Candidate(rank=r, token=100 + r, logit=-r, prob=0.5 / (r + 1)) for r in range(1, k + 1)]
    cands[0] = Candidate(rank=1, token=9, logit=0.0, prob=0.4)  # the true next-next token
    g2 = [(c, pool.query("g2", tail + [c.token], 8, candidate_rank=c.rank)) for c in cands]
    return root, g1, g2


def build(c: CostCurve, capacity: int = 64, stats: AcceptanceStats | None = None):
    d = CostAwareDrafter(model=None, stats=stats or AcceptanceStats(), curve=c)
    root, g1, g2 = step_inputs()
    nodes, sizing = d.build(root, g1, g2, capacity=capacity, g1_len=20, context_len=40)
    return d, nodes, sizing


def verified(nodes):
    return [n for n in nodes if not n.pruned]


def test_flat_curve_fills_the_capacity():
    _, nodes, sizing = build(FLAT, capacity=64)
    assert len(verified(nodes)) == 64 == sizing.size
    assert sizing.mode == "cost"


def test_steep_curve_keeps_a_small_tree_of_likely_nodes():
    _, nodes, sizing = build(STEEP)
    v = verified(nodes)
    assert 2 <= len(v) < 64
    # Everything kept is at least as likely as anything left out (the frontier shown pruned).
    kept = min(n.accept_prob for n in v[1:])
    cut = [n.accept_prob for n in nodes if n.pruned]
    assert cut and kept >= max(cut)


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
        if sizing.next_gain is not None:
            rate_now = sizing.expected_accepted / sizing.expected_seconds
            rate_next = (sizing.expected_accepted + sizing.next_gain) / sizing.next_seconds
            assert rate_next <= rate_now + 1e-9 or len(v) == 32


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
    trie = d._trie
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
    assert d._skipped, "a steep curve should leave low-rank candidates out"
    tok, key = d._skipped[0]
    assert (0, tok) not in d._trie.child
    same_kind = sum(1 for _, k in d._skipped if k == key)
    d.observe([8, tok, 10])  # the skipped candidate was in fact right
    hits, seen = stats.counts[key]
    assert seen == same_kind and hits == 1



def test_a_free_first_step_does_not_let_every_candidate_into_the_trie():
    # CPU with the few-row kernel: two tokens cost what one does, then the curve rises.
    # Only the first node added rides the free step; every other node must pay for a later
    # step, so unlikely candidates stay out (and still teach) instead of filling the trie.
    free_first = curve(lambda n: 0.034 if n <= 2 else 0.034 + 0.0015 * (n - 2))
    d, nodes, sizing = build(free_first)
    assert d._skipped, "candidates below the later steps' floor should stay out"
    assert len(d._trie.token) < 1 + 64
    assert 2 <= sizing.size < 64
    # A measured curve can time two sizes alike (here 3 and 4 tokens); one flat step must
    # not open the trie to everything either.
    flat_step = CostCurve([1, 2, 3, 4, 6, 8, 16, 32, 64], [0.0339, 0.0339, 0.0355, 0.0355, 0.0397, 0.0416,
                                                           0.053, 0.0764, 0.1184], 512, "cpu", "float32")
    d, _, _ = build(flat_step)
    assert d._skipped and len(d._trie.token) < 1 + 64
    # A flat curve still takes every candidate in.
    flat_d, _, _ = build(FLAT)
    assert not flat_d._skipped

# ----- the curve checked against decoding ----------------------------------------------------

class FakeModel:
    """Stands in for a model as a cache key; cost_curve_for's measuring is replaced."""

    class config:
        max_position_embeddings = 100_000


def curve_of(seconds: list[float]) -> CostCurve:
    return CostCurve([1, 2, 4], list(seconds), 512, "cpu", "float32")


@pytest.fixture
def measured(monkeypatch):
    """cost_curve_for with measurements taken from a queue instead of the model."""
    from logitspec import costmodel

    queue: list[list[float]] = []
    monkeypatch.setattr(costmodel, "measure_cost_curve", lambda model, context_len, max_n: curve_of(queue.pop(0)))
    return queue


def test_a_curve_that_overstates_trees_is_remeasured_keeping_each_size_fastest(measured):
    from logitspec.costmodel import CHECK_MIN, cost_curve_for, observe_forward

    model = FakeModel()
    measured.append([1.0, 5.0, 9.0])  # measured while other work held the cores: 2 tokens look 5x dearer
    first = cost_curve_for(model, 100, 4)
    flags = [observe_forward(model, 100, 1, 1.0) for _ in range(CHECK_MIN)]
    flags += [observe_forward(model, 100, 2, 1.1) for _ in range(CHECK_MIN)]
    assert flags[-1] and not any(flags[:-1])  # stale once both sizes have enough steps
    measured.append([2.0, 1.2, 12.0])  # the second measurement: slower for 1 and 4, right for 2
    spent = []
    second = cost_curve_for(model, 100, 4, on_measure=spent.append)
    assert second is not first and second.measurements == 2 and len(spent) == 1
    assert second.seconds == [1.0, 1.2, 9.0]
    assert cost_curve_for(model, 100, 4) is second  # fresh again: no third measurement


def test_a_curve_that_matches_decoding_is_kept(measured):
    from logitspec.costmodel import CHECK_MIN, cost_curve_for, observe_forward

    model = FakeModel()
    measured.append([1.0, 1.5, 2.0])
    first = cost_curve_for(model, 100, 4)
    # A busier machine slows every size alike (ratio 1.3), with noise: the shape still holds.
    for i in range(3 * CHECK_MIN):
        noise = 1.0 + 0.04 * ((i % 5) - 2) / 2
        assert not observe_forward(model, 100, 1, 1.3 * noise)
        assert not observe_forward(model, 100, 2, 1.5 * 1.3 / noise)
        assert not observe_forward(model, 100, 4, 2.0 * 1.3)
    assert cost_curve_for(model, 100, 4) is first


def test_remeasuring_stops_after_a_few_measurements(measured):
    from logitspec.costmodel import CHECK_MAX_MEASUREMENTS, CHECK_MIN, cost_curve_for, observe_forward

    model = FakeModel()
    measured.extend([[1.0, 5.0, 9.0]] * CHECK_MAX_MEASUREMENTS)
    for _ in range(CHECK_MAX_MEASUREMENTS):
        curve = cost_curve_for(model, 100, 4)
        for _ in range(CHECK_MIN):
            observe_forward(model, 100, 1, 1.0)
            observe_forward(model, 100, 2, 1.1)
    assert curve.measurements == CHECK_MAX_MEASUREMENTS and not measured
    assert not observe_forward(model, 100, 2, 1.1)  # no longer checked
    assert cost_curve_for(model, 100, 4) is curve


def test_decoding_reports_each_forward_pass_to_the_curve_check(monkeypatch, one_thread):
    from logitspec import costmodel
    from logitspec.decoders import DecodeSettings, decode
    from tiny_models import tiny_llama

    monkeypatch.setattr(costmodel, "CHECK_TOLERANCE", 1e9)  # never stale: count every report
    model = tiny_llama(seed=3)
    prompt = [5, 17, 99, 3, 5, 17, 42, 8, 1, 64, 5, 17] * 3
    steps = list(decode(model, prompt, "logitspec", DecodeSettings(max_new_tokens=20, tree="cost")))
    seen = costmodel._CHECKS[model][costmodel._bucket(len(prompt))]
    sizes = [sum(not n.pruned for n in s.tree) for s in steps if s.forward]
    assert {n: len(v) for n, v in seen.items()} == {n: sizes.count(n) for n in set(sizes)}
