"""Two runs side by side (logitspec/analysis/sidebyside.py), on runs laid out by hand."""
from __future__ import annotations

from logitspec.analysis.sidebyside import side_by_side, spans_of
from logitspec.core.trace import QueryRecord, RunTrace, StepRecord, TreeNode


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


def tree_step(i: int, toks: list[int], children_of_last: int) -> StepRecord:
    """A step that drafted a chain along `toks`, and `children_of_last` more nodes under its last token."""
    nodes = [TreeNode(j, t, j - 1, j, "root" if j == 0 else "g1") for j, t in enumerate(toks)]
    nodes += [TreeNode(len(toks) + c, 40 + c, len(toks) - 1, len(toks), "g1") for c in range(children_of_last)]
    return StepRecord(i, "logitspec", 3, toks[0], toks, 0, tree=nodes, accepted_path=list(range(len(toks))),
                      queries=[QueryRecord("g1", None, (1,), (1,), 1, 0, [])])


def test_one_method_under_two_settings_says_the_setting_and_why_one_decoded_alone():
    a = RunTrace("logitspec", "m", "p", [1, 2, 3], {"pool": "recent", "k": 64},
                 [tree_step(0, [5, 6], 2), tree_step(1, [7], 0), tree_step(2, [8], 0)])  # roots at 0, 2, 3
    b = RunTrace("logitspec", "m", "p", [1, 2, 3], {"pool": "longest", "k": 64},
                 [tree_step(0, [5, 6, 7], 0), tree_step(1, [8], 0)])  # roots at 0, 3
    sbs = side_by_side("logitspec pool=recent", a, "logitspec pool=longest", b)
    assert sbs.differ == {"pool": ("recent", "longest")} and (sbs.parts_at, sbs.short) == (2, "other")
    assert sbs.words().startswith("One method under two settings (pool recent against longest). The outputs agree")
    assert "logitspec pool=recent's step: g1 matched, its draft held other tokens there" in sbs.words()
    flipped = side_by_side("x", b, "y", RunTrace("logitspec", "m", "p", [1, 2, 3], {"pool": "longest", "k": 64},
                                                  [tree_step(0, [5, 6], 0), tree_step(1, [7, 8], 0)]))
    assert flipped.short == "ended" and "its accepted draft ended just before it" in flipped.words()
    assert side_by_side("a", a, "pld", run("pld", [([5], True)])).differ == {}  # two methods: no setting named
