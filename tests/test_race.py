"""The race interleaves lanes step by step and keeps each lane's own measured clock.

Lanes here replay real traces recorded on the bundled model, so the steps and their
measured seconds are real; the model run itself is covered by the app's client test.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from logitspec.race import (Lane, RaceStopped, interleave, lane_order, lane_stats, replay_lanes,
                            result_of, speedup)
from logitspec.trace import RunTrace

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def summ() -> RunTrace:
    return RunTrace.load(FIX / "summarization-241.json")


@pytest.fixture(scope="module")
def writing() -> RunTrace:
    return RunTrace.load(FIX / "writing-81.json")


def _as(trace: RunTrace, method: str) -> RunTrace:
    t = RunTrace.from_dict(trace.to_dict())
    t.method = method
    return t


def test_lanes_alternate_one_step_each_until_the_shorter_ends(summ, writing):
    lanes = replay_lanes({"vanilla": _as(writing, "vanilla"), "logitspec": summ})
    order = [u.lane for u in interleave(lanes)]
    n_v, n_l = len(writing.steps), len(summ.steps)
    assert order.count("vanilla") == n_v and order.count("logitspec") == n_l
    shared = 2 * min(n_v, n_l)
    assert order[:shared] == ["vanilla", "logitspec"] * min(n_v, n_l)
    longer = "vanilla" if n_v > n_l else "logitspec"
    assert set(order[shared:]) == {longer}


def test_each_lane_clock_counts_only_its_own_steps(summ, writing):
    lanes = replay_lanes({"vanilla": _as(writing, "vanilla"), "logitspec": summ})
    seen = {"vanilla": 0, "logitspec": 0}
    src = {"vanilla": writing, "logitspec": summ}
    for u in interleave(lanes):
        seen[u.lane] += 1
        for name, st in u.stats.items():
            steps = src[name].steps[: seen[name]]
            assert st.seconds == pytest.approx(src[name].prefill_seconds + sum(s.seconds for s in steps))
            assert st.tokens == sum(len(s.tokens) for s in steps)
            assert st.forward_steps == sum(1 for s in steps if s.forward)
        assert u.step == src[u.lane].steps[seen[u.lane] - 1]
    final = {ln.name: lane_stats(ln.name, ln.trace) for ln in lanes}
    assert final["logitspec"].tokens == len(summ.tokens)
    assert final["logitspec"].seconds == pytest.approx(summ.seconds)


def test_speedup_is_the_ratio_of_measured_tokens_per_second(summ, writing):
    res = result_of({"vanilla": _as(writing, "vanilla"), "logitspec": summ})
    expect = (len(summ.tokens) / summ.seconds) / (len(writing.tokens) / writing.seconds)
    assert res.speedups["logitspec"] == pytest.approx(expect)
    assert res.speedups["vanilla"] == pytest.approx(1.0)
    assert res.stats["logitspec"].tokens_per_forward == pytest.approx(summ.mean_accepted_tokens)
    # Different outputs are not lossless; the same output is.
    assert res.lossless is False
    assert result_of({"vanilla": _as(summ, "vanilla"), "logitspec": summ}).lossless is True
    assert speedup(res.stats["logitspec"], lane_stats("x", RunTrace("vanilla", "m", "", [], {}))) == 0.0


def test_stop_takes_effect_before_the_next_step(summ):
    lanes = replay_lanes({"vanilla": _as(summ, "vanilla"), "logitspec": summ})
    taken = []
    stop = {"now": False}
    with pytest.raises(RaceStopped) as e:
        for u in interleave(lanes, should_stop=lambda: stop["now"]):
            taken.append(u.lane)
            if len(taken) == 3:
                stop["now"] = True
    assert e.value.reason == "stopped"
    assert len(taken) == 3
    assert sum(len(ln.trace.steps) for ln in lanes) == 3


def test_deadline_stops_the_race(summ):
    lanes = replay_lanes({"logitspec": summ})
    with pytest.raises(RaceStopped) as e:
        list(interleave(lanes, deadline=time.monotonic() - 1))
    assert e.value.reason == "time limit"
    assert lanes[0].trace.steps == []


def test_lane_order_puts_vanilla_first_and_drops_unknown():
    assert lane_order(["logitspec", "pld", "vanilla", "pld"]) == ["vanilla", "pld", "logitspec"]
    assert lane_order(["logitspec", "nonsense"]) == ["logitspec"]


def test_an_empty_lane_finishes_at_once(summ):
    lanes = [Lane("vanilla", RunTrace("vanilla", "m", "", [], {}), iter([]))] + replay_lanes({"logitspec": summ})
    order = [u.lane for u in interleave(lanes)]
    assert order == ["logitspec"] * len(summ.steps)
    assert lanes[0].done and lanes[1].done
