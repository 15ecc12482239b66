"""Two runs side by side (logitspec/analysis/sidebyside.py), on runs laid out by hand."""
from __future__ import annotations

from logitspec.analysis.sidebyside import side_by_side, spans_of
from logitspec.core.trace import QueryRecord, RunTrace, StepRecord


def run(method: str, steps: list[tuple[list[int], bool]]) -> RunTrace:
    """Steps of (tokens, whether its lookup matched), prompt lookup's kind of query."""
    recs = [StepRecord(i, method, 3, toks[0], toks, 0,
                       queries=[QueryRecord("pld", None, (1,), (1,), 1 if hit else None, 0 if hit else None, [])])
            for i, (toks, hit) in enumerate(steps)]
    return RunTrace(method, "m", "p", [1, 2, 3], {}, recs)


def test_two_runs_part_where_one_drafted_and_the_other_decoded_alone():
    a = run("a", [([5, 6, 7], True), ([8], False), ([9, 5], True)])  # roots at 0, 3, 4
    b = run("b", [([5], False), ([6], True), ([7], True), ([8, 9, 5], True)])  # roots at 0, 1, 2, 3
    sbs = side_by_side("a", a, "b", b)
    assert [(s.start, s.length) for s in spans_of(a)] == [(0, 3), (3, 1), (4, 2)]
    assert sbs.compared == 6 and sbs.output_parting is None
    assert (sbs.parts_at, sbs.drafted_by) == (1, "a")
    assert sbs.outcomes_there == ("matched", "failed")  # a's first step drafted it; b's first step found nothing
    assert "They part at output token 1: a drafted it and b decoded it alone (b's step: failed" in sbs.words()


def test_identical_steps_do_not_part_and_different_outputs_are_said():
    a = run("a", [([5, 6], True), ([7], False)])
    assert side_by_side("a", a, "b", a).parts_at is None
    c = run("c", [([5, 6], True), ([8], False)])
    assert side_by_side("a", a, "c", c).words().startswith("The outputs differ from token 2.")
