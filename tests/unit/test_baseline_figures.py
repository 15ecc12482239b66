"""A step of Lookahead decoding or REST drawn from its trace: the Jacobi window's levels as the
decoder laid them out, the pool's n-grams for the root and what was accepted; REST's retrieved
continuations; the draft tree's lanes with no box on another; the retrieval view saying what
each lookup found and why it missed. Plain data, no model."""
from __future__ import annotations

import random

import pytest

from logitspec.drafters.lookahead import GuessPool, JacobiWindow, lookahead_tree
from logitspec.drafters.rest import Datastore, retrieve_tree
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace, StepRecord
from visual import PALETTE, baseline_figure, retrieval_html, tree_figure
from visual.baselines import drafted_paths, lookahead_grid, rest_grid, window_levels
from visual.data import match_text, query_name
from visual.fit import caption_html, slide_figure
from visual.style import blend, theme_colors
from visual.tree_lanes import lane_names
from visual.tree_layout import tree_layout

TEXTS = {str(i): f"t{i}" for i in range(300)}
PROMPT = list(range(100, 120))


def window(w: int, n: int, warm: int) -> JacobiWindow:
    """A window after `warm` passes (warmed up from n - 2 on), its new levels numbered from 200."""
    win = JacobiWindow.start(w, n, PROMPT, random.Random(0))
    for p in range(warm):
        top = win.nodes(0, 1)[1]
        win.advance([200 + 10 * p + i for i in range(len(top))], [7, *win.level0], GuessPool(3))
    return win


def lookahead_trace(guesses, accepted: list[int], warm: int = 3) -> tuple[RunTrace, JacobiWindow]:
    """One Lookahead step of root 7 (W 4, N 4, G 3) whose walk took the nodes `accepted`."""
    win = window(4, 4, warm)
    nodes, _, q = lookahead_tree(7, guesses, win)
    toks = [7] + [nodes[i].token for i in accepted]
    step = StepRecord(0, "lookahead", 20, 7, toks, 9, queries=[q], tree=nodes, accepted_path=[0, *accepted])
    s = DecodeSettings(lookahead_window=4, lookahead_ngram=4, lookahead_guesses=3).to_dict()
    return RunTrace("lookahead", "tiny", "", PROMPT, s, steps=[step], token_texts=TEXTS), win


def rest_trace(store: list[int], context: list[int], accepted: int) -> RunTrace:
    """One REST step of root 7 after `context`, the walk taking the first `accepted` nodes of continuation 1."""
    nodes, q = retrieve_tree(7, context, Datastore(store), 4, 100, 3, 8)
    paths = drafted_paths(StepRecord(0, "rest", 0, 7, [7], None, tree=nodes), "retrieved")
    path = [0] + [n.id for n in paths[0][:accepted]] if paths else [0]
    step = StepRecord(0, "rest", len(context), 7, [nodes[i].token for i in path], 9, queries=[q], tree=nodes,
                      accepted_path=path)
    return RunTrace("rest", "tiny", "", context, DecodeSettings().to_dict(), steps=[step], token_texts=TEXTS)


# ----- Lookahead --------------------------------------------------------------------------------------

@pytest.mark.parametrize("warm", [0, 1, 2, 5])
def test_the_window_is_read_back_level_by_level_as_the_decoder_laid_it_out(warm):
    tr, win = lookahead_trace([(1, 2, 3)], [], warm)
    levels = window_levels(tr.steps[0])
    assert [[n.token for n in lv] for lv in levels] == [win.level0, *win.upper]
    for lv, level in enumerate(levels):
        assert [n.depth for n in level] == [i + lv + (lv == 0) for i in range(len(level))]


def test_the_lookahead_drawing_shows_the_window_the_pool_and_what_was_accepted():
    guesses = [(1, 2, 3), (1, 4, 5), (6, 6, 6)]
    tr, win = lookahead_trace(guesses, [1, 2])  # took 1, 2 along the first n-gram
    grid = lookahead_grid(tr, 0)
    assert grid.rows == ["window level 2", "window level 1", "window level 0", "x_{i+1}",
                         "pool n-gram 1", "pool n-gram 2", "pool n-gram 3"]
    rows = {}
    for c in grid.cells:
        rows.setdefault(grid.rows[c.row], []).append(c)
    assert [c.node.token for c in rows["window level 0"]] == win.level0
    assert [c.node.token for c in rows["window level 2"]] == win.upper[-1]
    for j, g in enumerate(guesses):
        assert tuple(c.node.token for c in rows[f"pool n-gram {j + 1}"]) == g
    assert [c.status for c in rows["pool n-gram 1"]] == ["accepted", "accepted", "rejected"]
    assert {c.status for c in rows["window level 1"]} == {"window"}  # the window is never accepted
    fig = baseline_figure(tr, 0)
    bg = theme_colors("light")["bg"]
    fills = {s.name: s.fillcolor for s in fig.layout.shapes}
    first = rows["pool n-gram 1"]
    assert fills[f"node {first[0].node.id}"] == PALETTE["pool"]
    assert fills[f"node {first[2].node.id}"] == blend(PALETTE["pool"], bg, 0.45)
    assert "the accepted tokens follow 1 of the 3 n-grams" in grid.subtitle


def test_a_warming_window_and_an_empty_pool_say_so():
    tr, _ = lookahead_trace([], [], warm=1)
    grid = lookahead_grid(tr, 0)
    assert "warming up: 2 of its 3 levels" in grid.subtitle and "held no n-gram" in grid.subtitle
    html = retrieval_html(tr, 0)
    assert "still warming up (2 of its 3 levels)" in html and "no n-gram starting with" in html


def test_the_baseline_figure_fits_the_app_and_exports_a_slide():
    tr, _ = lookahead_trace([(1, 2, 3), (1, 4, 5)], [1])
    fig = baseline_figure(tr, 0, fit=True)
    assert fig.layout.width is None and not fig.layout.title.text
    assert "Lookahead, step 0" in caption_html(fig) and "_{" not in caption_html(fig)
    labels = fig.layout.meta["fit"]["labels"]
    assert fig.data[labels["trace"]].name == "token labels" and "t1" in labels["full"]
    slide = slide_figure(fig)
    assert (slide.layout.width, slide.layout.height) == (1280, 720) and slide.layout.title.text


# ----- REST -------------------------------------------------------------------------------------------

def test_the_rest_drawing_shows_each_retrieved_continuation_the_taken_one_first():
    store = [3, 7, 10, 11, 12, 0, 3, 7, 10, 11, 13, 0, 3, 7, 20, 21, 22]
    tr = rest_trace(store, [1, 2, 3], accepted=2)
    grid = rest_grid(tr, 0)
    conts = [[c.node.token for c in grid.cells if c.row == r] for r in range(1, len(grid.rows))]
    assert sorted(conts) == [[10, 11, 12], [10, 11, 13], [20, 21, 22]]
    assert [c.node.token for c in grid.cells if c.row == 1] == [10, 11, 12]  # the one the model took: first
    # 10 and 11 are one node in the trie, on both continuations; the walk accepted them
    taken = [c for c in grid.cells if c.status == "accepted" and c.kind == "retrieved"]
    assert {c.row for c in taken} == {1, 2} and [c.node.token for c in taken if c.row == 1] == [10, 11]
    assert "found in the datastore: 2 tokens, «t3|t7»" in grid.subtitle
    assert "follow continuations 1 to 2 (a prefix they share)" in grid.subtitle


def test_a_rest_miss_says_which_suffixes_were_tried():
    tr = rest_trace([50, 51, 52, 53], [1, 2, 3], accepted=0)
    grid = rest_grid(tr, 0)
    assert grid.rows == ["x_{i+1}"] and "suffixes of 4 down to 2 tokens tried" in grid.subtitle
    html = retrieval_html(tr, 0)
    assert "suffixes of 4 down to 2 tokens ✗" in html and "REST found no suffix" in html


# ----- the draft tree and the words around it ----------------------------------------------------------

def test_the_draft_trees_lanes_put_no_box_on_another():
    tr, _ = lookahead_trace([(1, 2, 3), (1, 4, 5), (6, 6, 6)], [1, 2])
    rest = rest_trace([3, 7, 10, 11, 12, 0, 3, 7, 10, 11, 13, 0, 3, 7, 20, 21, 22], [1, 2, 3], accepted=2)
    for t in (tr, rest):
        lay = tree_layout(t, 0)
        assert len({(v.depth, v.lane) for v in lay.nodes}) == len(lay.nodes), t.method
        tree_figure(t, 0, fit=True, compact=True)
    assert lane_names(tr)[1:] == ["pool n-gram 1", "pool n-gram 2", "pool n-gram 3",
                                  "window level 0", "window level 1", "window level 2"]


def test_the_hover_names_the_baselines_lookups_not_a_candidate():
    tr, _ = lookahead_trace([(1, 2, 3)], [1])
    rest = rest_trace([3, 7, 10, 11, 12], [1, 2, 3], accepted=1)
    for t in (tr, rest):
        s = t.steps[0]
        name, said = query_name(t, s, 0), match_text(t, s.queries[0], [1, 2, 3, 7])
        assert "candidate" not in name and "None" not in said, (name, said)
    html = retrieval_html(tr, 0)
    assert "n-gram 1:" in html and "the model went on along n-gram 1 for 1 token" in html
