"""What-if retrieval: a replay at the run's own setting is the run; other settings move as they must."""
from __future__ import annotations

from dataclasses import replace

import pytest

from logitspec.analysis.drafts import drafted_bound, drafted_per_step
from logitspec.core.limits import InputError
from logitspec.core.trace import BOTH_FAILED, G1_MATCHED, G2_RESCUED, Candidate, RunTrace, StepRecord
from logitspec.analysis.whatif import RetrievalSetting, own_setting, recorded_k, replay_steps, what_if
from visual.whatif import whatif_figure, whatif_html


def test_own_setting_replays_every_fixture_trace(fixture_traces):
    for path in fixture_traces:
        trace = RunTrace.load(path)
        setting = own_setting(trace)
        replayed = replay_steps(trace, setting)
        for rec, rep in zip(trace.steps, replayed):
            # Traces recorded before queries kept their match length hold None there.
            got = [replace(q, match_len=None) if r.match_len is None else q for q, r in zip(rep.queries, rec.queries)]
            assert got == rec.queries, f"{path.name} step {rec.index}: the lookups differ"
        w = what_if(trace, setting)
        assert w.new.outcomes == [trace.steps[i].outcome for i in w.own.steps]
        assert w.new.drafted == w.own.drafted
        assert w.new.bound == w.own.bound == drafted_bound(trace.steps)
        assert w.own.drafted == [drafted_per_step(trace.steps)[i] for i in w.own.steps]


def _trace() -> RunTrace:
    """Prompt 1..6 30 31, then the output 40 2 3 4 5 99 6.

    Step 0's root 40 occurs nowhere before; its rank-2 candidate 2 does (a 1-gram), followed
    by 3 4 5 6: only g2 of rank 2 with n = 1 finds the truth. Step 1's root 2 is found by g1's
    1-gram. Step 2's root 99 occurs nowhere before and has no candidates: no setting finds it."""
    prompt = [1, 2, 3, 4, 5, 6, 30, 31]
    cands = [Candidate(1, 50, 2.0, 0.2), Candidate(2, 2, 1.0, 0.1)]
    steps = [
        StepRecord(0, "logitspec", 8, 40, [40], 2, candidates=cands),
        StepRecord(1, "logitspec", 9, 2, [2, 3, 4, 5], 99),
        StepRecord(2, "logitspec", 13, 99, [99], 6),
        StepRecord(3, "logitspec", 14, 6, [6], None, forward=False),
    ]
    return RunTrace("logitspec", "test", "", prompt, {"ngram_sizes": [1, 2, 3], "continuation": 20, "k": 2,
                                                         "tree": "static"}, steps)


def test_settings_move_retrieval_in_the_expected_direction():
    t = _trace()
    assert recorded_k(t) == 2
    wide = what_if(t, RetrievalSetting((1, 2, 3), 20, 2))
    assert wide.new.outcomes == [G2_RESCUED, G1_MATCHED, BOTH_FAILED]
    assert wide.new.drafted == [5, 4, 1] and wide.new.bound == 11  # + the last token, committed without a pass
    assert wide.text_failures == [2]
    fewer_k = what_if(t, RetrievalSetting((1, 2, 3), 20, 1)).new  # rank 2 is cut
    assert fewer_k.outcomes[0] == BOTH_FAILED and fewer_k.bound == 7
    larger_n = what_if(t, RetrievalSetting((2, 3), 20, 2)).new  # no 1-gram: nothing here repeats a pair
    # Step 0 still drafts candidate 2 itself, which is the truth: 1 token after the root.
    assert larger_n.outcomes == [BOTH_FAILED] * 3 and larger_n.drafted == [2, 1, 1] and larger_n.bound == 5
    short = what_if(t, RetrievalSetting((1, 2, 3), 1, 2)).new  # g2's chain: the candidate + 1 token
    assert short.outcomes == wide.new.outcomes and short.drafted == [3, 4, 1]
    assert larger_n.success_rate < fewer_k.success_rate < wide.new.success_rate


def test_a_shorter_continuation_holds_fewer_tokens(fixture_traces):
    t = RunTrace.load(fixture_traces[0])
    own = own_setting(t)
    full = what_if(t, own).new
    short = what_if(t, RetrievalSetting(own.ngram_sizes, 1, own.k)).new
    assert all(s <= f for s, f in zip(short.drafted, full.drafted))
    assert short.bound < full.bound
    assert short.outcomes == full.outcomes  # the length of a continuation does not decide a match


@pytest.mark.parametrize("setting, says", [
    (RetrievalSetting((), 20, 2), "at least one n-gram"),
    (RetrievalSetting((1, 9), 20, 2), "n-gram sizes must be from 1"),
    (RetrievalSetting((1,), 0, 2), "continuation length"),
    (RetrievalSetting((1,), 20, 3), "recorded 2 candidates"),
])
def test_a_setting_the_replay_cannot_honour_is_refused_in_one_line(setting, says):
    with pytest.raises(InputError, match=says):
        what_if(_trace(), setting)


def test_the_pictures_name_both_runs():
    t = _trace()
    w = what_if(t, RetrievalSetting((2, 3), 20, 1))
    names = [d.name for d in whatif_figure(w).data]
    assert any(n.startswith("this run") for n in names) and any(n.startswith("what-if") for n in names)
    text = whatif_html(w, t)
    assert "0 of 3 steps (0%)" in text  # the what-if finds nothing
    assert "At 1 step (step 2) no setting could" in text
