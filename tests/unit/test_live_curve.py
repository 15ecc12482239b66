"""The cost curve under a changing load: passes' times correct c(n), probes re-teach it, and the
cost tree's sizes follow."""
from __future__ import annotations

import pytest

from helpers.retrieval_steps import step_inputs
from logitspec.sizing.curve import CostCurve
from logitspec.sizing.costtree import AcceptanceStats
from logitspec.sizing.retrievaltree import RetrievalCostTree


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
