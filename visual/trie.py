"""The tree a step verified, as a graph: a networkx DiGraph, a tidy drawing and node-link JSON.

The draft tree is a trie: branches that start with the same tokens share their nodes, so a
node may lie on several lookups' branches (its `sources`). Each node carries its depth, its
token, where it came from (root, g1, a g2 candidate's rank, prompt lookup) and its fate
(accepted, rejected, or pruned before verification). `drafted_graph` rebuilds the trie of
every token the step's lookups fetched, before pruning kept part of it.
"""
from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import networkx as nx
import plotly.graph_objects as go

from logitspec.analysis.drafts import drafted_chains
from logitspec.core.trace import QueryRecord, RunTrace, StepRecord

from .data import branch_nodes, context_before, get_step, step_position, tok
from .fit import SLIDER_PX
from .style import (
    MIN_FONT, MONO_CHAR_EM, MONO_FAMILY, PALETTE, base_layout, blend, node_color_key, pretty, sub_x, theme_colors,
    top_legend, truncate, visible,
)
from .tree_key import key_items
from .tree_layout import ORIGIN_WORDS, path_pieces

FATES = ("accepted", "rejected", "pruned")
SLOT_PX = 34  # vertical pitch of the leaves in the explorer's drawing (a label above each marker)
DEPTH_PX = 120  # horizontal pitch of the depth columns
FIT_DEPTHS = 8  # depth columns shown at once when fitted to the app: readable on a desktop page
LABEL_CHARS = 10
FIT_COL_PX = int(LABEL_CHARS * MIN_FONT * MONO_CHAR_EM) + 16  # a column the page keeps: a whole label and a gap
ELBOW = 0.12  # where an edge turns, in depths after its parent
BONUS = -1  # the bonus token's key where it is laid out beside the tree


def origin_label(origin: str, rank: int | None) -> str:
    """A node's origin in words: root, g1, PLD or "g2 rank r"."""
    if origin == "g2":
        return f"g2 rank {rank}" if rank is not None else "g2"
    return "PLD" if origin == "pld" else origin


def branch_label(q: QueryRecord) -> str:
    """The lookup a branch came from, in the same words as `origin_label`."""
    return origin_label(q.kind, q.candidate_rank)


def fate(pruned: bool, on_path: bool) -> str:
    """What happened to a drafted token: pruned (never verified), accepted or rejected."""
    return "pruned" if pruned else ("accepted" if on_path else "rejected")


def _sources(s: StepRecord) -> dict[int, list[str]]:
    """For each node id, every lookup whose branch runs through it (a shared prefix has several)."""
    out: dict[int, list[str]] = {0: ["root"]} if s.tree else {}
    for qi, q in enumerate(s.queries):
        for _, node in branch_nodes(s, qi):
            if node is not None and branch_label(q) not in out.setdefault(node.id, []):
                out[node.id].append(branch_label(q))
    return out


def step_graph(trace: RunTrace, step: int) -> nx.DiGraph:
    """The step's draft tree as a DiGraph: node = tree node id, edge = parent -> child.

    Node attributes: token, text, depth, position_id, origin ("root"|"g1"|"g2"|"pld"), rank,
    origin_label, sources, fate ("accepted"|"rejected"|"pruned"), prune_reason, accept_prob,
    target_prob. Edges carry `accepted` (both ends on the accepted path). The graph carries the
    step, its root, committed tokens and bonus.
    """
    s = get_step(trace, step)
    ctx = context_before(trace, step)
    pieces = path_pieces(trace, s, ctx)
    sources = _sources(s)
    on_path = set(s.accepted_path)
    g = nx.DiGraph(step=step_position(trace, step), method=trace.method, model=trace.model,
                   context_len=s.context_len, root=s.root, tokens=list(s.tokens), accepted_path=list(s.accepted_path),
                   bonus=s.bonus, bonus_text=None if s.bonus is None else tok(trace, s.bonus, ctx + list(s.tokens)))
    for n in s.tree:
        g.add_node(n.id, token=n.token, text=visible(pieces[n.id].label()), depth=n.depth,
                   position_id=s.context_len + n.depth, origin=n.origin, rank=n.rank,
                   origin_label=origin_label(n.origin, n.rank), sources=sources.get(n.id, []),
                   fate=fate(n.pruned, n.id in on_path), prune_reason=n.prune_reason, accept_prob=n.accept_prob,
                   target_prob=n.target_prob)
    for n in s.tree:
        if n.parent >= 0:
            g.add_edge(n.parent, n.id, accepted=n.id in on_path and n.parent in on_path)
    return g


def drafted_graph(trace: RunTrace, step: int) -> nx.DiGraph:
    """Every token the step's lookups fetched, merged into one trie under the root, before pruning.

    Nodes are numbered in insertion order (g1's branch first, then each candidate's, by rank);
    `tree_id` is the node's id in the step's tree when the tree kept it (else None) and
    `verified` says whether it reached the model.
    """
    s = get_step(trace, step)
    g = nx.DiGraph(step=step_position(trace, step))
    if not s.tree:
        return g
    kept = {(n.parent, n.token): n for n in s.tree if n.parent >= 0}
    g.add_node(0, token=s.root, depth=0, origin="root", rank=None, tree_id=0, verified=True)
    child: dict[tuple[int, int], int] = {}
    for kind, rank, chain in drafted_chains(s):
        parent, tree_parent = 0, 0
        for t in chain:
            node = kept.get((tree_parent, t)) if tree_parent is not None else None
            key = child.get((parent, t))
            if key is None:
                key = child[(parent, t)] = g.number_of_nodes()
                g.add_node(key, token=t, depth=g.nodes[parent]["depth"] + 1, origin=kind, rank=rank,
                           tree_id=node.id if node is not None else None,
                           verified=node is not None and not node.pruned)
                g.add_edge(parent, key)
            parent, tree_parent = key, (node.id if node is not None else None)
    return g


def tidy_positions(g: nx.DiGraph, root: int = 0, align: str = "centre") -> dict[int, tuple[float, float]]:
    """(depth, slot) per node: leaves on consecutive slots in depth-first order (children by id),
    so no two subtrees overlap; each parent centred between its first and last child, or level
    with its first child (align="first": the root stays on top however tall the tree)."""
    pos: dict[int, tuple[float, float]] = {}
    if root not in g:
        return pos
    slot = 0
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = sorted(g.successors(node))
        if not kids:
            pos[node] = (g.nodes[node]["depth"], float(slot))
            slot += 1
        elif done:
            first, last = pos[kids[0]][1], pos[kids[-1]][1]
            pos[node] = (g.nodes[node]["depth"], first if align == "first" else (first + last) / 2)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
    return pos


FOLD_SHOW = 6  # one-token guesses drawn one by one before the rest fold into a single mark


@dataclass
class Folded:
    """The one-token guesses a figure folds into one mark: how many, and how many passed `counted`."""

    nodes: list[int]
    counted: int = 0

    def __bool__(self) -> bool:
        return bool(self.nodes)


def fold_leaves(g: nx.DiGraph, keep: Iterable[int] = (), show: int = FOLD_SHOW,
                counted: Callable[[int], bool] = lambda n: False) -> Folded:
    """Take out of `g` (in place) the root's (node 0's) childless children past the first `show`
    (by id), sparing `keep`: a 64-guess fan of next-next tokens otherwise draws as one smudge."""
    spared = set(keep)
    leaves = [n for n in sorted(g.successors(0)) if g.out_degree(n) == 0 and n not in spared]
    folded = leaves[show:] if len(leaves) > show + 1 else []
    out = Folded(folded, sum(bool(counted(n)) for n in folded))
    g.remove_nodes_from(folded)
    return out


def fold_mark(pos: dict, text: str, c: dict, size: int, root: int = 0) -> tuple[list[go.Scatter], dict]:
    """The folded guesses as one square below the drawn ones, joined to the root by a dotted line,
    and `text` beside it (a scatter pair and an annotation's settings)."""
    x, y = 1, max(p[1] for p in pos.values()) + 1.5
    xr, yr = pos[root]
    line = go.Scatter(x=[xr, xr + ELBOW, xr + ELBOW, x], y=[yr, yr, y, y], mode="lines", hoverinfo="skip",
                      line=dict(color=c["muted"], width=1, dash="dot"))
    mark = go.Scatter(x=[x], y=[y], mode="markers", hoverinfo="skip",
                      marker=dict(symbol="square", size=size, color=c["bg"], line=dict(color=c["muted"], width=1.5)))
    note = dict(x=x, y=y, text=text, showarrow=False, xanchor="left", xshift=size, font=dict(size=size, color=c["text"]))
    return [line, mark], note


def node_link_json(trace: RunTrace, step: int) -> str:
    """The step's graph as networkx node-link JSON ("nodes" and "links")."""
    return json.dumps(nx.node_link_data(step_graph(trace, step), edges="links"), ensure_ascii=False, indent=1)


# ---------------------------------------------------------------- drawing


def edge_trace(g: nx.DiGraph, pos: dict, keep: Callable[[int, int], bool], name: str, color: str, width: float,
               dash: str = "solid") -> go.Scatter:
    """One line trace for the edges `keep` accepts, parent to child, with depth on x."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for a, b in g.edges:
        if keep(a, b) and a in pos and b in pos:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            # Down just after the parent, then across: siblings share one vertical stroke.
            xs += [xa, xa + ELBOW, xa + ELBOW, xb, None]
            ys += [ya, ya, yb, yb, None]
    return go.Scatter(x=xs or [None], y=ys or [None], mode="lines", name=name, hoverinfo="skip",
                      line=dict(color=color, width=width, dash=dash))


def _hover(g: nx.DiGraph, n: int) -> str:
    d = g.nodes[n]
    lines = [f"<b>{html.escape(d['text'], quote=False)}</b>   token id {d['token']} · node {n}",
             f"fate: {d['fate']}" + (f" ({d['prune_reason']})" if d["prune_reason"] else ""),
             "origin: " + html.escape(ORIGIN_WORDS.get(node_color_key(d["origin"], d["rank"]), d["origin_label"])
                                      if d["origin"] != "g2" else d["origin_label"], quote=False),
             f"depth {d['depth']} · position id {d['position_id']}"]
    if len(d["sources"]) > 1:
        lines.append("shared prefix of: " + ", ".join(d["sources"]))
    if d["accept_prob"] is not None:
        lines.append(f"estimated chance of acceptance: {d['accept_prob']:.3f}")
    return "<br>".join(lines)


def _marker(fate: str, colors: list[str], c: dict) -> dict:
    """Accepted: filled, bold outline; rejected: faded fill; pruned: hollow (as in the lanes)."""
    if fate == "accepted":
        return dict(symbol="circle", size=16, color=colors, line=dict(color=c["outline"], width=2.5))
    if fate == "rejected":
        return dict(symbol="circle", size=13, color=[blend(x, c["bg"], 0.45) for x in colors],
                    line=dict(color=colors, width=1.5))
    return dict(symbol="circle-open", size=11, color=colors, line=dict(width=1.5))


def node_traces(g: nx.DiGraph, pos: dict, theme: str, labels: bool = True) -> list[go.Scatter]:
    """One marker trace per fate (colour = origin), token labels to the right, a hover per node."""
    c = theme_colors(theme)
    out = []
    for fate in FATES:
        ns = [n for n in g.nodes if g.nodes[n]["fate"] == fate and n in pos]
        colors = [PALETTE[node_color_key(g.nodes[n]["origin"], g.nodes[n]["rank"])] for n in ns]
        text = [html.escape(truncate(g.nodes[n]["text"], LABEL_CHARS), quote=False) for n in ns]
        out.append(go.Scatter(
            x=[pos[n][0] for n in ns] or [None], y=[pos[n][1] for n in ns] or [None],
            mode="markers+text" if labels else "markers", name=fate, marker=_marker(fate, colors, c),
            text=text if labels else None, textposition="top center",
            textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=c["muted"] if fate == "pruned" else c["text"]),
            customdata=[[n, fate, g.nodes[n]["token"]] for n in ns] or None,
            hovertext=[_hover(g, n) for n in ns] or None, hovertemplate="%{hovertext}<extra></extra>",
        ))
    return out


def trie_figure(trace: RunTrace, step: int, theme: str = "light", fit: bool = False) -> go.Figure:
    """The verified tree as a tidy left-to-right tree: shared prefixes drawn once, the accepted
    path bold, the bonus token after it. `fit`: as wide as its container, showing the depths
    that fit at a readable pitch with a range slider for the rest (for the app)."""
    c = theme_colors(theme)
    g = step_graph(trace, step)
    pos = positions_with_bonus(g, "first")
    fig = go.Figure()
    fates = nx.get_node_attributes(g, "fate")
    fig.add_trace(edge_trace(g, pos, lambda a, b: fates[b] == "pruned", "edge to a pruned token", c["edge"], 1.2, "dot"))
    fig.add_trace(edge_trace(g, pos, lambda a, b: fates[b] == "rejected", "draft edge", c["edge"], 1.4))
    fig.add_trace(edge_trace(g, pos, lambda a, b: g.edges[a, b]["accepted"], "accepted path", PALETTE["accepted"], 5))
    for tr in node_traces(g, pos, theme):
        fig.add_trace(tr)
    path = g.graph["accepted_path"]
    if BONUS in pos:
        (xa, ya), (x, y) = pos[path[-1]], pos[BONUS]
        fig.add_trace(go.Scatter(x=[xa, xa + ELBOW, xa + ELBOW, x], y=[ya, ya, y, y], mode="lines", hoverinfo="skip",
                                 line=dict(color=c["outline"], dash="dot", width=2), showlegend=False))
        fig.add_trace(go.Scatter(
            x=[x], y=[y], mode="markers+text", name="bonus: the model's next token",
            marker=dict(symbol="star", size=20, color=PALETTE["bonus"], line=dict(color=c["outline"], width=1.5)),
            text=[html.escape(truncate(g.graph["bonus_text"], LABEL_CHARS), quote=False)], textposition="top center",
            textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=c["text"]), hoverinfo="skip"))
    return _trie_layout(fig, trace, step, g, pos, theme, fit)


def positions_with_bonus(g: nx.DiGraph, align: str = "centre") -> dict:
    """`tidy_positions` with the bonus token (key BONUS) laid out as the last accepted node's last
    child, so it never lands on a drafted token."""
    path = g.graph["accepted_path"]
    if g.graph["bonus"] is None or not path:
        return tidy_positions(g, align=align)
    h, last = g.copy(), max(g) + 1  # a key after every node's: laid out as the last child
    h.add_node(last, depth=g.nodes[path[-1]]["depth"] + 1)
    h.add_edge(path[-1], last)
    pos = tidy_positions(h, align=align)
    pos[BONUS] = pos.pop(last)
    return pos


def _trie_layout(fig: go.Figure, trace: RunTrace, step: int, g: nx.DiGraph, pos: dict, theme: str,
                 fit: bool = False) -> go.Figure:
    c = theme_colors(theme)
    slots = 1 + max((p[1] for p in pos.values()), default=0)
    depth = 2 + max((p[0] for p in pos.values()), default=0)
    fates = list(nx.get_node_attributes(g, "fate").values())
    shared = sum(1 for n in g.nodes if len(g.nodes[n]["sources"]) > 1)
    i = step_position(trace, step)
    title = (f"Verified trie, step {i}: {fates.count('accepted') + fates.count('rejected')} tokens verified, "
             f"{fates.count('accepted')} accepted (root included)")
    sub = (f"{len(fates)} nodes · {shared} shared by several lookups · {fates.count('pruned')} pruned, hollow · "
           "colour = origin, as in the lanes · position id = context length + depth")
    top = 90 if fit else 250  # the app shows the title and the key in HTML: only the depth axis is on top
    height = int(max(400, slots * SLOT_PX + top + 30))
    layout = base_layout(theme, title, height=height, width=int(max(700, depth * DEPTH_PX + 160)),
                         margin=dict(l=40, r=40, t=top, b=30), hovermode="closest", dragmode="pan",
                         showlegend=not fit)
    layout["title"]["subtitle"] = dict(text=sub, font=dict(size=MIN_FONT + 1, color=c["muted"]))
    top_legend(layout, theme, y_px=96)  # above the depth axis's title and ticks, which take about 70 px
    layout["xaxis"].update(range=[-0.5, depth], title=dict(text="depth"),
                           side="top", dtick=1, showgrid=False, zeroline=False)
    layout["yaxis"].update(range=[slots - 0.4, -0.8], visible=False)
    layout["meta"] = dict(step=i, nodes=len(fates), shared=shared)
    if fit:
        _fit_to_app(layout, title, sub, depth)
    fig.update_layout(layout)
    return pretty(fig)


def _fit_to_app(layout: dict, title: str, sub: str, depth: float) -> None:
    """The app's trie: as wide as its container, its title a caption (caption_html) and its key
    beside it (trie_key_html); a trie deeper than the width holds at FIT_COL_PX per column shows
    its first columns with a slider for the rest (ui/figures.js), so no label runs off the right."""
    layout.update(width=None, autosize=True, title=dict(text=""))
    layout["meta"].update(caption=dict(title=sub_x(title), subtitle=sub_x(sub)),
                          fit={"window": {"col_px": FIT_COL_PX, "range": [-0.5, depth], "slider_px": SLIDER_PX}})
    if depth > FIT_DEPTHS:  # before the page measures its width: at most a desktop's columns
        layout["xaxis"].update(range=[-0.5, FIT_DEPTHS - 0.5], rangeslider=dict(visible=True, thickness=0.06))


def _key_mark(fill: str, line: str, width: float, style: str = "solid", shape: str = "50%") -> str:
    return (f'<span class="key-box" style="background:{fill};border:{width:.0f}px {style} {line};'
            f'border-radius:{shape}"></span>')


def trie_key_html(trace: RunTrace, theme: str = "light") -> str:
    """The trie's key as HTML, for beside the app's trie: the lanes' origin colours, then the trie's
    own marks (circles by fate, the bonus star) and edges."""
    c = theme_colors(theme)
    grey = c["muted"]
    origins = [(_key_mark(it.fill, it.line, 1, shape="2px"), it.name) for it in key_items(trace, theme) if it.rank < 30]
    marks = [
        ('<span class="key-box" style="color:' + PALETTE["bonus"] + ';font-size:18px;line-height:16px">★</span>',
         "bonus: the model's next token"),
        (_key_mark(grey, c["outline"], 3), "accepted: filled, bold outline"),
        (_key_mark(blend(grey, c["bg"], 0.45), grey, 2), "verified, rejected: faded"),
        (_key_mark("transparent", grey, 2), "pruned, not verified: hollow"),
        (f'<span class="key-line" style="border-top:2px solid {c["edge"]}"></span>', "draft edge"),
        (f'<span class="key-line" style="border-top:2px dotted {c["edge"]}"></span>', "edge to a pruned token"),
        (f'<span class="key-line" style="border-top:5px solid {PALETTE["accepted"]}"></span>', "accepted path"),
        (f'<span class="key-line" style="border-top:2px dotted {c["outline"]}"></span>', "to the bonus token"),
    ]
    rows = "".join(f"<li>{mark}<span>{sub_x(html.escape(name, quote=False))}</span></li>"
                   for mark, name in origins + marks)
    return f'<ul class="tree-key" aria-label="Key of the verified trie">{rows}</ul>'
