"""What Token Recycling proposed, in the step's retrieval view and the retrieval debugger: the
root's successors from the matrix row, by rank, with the one accepted; why a step missed."""
from __future__ import annotations

import re

from test_recycled_tree_figure import TEXTS, recycling_trace

from logitspec.drafters.recycling import ORIGIN
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import Candidate, QueryRecord, RunTrace, StepRecord, TreeNode
from visual.debug_table import debugger_html, debugger_note, debugger_rows, failure_rows
from visual.retrieval import retrieval_html


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_retrieval_view_lists_the_roots_recycled_successors_and_the_one_accepted():
    tr = recycling_trace()
    text = _text(retrieval_html(tr, 0))
    assert "Token Recycling&#x27;s matrix held x i+1 &#x27;s successors from an earlier pass" in text
    assert "the matrix row of x i+1 = «t7»: 8 successors drafted" in text
    for rank in range(1, 9):  # the root 7's row: 8, 9, ... 15
        assert f"{rank} · t{7 + rank}" in text
    assert "the model went on with rank 1" in text and "72 more recycled nodes from deeper rows" in text
    # Rank 1 (t8) is the accepted chip; the others are verified and rejected.
    page = retrieval_html(tr, 0)
    assert re.search(r'title="verified and accepted"[^>]*>1 · t8<', page)
    assert not re.search(r'title="verified and accepted"[^>]*>2 · t9<', page)


def test_a_step_the_row_missed_says_what_the_model_chose_instead():
    tr = recycling_trace()
    text = _text(retrieval_html(tr, 1))  # root 10, nothing accepted, the model chose 20
    assert "the model went on with «t20», which this row did not hold" in text


def test_the_debugger_lists_every_recycling_step_with_its_recycled_successors():
    tr = recycling_trace()
    rows = debugger_rows(tr, ["g1 matched"])  # no lookups: the lookup filter does not hide its steps
    assert [r["step"] for r in rows] == [0, 1]
    assert rows[0]["recycled"].startswith("1 t8 ✓ · 2 t9 ✗") and "✓" not in rows[1]["recycled"]
    table = debugger_html(rows)
    assert ">recycled</th>" in table and "1 t8 ✓" in table
    assert "Token Recycling looks only in its matrix" in debugger_note(tr, ["g1 matched"], len(rows))


def test_the_hybrids_recycled_candidates_join_its_lookups_in_the_debugger():
    k = 4
    tree = [TreeNode(id=0, token=7, parent=-1, depth=0, origin="root"),
            TreeNode(id=1, token=8, parent=0, depth=1, origin="g2", rank=1),
            TreeNode(id=2, token=30, parent=0, depth=1, origin=ORIGIN, rank=2)]
    s = StepRecord(0, "logitspec+recycling", 10, 7, [7, 30], 40, tree=tree, accepted_path=[0, 2],
                   candidates=[Candidate(1, 8, 2.0, 0.5), Candidate(k + 2, 30, 1.0, 0.2)],
                   queries=[QueryRecord("g2", rank, (7, tok), (2, 1), None, None, [])
                            for rank, tok in ((1, 8), (k + 2, 30))])
    tr = RunTrace("logitspec+recycling", "tiny", "", [1, 2, 3], DecodeSettings(k=k).to_dict(), steps=[s],
                  token_texts=TEXTS)
    assert failure_rows(tr)[0]["recycled"] == "2 t30 ✓"
    text = _text(retrieval_html(tr, 0))
    assert "the model went on with rank 2" in text
    assert "g2 · recycled candidate, rank 2 in the root's matrix row: «t30»" in text  # not "rank 6"
    assert "g2 · candidate rank 1: «t8»" in text
    plain = RunTrace("logitspec", "tiny", "", [1, 2, 3], DecodeSettings(k=k).to_dict(), steps=[
        StepRecord(0, "logitspec", 10, 7, [7, 8], 40, tree=tree[:2], accepted_path=[0, 1])], token_texts=TEXTS)
    assert ">recycled</th>" not in debugger_html(failure_rows(plain))  # no column where none was drafted
    assert "Token Recycling" not in retrieval_html(plain, 0)
