"""The race interleaves lanes step by step and keeps each lane's own measured clock.

Lanes here replay real traces recorded on the bundled model, so the steps and their
measured seconds are real; the model run itself is covered by the app's client test.
"""
from __future__ import annotations

import dataclasses
import time

import pytest

from helpers.paths import FIXTURES
from helpers.race import replay_lanes
from serve.race import Lane, RaceStopped, interleave
from logitspec.analysis.race import lane_order, lane_stats, result_of, seconds_to_reach, speedup
from logitspec.core.trace import RunTrace


@pytest.fixture(scope="module")
def summ() -> RunTrace:
    return RunTrace.load(FIXTURES / "summarization-241.json.gz")


@pytest.fixture(scope="module")
def writing() -> RunTrace:
    return RunTrace.load(FIXTURES / "writing-81.json.gz")


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
        for name, st in ((ln.name, lane_stats(ln.name, ln.trace)) for ln in lanes):
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


def _cut(trace: RunTrace, method: str, steps: int) -> RunTrace:
    """The trace as a lane stopped after its first `steps` steps."""
    t = _as(trace, method)
    t.steps = t.steps[:steps]
    return t


def test_a_stopped_race_compares_equal_token_counts_and_claims_no_difference(summ):
    # Same output, stopped at different points: vanilla after 12 steps, logitspec after 20.
    van, ls = _cut(summ, "vanilla", 12), _cut(summ, "logitspec", 20)
    assert len(van.tokens) < len(ls.tokens)
    res = result_of({"vanilla": van, "logitspec": ls})
    assert res.complete is False
    assert res.lossless is True and res.first_difference == {}
    n = len(van.tokens)
    assert res.compared_tokens == n
    # Speed over the same n tokens: each lane's compute time until it had n of them.
    expect = seconds_to_reach(van, n) / seconds_to_reach(ls, n)
    assert res.speedups["logitspec"] == pytest.approx(expect)
    assert seconds_to_reach(ls, n) < ls.seconds  # the extra steps past n are not counted


def test_seconds_to_reach_counts_an_overshooting_step_whole(summ):
    multi = next(i for i, s in enumerate(summ.steps) if len(s.tokens) > 1)
    before = sum(len(s.tokens) for s in summ.steps[:multi])
    whole = summ.prefill_seconds + sum(s.seconds for s in summ.steps[: multi + 1])
    assert seconds_to_reach(summ, before + 1) == pytest.approx(whole)
    assert seconds_to_reach(summ, len(summ.tokens) + 1) is None


def test_a_real_difference_inside_the_compared_tokens_is_reported(summ):
    van = _cut(summ, "vanilla", 6)
    ls = _cut(summ, "logitspec", 9)
    ls.steps[2] = dataclasses.replace(ls.steps[2], tokens=[t + 1 for t in ls.steps[2].tokens])
    res = result_of({"vanilla": van, "logitspec": ls})
    assert res.lossless is False
    assert res.first_difference["logitspec"] == sum(len(s.tokens) for s in summ.steps[:2])


def test_finished_lanes_of_unequal_length_differ(summ):
    short = _as(summ, "logitspec")
    short.steps = short.steps[:-1]
    short.steps[-1] = dataclasses.replace(short.steps[-1], bonus=None)  # it ended there
    res = result_of({"vanilla": _as(summ, "vanilla"), "logitspec": short})
    assert res.complete and not res.lossless


def test_the_stopped_verdict_says_so_and_claims_nothing_false(summ):
    from visual.verdict import verdict_text

    res = result_of({"vanilla": _cut(summ, "vanilla", 12), "logitspec": _cut(summ, "logitspec", 20)})
    text = verdict_text(res, "stopped")
    assert text.startswith(f"Stopped after {len(_cut(summ, 'logitspec', 20).tokens)} tokens")
    assert f"first {res.compared_tokens} tokens" in text
    assert "DIFFERENT" not in text and "identical" in text
    done = result_of({"vanilla": _as(summ, "vanilla"), "logitspec": summ})
    assert verdict_text(done).startswith("LogitSpec") and "Stopped" not in verdict_text(done)
    empty = result_of({"vanilla": _cut(summ, "vanilla", 0), "logitspec": _cut(summ, "logitspec", 3)})
    assert "nothing to compare" in verdict_text(empty, "stopped")


def test_a_slower_logitspec_is_explained_in_one_sentence(summ):
    from logitspec.core.trace import TreeSizing
    from visual.verdict import shortfall

    van = _as(summ, "vanilla")
    ls = _as(summ, "logitspec")
    one = TreeSizing("cost", 1, 1.0, 0.05, 0.1, 0.2, "the next node would cost more than it adds")
    # One-node trees, one token a step, each step slower than vanilla's: the busy-machine case.
    ls.steps = [dataclasses.replace(s, tree=s.tree[:1], tokens=[t], accepted_path=[0], sizing=one,
                                    forward_seconds=s.forward_seconds * 1.5)
                for s, t in zip(summ.steps, summ.tokens)]
    res = result_of({"vanilla": van, "logitspec": ls})
    assert res.speedups["logitspec"] < 1.0
    why = shortfall(res)
    assert "one token" in why and why.count(".") == 1
    faster = result_of({"vanilla": _as(ls, "vanilla"), "logitspec": summ})
    assert faster.speedups["logitspec"] > 1.0 and shortfall(faster) == ""


def test_drafts_rarely_right_are_blamed_on_a_repetition_penalty_where_one_ran(summ):
    from visual.verdict import shortfall

    van = _as(summ, "vanilla")
    ls = _as(summ, "logitspec")
    # One token a pass from full trees, each pass dearer than vanilla's.
    ls.steps = [dataclasses.replace(s, tokens=[t], accepted_path=[0], forward_seconds=s.forward_seconds * 1.5)
                for s, t in zip(summ.steps, summ.tokens)]
    assert "the context held little to copy" in shortfall(result_of({"vanilla": van, "logitspec": ls}))
    ls.settings = {**ls.settings, "processors": {"repetition_penalty": 1.2}}
    why = shortfall(result_of({"vanilla": van, "logitspec": ls}))
    assert "the repetition penalty turned the model away from the tokens a copy proposes" in why, why
    ls.settings = {**ls.settings, "processors": {"repetition_penalty": 1.0}}  # 1 applies nothing
    assert "the context held little to copy" in shortfall(result_of({"vanilla": van, "logitspec": ls}))


def _slower(summ, forward: float, draft: float = 0.0, prefill: float = 0.0):
    """A race of `summ` against a one-token-a-step vanilla whose passes take 50 ms, LogitSpec's
    steps taking `forward` and `draft` times (50 ms x its tokens per pass) each."""
    from logitspec.core.trace import StepRecord
    from visual.counts import run_counts

    van = _as(summ, "vanilla")
    van.steps = [StepRecord(i, "vanilla", 0, t, [t], None, forward_seconds=0.05) for i, t in enumerate(summ.tokens)]
    ls = _as(summ, "logitspec")
    per_pass = run_counts(ls).tokens_per_pass  # as the counters and the verdict state it
    ls.steps = [dataclasses.replace(s, forward_seconds=0.05 * per_pass * forward, draft_seconds=0.05 * per_pass * draft,
                                    bookkeeping_seconds=0.0) for s in ls.steps]
    ls.prefill_seconds = van.prefill_seconds + prefill
    return result_of({"vanilla": van, "logitspec": ls}), per_pass


@pytest.mark.parametrize("forward, draft, prefill, said", [
    (1.3, 0.0, 0.0, "its forward passes took {:.2f}× vanilla's"),
    (0.9, 0.3, 0.0, "drafting and bookkeeping brought its steps to {:.2f}× vanilla's time"),
    (0.9, 0.0, 60.0, "its prompt pass took"),
])
def test_each_reason_for_a_slower_logitspec_follows_from_its_numbers(summ, forward, draft, prefill, said):
    from visual.verdict import shortfall

    res, per_pass = _slower(summ, forward, draft, prefill)
    assert res.speedups["logitspec"] < 1.0
    why = shortfall(res)
    gain = per_pass  # vanilla makes one token a pass
    assert said.format((forward + draft) * gain) in why, why
    assert f"{gain:.2f}× tokens per pass" in why or "prompt pass" in why
    if prefill:
        assert f"{gain / (forward * gain):.2f}× as fast" in why  # the steps alone were faster


def test_a_lane_behind_with_one_shared_prefill_is_not_blamed_on_the_prefill(summ):
    """With one prefill for both lanes (runtime/prefills.py) the prompt pass cannot be the reason:
    a lane slow in its first passes and fast later is behind over a stopped race's first tokens."""
    from visual.verdict import shortfall

    res, per_pass = _slower(summ, 0.9)
    ls, van = res.traces["logitspec"], res.traces["vanilla"]
    half = len(ls.steps) // 2
    ls.steps = ([dataclasses.replace(s, forward_seconds=s.forward_seconds * 1.5) for s in ls.steps[:half]]
                + [dataclasses.replace(s, forward_seconds=s.forward_seconds / 10) for s in ls.steps[half:]])
    van.steps = van.steps[: len(van.steps) // 4]  # stopped early: the first tokens are compared
    ls.prefill_reused = True
    res = result_of({"vanilla": van, "logitspec": ls})
    assert res.speedups["logitspec"] < 1.0 and ls.prefill_seconds == van.prefill_seconds
    why = shortfall(res)
    assert "prompt pass" not in why and f"over the first {res.compared_tokens} tokens" in why, why


def test_a_sampled_race_is_compared_with_vanilla_sampling_not_greedy_decoding(summ):
    from visual.verdict import verdict_text

    greedy = result_of({"vanilla": _as(summ, "vanilla"), "logitspec": summ})
    assert "vanilla greedy decoding" in verdict_text(greedy)
    sampled = {name: _as(summ, name) for name in ("vanilla", "logitspec")}
    for t in sampled.values():
        t.settings = {**t.settings, "temperature": 0.7, "seed": 7}
    text = verdict_text(result_of(sampled))
    assert "greedy" not in text and "vanilla sampling with the same seed (7)" in text
