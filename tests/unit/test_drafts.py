"""What the drafts held: the longest true continuation on any drafted chain."""
from __future__ import annotations

from logitspec.analysis.drafts import best_drafted_match, drafted_bound, truth_after
from logitspec.core.trace import Candidate, QueryRecord, StepRecord


def q(kind, rank, cont):
    return QueryRecord(kind, rank, (), (), 1 if cont else None, 0 if cont else None, cont)


def test_drafted_bound_counts_the_longest_true_prefix_on_any_chain():
    # Output 10 11 12 13 14 15 | 16. Step 0 (root 10) drafted g1 [11, 99] and candidate
    # 12 (rank 1) continued by [13, 14, 77]: the truth after 10 is 11 12 13 14 ..., so g1
    # holds 1 token and the candidate's chain none (its guess for the token after the
    # root, 12, is wrong: that token is 11).
    s0 = StepRecord(0, "logitspec", 5, 10, [10, 11], 12, candidates=[Candidate(1, 12, 0.0, 0.1)],
                    queries=[q("g1", None, [11, 99]), q("g2", 1, [13, 14, 77])])
    # Step 1 (root 12): candidate 13 then [14, 15, 16] is the truth for four tokens.
    s1 = StepRecord(1, "logitspec", 7, 12, [12], 13, candidates=[Candidate(1, 13, 0.0, 0.1)],
                    queries=[q("g1", None, []), q("g2", 1, [14, 15, 16])])
    s2 = StepRecord(2, "logitspec", 8, 13, [13, 14, 15], None, queries=[q("pld", None, [14, 15, 9])])
    last = StepRecord(3, "logitspec", 11, 16, [16], None, forward=False)
    assert drafted_bound([s0, s1, s2, last]) == (1 + 1) + (1 + 4) + (1 + 2) + 1  # the last: no pass


def test_best_match_names_the_chain_and_prefers_the_first_drafted_on_ties():
    s = StepRecord(0, "logitspec", 5, 10, [10], 11,
                   candidates=[Candidate(1, 11, 0.0, 0.2), Candidate(2, 12, 0.0, 0.1)],
                   queries=[q("g1", None, [11, 5]), q("g2", 1, [5, 6]), q("g2", 2, [13, 14])])
    # g1 and candidate 1 both hold 11; candidate 1's chain goes on with 5, 6.
    m = best_drafted_match(s, [11, 5, 6, 7])
    assert (m.length, m.kind, m.rank) == (3, "g2", 1)
    m = best_drafted_match(s, [11, 5, 9])
    assert (m.length, m.kind, m.rank) == (2, "g1", None)
    m = best_drafted_match(s, [99])
    assert (m.length, m.kind, m.rank) == (0, None, None)


def test_truth_after_a_step_is_the_rest_of_the_output():
    steps = [StepRecord(0, "logitspec", 5, 1, [1, 2], 3), StepRecord(1, "logitspec", 7, 3, [3, 4], 5),
             StepRecord(2, "logitspec", 9, 5, [5], None, forward=False)]
    assert truth_after(steps, 0) == [2, 3, 4, 5]
    assert truth_after(steps, 1) == [4, 5]
    assert truth_after(steps, 2) == []
