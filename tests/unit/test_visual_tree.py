"""The draft-tree figure, checked against the real traces it draws."""
from __future__ import annotations

import itertools

import pytest
from helpers.figures import FIXTURE_NAMES, interesting_steps, load, node_ids, shape_named, trace_named

from visual import PALETTE, tree_figure
from visual.style import THEMES, visible
from visual.tree_layout import BOX_H, BOX_W, LANE_PX, tree_layout

CASES = [(name, i) for name in FIXTURE_NAMES for i in interesting_steps(load(name))]


@pytest.mark.parametrize("name,step", CASES)
def test_accepted_path_nodes_are_exactly_the_traces_path(name, step):
    tr = load(name)
    s = tr.steps[step]
    fig = tree_figure(tr, step)
    drawn = node_ids(trace_named(fig, "accepted path nodes"))
    assert drawn == list(s.accepted_path)
    # Their tokens are the tokens the step committed, in order.
    assert [int(row[2]) for row in trace_named(fig, "accepted path nodes").customdata] == s.tokens
    # No accepted node shows up under another status, and every node is drawn once.
    others = [node_ids(trace_named(fig, t)) for t in ("verified, rejected nodes", "pruned nodes")]
    assert not set(drawn) & set(others[0] + others[1])
    assert sorted(drawn + others[0] + others[1]) == [n.id for n in s.tree]
    # Filled boxes with a bold outline; the path's edges are the thick ones.
    for nid in drawn:
        shp = shape_named(fig, f"node {nid}")
        assert shp.line.width == 3 and shp.line.dash == "solid"
        assert shp.fillcolor != THEMES["light"]["bg"]
    path_edges = trace_named(fig, "accepted path")
    assert path_edges.line.width >= 4
    xs = list(path_edges.x)
    segments = sum(1 for a, b in zip(xs, xs[1:] + [None]) if a is not None and b is None)
    assert segments == len(s.accepted_path) - 1


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_hover_text_carries_the_matched_ngram(name):
    tr = load(name)
    checked = 0
    for step in interesting_steps(tr, 2):
        s = tr.steps[step]
        fig = tree_figure(tr, step)
        hover = {}
        for tname in ("accepted path nodes", "verified, rejected nodes", "pruned nodes"):
            t = trace_named(fig, tname)
            hover.update(zip(node_ids(t), t.hovertext or ()))
        for node in s.tree:
            if node.query is None:
                continue
            q = s.queries[node.query]
            h = hover[node.id]
            if q.matched_n is None:
                assert "no match" in h
                continue
            ngram = next(a.ngram for a in q.attempts if a.matched)
            assert len(ngram) == q.matched_n
            assert f"matched the {q.matched_n}-gram" in h
            # Every token of the n-gram, whitespace made visible, in order.
            pos = h.index(f"matched the {q.matched_n}-gram")
            for t in ngram:
                piece = tr.token_texts[str(t)].replace(" ", "·").replace("\n", "⏎")
                piece = piece.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                pos = h.index(piece, pos)
                pos += len(piece)
            checked += 1
        # Hover also gives id, depth and the position id of every node.
        root_hover = hover[0]
        assert f"token id {s.root}" in root_hover
        assert f"position id {s.context_len}" in root_hover
    assert checked > 0


def test_a_pruned_node_is_drawn_as_pruned():
    tr = load("summarization-241")
    step = next(i for i, s in enumerate(tr.steps) if any(n.pruned for n in s.tree))
    s = tr.steps[step]
    fig = tree_figure(tr, step)
    pruned = [n for n in s.tree if n.pruned]
    assert sorted(node_ids(trace_named(fig, "pruned nodes"))) == sorted(n.id for n in pruned)
    for node in pruned:
        shp = shape_named(fig, f"node {node.id}")
        assert shp.line.dash == "dash"  # dashed outline
        assert shp.fillcolor in (THEMES["light"]["bg"],) or node.token == s.bonus  # hollow
    hover = dict(zip(node_ids(trace_named(fig, "pruned nodes")), trace_named(fig, "pruned nodes").hovertext))
    for node in pruned:
        assert "pruned, never verified" in hover[node.id]
        assert node.prune_reason in hover[node.id] or "rank rule" in hover[node.id] or "capacity" in hover[node.id]
    # Edges into pruned nodes are dashed too.
    assert trace_named(fig, "edge to a pruned token").line.dash == "dash"


def test_verified_rejected_nodes_are_faded_and_the_bonus_follows_the_path():
    tr = load("summarization-241")
    step = 31
    s = tr.steps[step]
    fig = tree_figure(tr, step)
    rejected = node_ids(trace_named(fig, "verified, rejected nodes"))
    assert rejected and all(not s.tree[i].pruned and i not in s.accepted_path for i in rejected)
    for nid in rejected[:10]:
        shp = shape_named(fig, f"node {nid}")
        assert shp.line.dash == "solid" and shp.line.width < 3
    bonus = trace_named(fig, "bonus token")
    assert [int(r[2]) for r in bonus.customdata] == [s.bonus]
    last = s.tree[s.accepted_path[-1]]
    assert list(bonus.x) == [last.depth + 1]  # drawn right after the path's last node
    # This step's pruning cut the token the model wanted next; the hover says so.
    wanted = [n for n in s.tree if n.pruned and n.parent == last.id and n.token == s.bonus]
    assert wanted
    hover = dict(zip(node_ids(trace_named(fig, "pruned nodes")), trace_named(fig, "pruned nodes").hovertext))
    assert "wanted next" in hover[wanted[0].id]


def test_lanes_stay_put_from_step_to_step():
    tr = load("coding-121")
    figs = [tree_figure(tr, i) for i in (0, 10, 40)]
    for key in ("height", "width"):
        assert len({getattr(f.layout, key) for f in figs}) == 1
    assert len({tuple(f.layout.yaxis.ticktext) for f in figs}) == 1
    assert len({tuple(f.layout.xaxis.range) for f in figs}) == 1
    # A candidate of rank r always sits in lane 1 + r.
    for i in (0, 10, 40):
        lay = tree_layout(tr, i)
        for v in lay.nodes:
            node = tr.steps[i].tree[v.id] if v.id >= 0 else None
            if node is not None and node.origin == "g2":
                assert v.lane == 1 + node.rank


def test_node_colours_follow_origin_and_rank_bucket():
    tr = load("writing-81")
    step = interesting_steps(tr)[-1]
    fig = tree_figure(tr, step)
    s = tr.steps[step]
    want = {"root": PALETTE["root"], "g1": PALETTE["g1"]}
    for node in s.tree:
        if node.pruned:
            continue
        shp = shape_named(fig, f"node {node.id}")
        if node.origin == "g2":
            key = "g2-top" if node.rank <= 8 else "g2-mid" if node.rank <= 32 else "g2-tail"
            colour = PALETTE[key]
        else:
            colour = want[node.origin]
        # Accepted boxes are filled with the colour; faded ones are outlined with it.
        assert colour in (shp.fillcolor, shp.line.color)


def _label_boxes(fig):
    """Pixel boxes of the token labels, from the figure's own layout (no browser)."""
    lay = fig.layout
    labels = next(t for t in fig.data if t.name == "token labels")
    plot_w = lay.width - lay.margin.l - lay.margin.r
    plot_h = lay.height - lay.margin.t - lay.margin.b
    (x0, x1), (y0, y1) = lay.xaxis.range, lay.yaxis.range
    font = labels.textfont.size
    boxes = []
    for x, y, text in zip(labels.x, labels.y, labels.text):
        n = len(text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
        px = lay.margin.l + (x - x0) / (x1 - x0) * plot_w
        py = lay.margin.t + (y - y0) / (y1 - y0) * plot_h
        w = n * font * 0.602
        boxes.append((px - w / 2, py - font / 2, px + w / 2, py + font / 2, x, y))
    return boxes, font, plot_w / (x1 - x0), plot_h / abs(y1 - y0)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_labels_never_pile_up_in_a_64_node_tree(name):
    tr = load(name)
    step = max(range(len(tr.steps)), key=lambda i: len(tr.steps[i].tree))
    assert len(tr.steps[step].tree) >= 64
    fig = tree_figure(tr, step)
    boxes, font, col_px, lane_px = _label_boxes(fig)
    assert font >= 14
    assert len(boxes) >= 64
    for a, b in itertools.combinations(boxes, 2):
        if a[4] == b[4]:  # same x: vertical distance must exceed the font height
            assert abs(a[1] - b[1]) >= font, (a, b)
        overlap_x = min(a[2], b[2]) - max(a[0], b[0])
        overlap_y = min(a[3], b[3]) - max(a[1], b[1])
        assert overlap_x <= 0 or overlap_y <= 0, (a, b)
    # Each label fits inside its box.
    for x0, y0, x1, y1, _, _ in boxes:
        assert x1 - x0 <= BOX_W * col_px and y1 - y0 <= BOX_H * lane_px
    assert lane_px == pytest.approx(LANE_PX)


def test_visible_whitespace():
    assert visible(" a\nb\t") == "·a⏎b⇥"
    tr = load("coding-121")
    step = next(i for i, s in enumerate(tr.steps) if any("\n" in tr.text_of(n.token) for n in s.tree))
    fig = tree_figure(tr, step)
    texts = list(trace_named(fig, "token labels").text)
    hovers = sum((list(trace_named(fig, t).hovertext or ()) for t in
                  ("accepted path nodes", "verified, rejected nodes", "pruned nodes")), [])
    assert not any("\n" in t for t in texts)
    assert any("⏎" in h for h in hovers)


def test_dark_theme_and_single_node_steps():
    tr = load("summarization-241")
    fig = tree_figure(tr, 5, theme="dark")
    assert fig.layout.paper_bgcolor == THEMES["dark"]["bg"]
    last = len(tr.steps) - 1
    assert not tr.steps[last].forward
    fig = tree_figure(tr, last)
    assert node_ids(trace_named(fig, "accepted path nodes")) == [0]
    assert not node_ids(trace_named(fig, "bonus token"))
    with pytest.raises(IndexError):
        tree_figure(tr, len(tr.steps))
    with pytest.raises(ValueError):
        tree_figure(tr, 0, theme="sepia")


def test_hover_shows_the_models_probability_where_the_trace_has_it():
    import copy

    t = copy.deepcopy(load(FIXTURE_NAMES[0]))  # the cached fixture stays read-only
    step = next(i for i, s in enumerate(t.steps) if len(s.verified_nodes) > 1)
    s = t.steps[step]
    before = {v.id: v.hover for v in tree_layout(t, step).nodes}
    assert not any("probability for it after its parent" in h for h in before.values())  # an older trace
    child = s.verified_nodes[1]
    child.target_prob = 0.4321
    after = {v.id: v.hover for v in tree_layout(t, step).nodes}
    assert "the model's probability for it after its parent: 0.4321" in after[child.id]
