"""The cost-aware tree's choices on synthetic cost curves, and how it learns."""
from __future__ import annotations

import pytest

from logitspec.sizing.curve import CostCurve
from logitspec.sizing.costtree import FIT_EVIDENCE, AcceptanceStats, CostSizer, RunFit, RunRate, evidence, fit_group
from logitspec.sizing.retrievaltree import RetrievalCostTree, cont_key
from logitspec.core.retrieval import NgramPool
from logitspec.core.trace import Candidate


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

# ----- the curve under a changing load --------------------------------------------------------

class FakeModel:
    """Stands in for a model as a cache key; cost_curve_for's measuring is replaced."""

    class config:
        max_position_embeddings = 100_000


SIZES = [1, 2, 4, 8, 16, 32, 64]
# Measured at start-up while other work held the cores: a 2-token pass looked 2.1x a 1-token
# one (288.6 against 135.5 ms in the step view of the failed races), so trees stopped at one.
LOADED = CostCurve(SIZES, [0.1355 * (1 + 1.13 * (n - 1)) for n in SIZES], 512, "cpu", "float32")


def cheap_trees(n: int) -> float:
    """What passes really cost on the idle machine: a tree token is a small share of a pass."""
    return 0.058 + 0.002 * n


@pytest.fixture
def no_measuring(monkeypatch, curve_corrections):
    """cost_curve_for must use the installed curve, corrected by the passes the test feeds it;
    measuring here would be a failure."""
    from logitspec.sizing import costcurve

    def refuse(*a, **k):
        raise AssertionError("measured c(n) in front of decoding")

    monkeypatch.setattr(costcurve, "measure_cost_curve", refuse)


def run_steps(model, steps: int, true_cost, start: float = 0.0, load: float = 1.0):
    """Draft on step_inputs with the model's live curve; each pass 'takes' true_cost(n) * load
    seconds, 0.1 s apart. Returns (size, probed) per step."""
    from logitspec.sizing.costcurve import observe_forward

    root, g1, g2 = step_inputs()
    out = []
    for i in range(steps):
        d = RetrievalCostTree(model=model, stats=AcceptanceStats())
        _, sizing = d.build(root, g1, g2, capacity=64, g1_len=20, context_len=40)
        observe_forward(model, 40, sizing.size, true_cost(sizing.size) * load, at=start + 0.1 * i)
        out.append((sizing.size, "probe" in sizing.reason))
    return out


def test_trees_of_one_token_from_a_loaded_curve_grow_back_after_probes(no_measuring):
    from logitspec.sizing.costcurve import PROBE_EVERY, install_curve

    model = FakeModel()
    install_curve(model, 512, LOADED)
    steps = run_steps(model, 120, cheap_trees)
    assert steps[0] == (1, False)  # the loaded curve keeps trees at one token
    probes = [i for i, (_, probed) in enumerate(steps) if probed]
    assert probes and probes[0] >= PROBE_EVERY
    # Real passes said trees are cheap next to one token: the model now chooses them itself.
    tail = steps[-20:]
    assert all(size > 2 and not probed for size, probed in tail), tail


def test_the_load_level_tracks_c1_and_a_uniform_slowdown_keeps_the_shape(no_measuring):
    from logitspec.sizing.costcurve import cost_curve_for, install_curve, observe_forward

    model = FakeModel()
    idle = CostCurve(SIZES, [cheap_trees(n) for n in SIZES], 512, "cpu", "float32")
    install_curve(model, 512, idle)
    for i in range(40):  # a second process now makes every pass 2.5x slower
        n = (1, 4)[i % 2]
        observe_forward(model, 40, n, 2.5 * cheap_trees(n), at=0.1 * i)
    c = cost_curve_for(model, 40, 64)
    assert c(1) == pytest.approx(2.5 * cheap_trees(1), rel=0.02)
    assert c(4) / c(1) == pytest.approx(idle(4) / idle(1), rel=0.02)
    for i in range(40):  # the load goes away
        observe_forward(model, 40, 1, cheap_trees(1), at=100 + 0.1 * i)
    assert cost_curve_for(model, 40, 64)(1) == pytest.approx(cheap_trees(1), rel=0.02)


def test_only_passes_close_in_time_are_paired(no_measuring):
    from logitspec.sizing.costcurve import PAIR_WINDOW, install_curve, live_cost, observe_forward

    model = FakeModel()
    install_curve(model, 512, LOADED)
    observe_forward(model, 40, 1, 0.30, at=0.0)  # a burst of load
    observe_forward(model, 40, 4, 0.066, at=PAIR_WINDOW + 1)  # long after: not comparable
    assert live_cost(model, 512).observed == {}
    observe_forward(model, 40, 1, 0.060, at=PAIR_WINDOW + 1.1)
    assert live_cost(model, 512).observed[4] == [pytest.approx(0.066 / 0.060)]


def test_steady_curves_take_no_correction_from_the_passes_times(no_measuring, monkeypatch):
    from logitspec.sizing.costcurve import install_curve, live_cost, observe_forward

    model = FakeModel()
    install_curve(model, 512, LOADED)
    live = live_cost(model, 512)
    before = [live.curve()(n) for n in SIZES]

    def passes():  # half as slow again as the curve says
        for i in range(20):
            n = (1, 4)[i % 2]
            observe_forward(model, 40, n, 1.5 * LOADED(n), at=0.1 * i)

    monkeypatch.setenv("LOGITSPEC_STEADY_CURVES", "1")
    passes()
    assert live.observed == {} and live.passes == {} and [live.curve()(n) for n in SIZES] == before
    monkeypatch.delenv("LOGITSPEC_STEADY_CURVES")
    passes()
    assert live.observed and live.curve()(1) > before[0]  # the same passes, now heard


def test_passes_on_another_thread_count_reset_the_level_and_are_not_paired(no_measuring):
    from logitspec.sizing.costcurve import install_curve, live_cost, observe_forward

    model = FakeModel()
    install_curve(model, 512, CostCurve(SIZES, [cheap_trees(n) for n in SIZES], 512, "cpu", "float32"))
    for i in range(10):  # two threads, a busy core: every pass is slow
        observe_forward(model, 40, 1, 0.45, at=0.1 * i, threads=2)
    observe_forward(model, 40, 4, cheap_trees(4), at=1.05, threads=1)  # the tuner moved to one thread
    live = live_cost(model, 512)
    assert live.observed == {}  # 0.45 s on two threads against 66 ms on one is no shape
    assert live.curve()(4) == pytest.approx(cheap_trees(4), rel=1e-6)  # the level is one thread's at once
    observe_forward(model, 40, 1, cheap_trees(1), at=1.1, threads=1)
    assert live.observed[4] == [pytest.approx(cheap_trees(4) / cheap_trees(1))]


def test_probing_happens_only_now_and_then_and_never_when_trees_grow(no_measuring):
    from logitspec.sizing.costcurve import PROBE_EVERY, install_curve

    linear = CostCurve(SIZES, [0.058 * n for n in SIZES], 512, "cpu", "float32")
    model = FakeModel()
    install_curve(model, 512, linear)
    steps = run_steps(model, 200, linear)  # the curve is right: every token costs a pass
    probes = [i for i, (_, probed) in enumerate(steps) if probed]
    assert 2 <= len(probes) <= 200 // PROBE_EVERY // 2
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert all(g > PROBE_EVERY for g in gaps) and gaps == sorted(gaps)  # backing off
    # A right flat curve (a GPU's): trees stay at capacity; lone-root probes find nothing new
    # and back off.
    flat = CostCurve(SIZES, [0.010] * len(SIZES), 512, "cpu", "float32")
    model = FakeModel()
    install_curve(model, 512, flat)
    steps = run_steps(model, 120, lambda n: 0.010)
    probes = [i for i, (_, probed) in enumerate(steps) if probed]
    assert len(probes) <= 120 // PROBE_EVERY // 2
    assert all(size == 64 for size, probed in steps if not probed)


def test_trees_held_large_by_a_shape_too_cheap_for_them_shrink_after_probes(no_measuring):
    # Measured under load the curve came out flat to 16 tokens: trees of 16 looked as cheap
    # as one token, and trees that stay large never showed a one-token pass to correct it.
    from logitspec.sizing.costcurve import install_curve

    model = FakeModel()
    install_curve(model, 512, CostCurve(SIZES, [0.28, 0.28, 0.28, 0.28, 0.28, 0.5, 1.0], 512, "cpu", "float32"))
    steps = run_steps(model, 150, lambda n: 0.058 * n)  # every token really costs a pass
    assert steps[0][0] >= 8  # the wrong shape sends trees large
    probes = [i for i, (size, probed) in enumerate(steps) if probed]
    assert probes and steps[probes[0]][0] == 1  # the probe verified a lone root
    tail = [size for size, probed in steps[-40:] if not probed]
    assert max(tail) <= 4, tail  # a quarter of where the wrong shape held them


def test_a_fixed_curve_never_probes():
    stats = AcceptanceStats()
    for _ in range(3 * 8):
        _, _, sizing = build(LINEAR, stats=stats)
        assert sizing.size == 1 and "probe" not in sizing.reason


def test_decoding_reports_each_forward_pass_to_the_live_curve(one_thread, curve_corrections, monkeypatch):
    from logitspec.sizing import costcurve
    from logitspec.core.settings import DecodeSettings
    from logitspec.decoders import decode
    from helpers.tiny_models import tiny_llama

    # The stall guard (tested on its own below) would hold out a pass slowed by other work
    # on the machine; this test is about every pass being reported.
    monkeypatch.setattr(costcurve, "STALL", float("inf"))
    model = tiny_llama(seed=3)
    prompt = [5, 17, 99, 3, 5, 17, 42, 8, 1, 64, 5, 17] * 3
    steps = list(decode(model, prompt, "logitspec", DecodeSettings(max_new_tokens=20, tree="cost")))
    live = costcurve.live_cost(model, costcurve._bucket(len(prompt)))
    sizes = [sum(not n.pruned for n in s.tree) for s in steps if s.forward]
    assert live.passes == {n: sizes.count(n) for n in set(sizes)}


# The shape a curve measured while a second process spun took in a bench run: one to three
# tokens alike, then 2.5 times as dear from four. Trees then settled at three and never probed.
STEPPED_SIZES = [1, 2, 3, 4, 6, 8, 16, 32, 64]
STEPPED = CostCurve(STEPPED_SIZES, [0.043, 0.043, 0.043, 0.106, 0.106, 0.106, 0.145, 0.262, 0.377],
                    512, "cpu", "float32")


def test_trees_held_at_three_tokens_by_a_wrong_shape_grow_back_after_probes(no_measuring):
    from logitspec.sizing.costcurve import install_curve

    model = FakeModel()
    install_curve(model, 512, STEPPED)
    steps = run_steps(model, 160, cheap_trees)
    assert steps[0] == (3, False)  # the stepped curve stops the tree before its cliff
    assert any(probed for _, probed in steps)
    tail = steps[-20:]  # the trees choose more than three tokens themselves; probes are rare
    assert all(size > 3 for size, probed in tail if not probed) and sum(p for _, p in tail) <= 1, tail


def test_a_lone_stall_leaves_the_shape_and_two_in_a_row_are_a_new_load(no_measuring):
    from logitspec.sizing.costcurve import STALL, install_curve, live_cost, observe_forward

    model = FakeModel()
    install_curve(model, 512, CostCurve(SIZES, [cheap_trees(n) for n in SIZES], 512, "cpu", "float32"))
    live = live_cost(model, 512)
    at = 0.0
    for i in range(20):  # the idle machine: passes cost what the curve says
        at += 0.1
        observe_forward(model, 40, (1, 5)[i % 2], cheap_trees((1, 5)[i % 2]), at=at)
    shape, level, seen = live.ratio(5), live.level, {n: list(r) for n, r in live.observed.items()}
    # A collection inside one 5-token pass, beside the 1-token pass just before it.
    observe_forward(model, 40, 5, 2 * STALL * cheap_trees(5), at=at + 0.1)
    assert live.observed == seen and live.ratio(5) == shape and live.level == level
    observe_forward(model, 40, 1, cheap_trees(1), at=at + 0.2)  # the next pass is ordinary again
    assert live.level == pytest.approx(cheap_trees(1), rel=1e-6)
    # Another process starts: every pass is now four times as slow, the first is held out as a
    # stall, the second sets the new level and pairs with nothing from before the change.
    observe_forward(model, 40, 5, 4 * cheap_trees(5), at=at + 0.3)
    observe_forward(model, 40, 1, 4 * cheap_trees(1), at=at + 0.4)
    assert live.level == pytest.approx(4 * cheap_trees(1), rel=1e-6)
    assert live.ratio(5) == pytest.approx(shape, rel=1e-6)
    observe_forward(model, 40, 5, 4 * cheap_trees(5), at=at + 0.5)
    assert live.ratio(5) == pytest.approx(cheap_trees(5) / cheap_trees(1), rel=0.02)


def test_a_size_priced_too_dear_by_slow_passes_is_probed_and_the_trees_grow_past_it(no_measuring):
    # Passes of five tokens that ran slow, each under the stall line (bursts of other work),
    # price five tokens and up at several times what they cost, and trees settle at four.
    # Probing only other sizes never showed a five-token pass again, so the price stayed.
    from logitspec.sizing.costcurve import install_curve, live_cost, observe_forward

    model = FakeModel()
    sizes = list(range(1, 17)) + [32, 64]
    install_curve(model, 512, CostCurve(sizes, [cheap_trees(n) for n in sizes], 512, "cpu", "float32"))
    live = live_cost(model, 512)
    for i in range(12):
        for j, n in enumerate((2, 3, 4, 5)):
            observe_forward(model, 40, 1, cheap_trees(1), at=i + 0.2 * j)
            observe_forward(model, 40, n, cheap_trees(n) * (2.4 if n == 5 else 1.0), at=i + 0.2 * j + 0.1)
    assert live.ratio(4) < 1.2 and live.ratio(5) > 2 * cheap_trees(5) / cheap_trees(1)
    steps = run_steps(model, 200, cheap_trees, start=10.0)
    assert steps[0][0] <= 4  # the dear price holds the trees below five
    assert any(size == 5 and probed for size, probed in steps)
    tail = steps[-20:]
    assert all(size > 4 for size, probed in tail if not probed), tail


def test_evidence_keys_long_matches_apart_from_bare_ngrams():
    from logitspec.sizing.costtree import evidence
    from logitspec.core.trace import QueryRecord

    def q(n, length):
        return QueryRecord("g1", None, (), (), n, 0 if n else None, [1] if n else [], length)

    assert [evidence(q(None, None)), evidence(q(2, 2)), evidence(q(3, None))] == [0, 2, 3]
    assert [evidence(q(3, 5)), evidence(q(3, 8)), evidence(q(3, 15)), evidence(q(3, 16))] == [4, 8, 8, 16]


def test_a_new_base_reshapes_the_curve_and_keeps_the_level(no_measuring):
    from logitspec.sizing.costcurve import cost_curve_for, install_curve, observe_forward

    model = FakeModel()
    install_curve(model, 512, CostCurve(SIZES, [cheap_trees(n) for n in SIZES], 512, "cpu", "float32"))
    for i in range(20):
        observe_forward(model, 40, 1, 0.05, at=0.1 * i)
    before = cost_curve_for(model, 40, 64)
    steep = CostCurve(SIZES, [0.03 * n for n in SIZES], 512, "cpu", "float32")
    install_curve(model, 512, steep)  # a background measurement finished
    after = cost_curve_for(model, 40, 64)
    assert after(1) == pytest.approx(before(1)) == pytest.approx(0.05, rel=0.02)
    assert after(8) / after(1) == pytest.approx(8.0) != pytest.approx(before(8) / before(1))


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


def test_a_size_seen_dear_a_few_times_does_not_price_every_larger_size(no_measuring):
    """The shape is a fit of the real ratios weighted by how often each size was seen: a
    few slow passes of one size pool with its well-seen neighbours instead of lifting
    every larger size to their price (as a running maximum did)."""
    from logitspec.sizing.costcurve import install_curve, live_cost, observe_forward

    model = FakeModel()
    sizes = list(range(1, 17)) + [32, 64]
    install_curve(model, 512, CostCurve(sizes, [cheap_trees(n) for n in sizes], 512, "cpu", "float32"))
    live = live_cost(model, 512)
    at = 0.0
    for i in range(12):
        for n in (9, 11, 12):  # seen often, at what they cost
            observe_forward(model, 40, 1, cheap_trees(1), at=at)
            observe_forward(model, 40, n, cheap_trees(n), at=at + 0.05)
            at += 0.1
        if i < 2:  # two passes of ten tokens slowed by 30% (under the stall line)
            observe_forward(model, 40, 1, cheap_trees(1), at=at)
            observe_forward(model, 40, 10, 1.3 * cheap_trees(10), at=at + 0.05)
            at += 0.1
    true = {n: cheap_trees(n) / cheap_trees(1) for n in (9, 10, 11, 12, 16)}
    assert live.ratio(12) == pytest.approx(true[12], rel=0.03)
    assert live.ratio(16) < 1.03 * true[16]
    assert live.ratio(10) < 1.1 * true[10]  # pooled with 11, not held at 1.3 times
    ratios = [live.ratio(n) for n in range(1, 65)]
    assert ratios == sorted(ratios)


def test_isotonic_fit_pools_violators_by_weight_and_keeps_fixed_points():
    from logitspec.sizing.costcurve import isotonic

    inf = float("inf")
    assert isotonic([1.0, 1.2, 1.1, 1.3], [1, 1, 1, 1]) == pytest.approx([1.0, 1.15, 1.15, 1.3])
    assert isotonic([1.0, 1.5, 1.2], [1, 1, 3]) == pytest.approx([1.0, 1.275, 1.275])
    assert isotonic([1.0, 0.9, 1.2], [inf, 3, 3]) == pytest.approx([1.0, 1.0, 1.2])
    assert isotonic([1.0, 2.0, 3.0], [1, 1, 1]) == [1.0, 2.0, 3.0]


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
