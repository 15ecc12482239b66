"""The Step explorer's tree of a Token Recycling step: recycled nodes in the recycled colour, each
in a lane of its own, their hover naming the matrix row and rank they came from; the hybrid's
recycled candidates share a lane with their g2 branch."""
from __future__ import annotations

from helpers.figures import node_ids, shape_named, trace_named

from logitspec.drafters.recycling import ORIGIN, SuccessorMatrix, static_tree
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace, StepRecord, TreeNode
from visual import PALETTE, tree_figure
from visual.style import blend, theme_colors
from visual.tree_key import key_items
from visual.tree_lanes import lane_names
from visual.tree_layout import tree_layout

VOCAB = 50
TEXTS = {str(i): f"t{i}" for i in range(VOCAB)}


def full_matrix(k: int = 8) -> SuccessorMatrix:
    m = SuccessorMatrix(k)
    for t in range(VOCAB):
        m.rows[t] = tuple((t + 1 + j) % VOCAB for j in range(k))
    return m


def recycling_trace() -> RunTrace:
    """Two steps of the static template: the first accepts two recycled nodes (ranks 1 then 1)."""
    nodes = static_tree(7, full_matrix())
    first = StepRecord(0, "recycling", 10, 7, [7, 8, 9], 10, tree=nodes, accepted_path=[0, 1, 9])
    again = static_tree(10, full_matrix())
    second = StepRecord(1, "recycling", 13, 10, [10], 20, tree=again, accepted_path=[0])
    return RunTrace("recycling", "tiny", "", [1, 2, 3], DecodeSettings(tree="static").to_dict(),
                    steps=[first, second], token_texts=TEXTS)


def test_recycled_nodes_are_drawn_in_the_recycled_colour_each_in_its_own_place():
    tr = recycling_trace()
    s = tr.steps[0]
    fig = tree_figure(tr, 0)
    bg, colour = theme_colors("light")["bg"], PALETTE["recycled"]
    assert colour not in {PALETTE[k] for k in ("root", "g1", "g2-top", "g2-mid", "g2-tail", "bonus", "accepted")}
    recycled = [n for n in s.tree if n.origin == ORIGIN]
    assert len(recycled) == 80
    for n in recycled:
        box = shape_named(fig, f"node {n.id}")
        if n.id in s.accepted_path:
            assert box.fillcolor == colour and box.line.width == 3
        else:
            assert box.fillcolor == blend(colour, bg, 0.45) and box.line.color == colour
    assert node_ids(trace_named(fig, "accepted path nodes")) == [0, 1, 9]
    lay = tree_layout(tr, 0)
    assert len({(v.depth, v.lane) for v in lay.nodes}) == len(lay.nodes)  # no box on another
    assert "recycled: from the matrix" in [it.name for it in key_items(tr)]
    assert "recycled: from the matrix" in [t.name for t in fig.data]


def test_a_recycled_nodes_hover_names_its_matrix_row_and_rank():
    tr = recycling_trace()
    lay = tree_layout(tr, 0)
    deep = lay.node(9)  # rank 1 in the row of node 1's token (8), below the root 7
    assert 'matrix row of "t8": rank 1 of the 8 successors' in deep.hover
    third = next(v for v in lay.nodes if v.parent == 0 and v.token == 10)  # the root's rank-3 successor
    assert 'matrix row of "t7": rank 3 of the 8' in third.hover


def test_the_lanes_of_a_recycling_run_stay_put_between_steps():
    tr = recycling_trace()
    # The same template in both steps: a node of one path of ranks is in the same lane in both.
    a, b = tree_layout(tr, 0), tree_layout(tr, 1)
    assert [(v.depth, v.lane) for v in a.nodes if v.id >= 0] == [(v.depth, v.lane) for v in b.nodes if v.id >= 0]
    names = lane_names(tr)
    assert names[0].startswith("x_{i+1}") and names[1] == "ranks 1" and "ranks 2" in names


def test_the_hybrids_recycled_candidate_shares_the_lane_of_its_g2_branch():
    k = 4
    tree = [TreeNode(id=0, token=7, parent=-1, depth=0, origin="root"),
            TreeNode(id=1, token=8, parent=0, depth=1, origin="g2", rank=1),
            TreeNode(id=2, token=30, parent=0, depth=1, origin=ORIGIN, rank=2),
            TreeNode(id=3, token=31, parent=2, depth=2, origin="g2", rank=k + 2)]
    s = StepRecord(0, "logitspec+recycling", 10, 7, [7, 30, 31], 40, tree=tree, accepted_path=[0, 2, 3])
    tr = RunTrace("logitspec+recycling", "tiny", "", [1, 2, 3], DecodeSettings(k=k).to_dict(), steps=[s],
                  token_texts=TEXTS)
    lay = tree_layout(tr, 0)
    assert lay.node(2).lane == lay.node(3).lane != lay.node(1).lane
    assert lay.node(2).color_key == "recycled" and lay.node(3).color_key == "g2-top"
    assert lane_names(tr)[1 + k + 2] == "recycled 2"
    assert "recycled candidate, rank 2 in the root's matrix row (branch of candidate" in lay.node(3).hover
    assert "<br>rank 1 (this candidate)" in lay.node(1).hover
    assert shape_named(tree_figure(tr, 0), "node 2").fillcolor == PALETTE["recycled"]
