"""The draft tree of one step, in a tidy layered layout with fixed lanes.

x is the depth in the tree (0 = the root x_{i+1}); y is a lane that never moves between
steps of a run: lane 0 holds the root (and the bonus token after the accepted path),
lane 1 the g1 (or prompt lookup) continuation, lane 1 + r the branch of candidate rank r.
Every node is a box with its token inside; the box's colour says where the token came
from, its fill and outline what happened to it.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import plotly.graph_objects as go

from logitspec.trace import RunTrace, StepRecord, TreeNode

from .data import (
    candidate_by_rank,
    context_before,
    get_step,
    match_text,
    ngram_text,
    query_name,
    query_tail,
    step_position,
    tok,
    token_pieces,
)
from .pieces import TokenPiece, hex_bytes
from .style import (
    MIN_FONT,
    MONO_CHAR_EM,
    MONO_FAMILY,
    PALETTE,
    base_layout,
    blend,
    node_color_key,
    pretty,
    visible,
    text_on,
    theme_colors,
    truncate,
)

LANE_PX = 26  # vertical pitch of the lanes, pixels (many lanes)
LANE_PX_FEW = 48  # ... when there are only a few (prompt lookup, vanilla)
LEGEND_ENTRY_PX = 330  # width of one legend entry
LEGEND_ROW_PX = 23
COL_PX = 68  # horizontal pitch of the depth columns, pixels
BOX_W = 0.84  # box width, in columns
BOX_H = 0.74  # box height, in lanes
LABEL_FONT = MIN_FONT  # token labels inside the boxes (monospace)
LABEL_PAD_PX = 6
MARGIN = dict(l=150, r=30, t=215, b=30)  # t grows with the legend's rows
MIN_PLOT_W = 840
MIN_COLS = 8

ORIGIN_WORDS = {
    "root": "root x_{i+1}: the previous pass's argmax, committed",
    "g1": "g1 continuation (lookup after x_{i+1})",
    "pld": "prompt lookup continuation",
    "g2-top": "g2 branch, candidate rank 1-8",
    "g2-mid": "g2 branch, candidate rank 9-32",
    "g2-tail": "g2 branch, candidate rank 33+",
}
PRUNE_WORDS = {
    "rank": "rank rule: this candidate's branch keeps only a few tokens",
    "capacity": "capacity: the tree was already full",
    "cost": "cost: the modelled time outweighed the expected gain",
}


@dataclass
class NodeView:
    """One box of the picture."""

    id: int  # node id in the step's tree; -1 for the bonus token
    token: int
    lane: int
    depth: int
    status: str  # accepted | rejected | pruned | bonus
    color_key: str
    label: str  # text drawn in the box ("" where there is no room)
    hover: str
    parent: int | None  # node id of the parent (None for the root)
    wanted: bool = False  # a pruned token the model chose next (it equals the bonus)


@dataclass
class TreeLayout:
    nodes: list[NodeView]
    n_lanes: int
    n_cols: int  # depth columns, 0..n_cols-1
    lane_names: list[str]
    width: int
    height: int
    col_px: float
    lane_px: float
    label_chars: int
    edges: dict[str, list[tuple[NodeView, NodeView]]] = field(default_factory=dict)
    margin: dict[str, int] = field(default_factory=lambda: dict(MARGIN))

    def node(self, node_id: int) -> NodeView:
        return next(n for n in self.nodes if n.id == node_id)


def _lane(node: TreeNode) -> int:
    if node.origin == "root":
        return 0
    if node.origin == "g2":
        return 1 + (node.rank or 1)
    return 1  # g1 / pld


def _max_rank(trace: RunTrace) -> int:
    """The deepest candidate rank any step's tree drew: small trees get a short figure."""
    k = 1 if trace.method == "logitspec" else 0
    for s in trace.steps:
        for n in s.tree:
            if n.origin == "g2" and n.rank:
                k = max(k, n.rank)
    return k


def lane_count(trace: RunTrace) -> int:
    """Lanes the run needs, the same for every step: root, g1 (or PLD), one per candidate rank."""
    if trace.method == "vanilla":
        return 1
    if trace.method == "pld":
        return 2
    return 2 + _max_rank(trace)


def lane_names(trace: RunTrace) -> list[str]:
    names = ["x_{i+1} · bonus"]
    if trace.method == "pld":
        names.append("prompt lookup")
    elif trace.method != "vanilla":
        names.append("g1 lookup")
        names += [f"rank {r}" for r in range(1, lane_count(trace) - 1)]
    return names


def _origins(trace: RunTrace) -> list[str]:
    if trace.method == "pld":
        return ["root", "pld"]
    if trace.method == "vanilla":
        return ["root"]
    return ["root", "g1", "g2-top", "g2-mid", "g2-tail"]


def legend_size(trace: RunTrace) -> int:
    """Entries of the tree's legend: origins, bonus, four node styles, four edge styles."""
    return len(_origins(trace)) + 1 + 3 + (trace.method != "vanilla") + 4


def column_count(trace: RunTrace) -> int:
    """Depth columns for the whole run: the deepest node anywhere, plus one for the bonus."""
    deepest = 0
    for s in trace.steps:
        for n in s.tree:
            deepest = max(deepest, n.depth)
    return max(deepest + 2, MIN_COLS)


def label_chars(col_px: float) -> int:
    """How many monospace characters fit inside a box of a column this wide."""
    return max(0, math.floor((col_px * BOX_W - LABEL_PAD_PX) / (LABEL_FONT * MONO_CHAR_EM)))


def path_pieces(trace: RunTrace, s: StepRecord, ctx: list[int]) -> dict[int, TokenPiece]:
    """Each node's piece decoded along its path from the context (root first), so a node that
    completes a character split across tokens shows the whole character."""
    by_id = {n.id: n for n in s.tree}
    out: dict[int, TokenPiece] = {}
    for node in s.tree:
        path, cur = [], node
        while cur is not None:
            path.append(cur.token)
            cur = by_id.get(cur.parent)
        # Not final: a token whose character a child would complete shows "⋯", not bytes.
        out[node.id] = token_pieces(trace, path[::-1], ctx, final=False)[-1]
    return out


def _head(trace: RunTrace, token: int, label: str) -> str:
    """The hover's first line: the token as shown, its id, and its bytes when they are not whole characters."""
    raw = trace.bytes_of(token)
    try:
        raw.decode("utf-8")
        extra = ""
    except UnicodeDecodeError:
        extra = f" · bytes {hex_bytes(raw)}"
    return f"<b>{html.escape(label, quote=False)}</b>   token id {token}{html.escape(extra, quote=False)}"


def _hover(trace: RunTrace, s: StepRecord, node: TreeNode | None, status: str, depth: int,
           token: int, color_key: str, extra: str = "", label: str | None = None, ctx: list[int] = ()) -> str:
    def e(text: str) -> str:
        return html.escape(text, quote=False)

    cands = candidate_by_rank(s)
    lines = [_head(trace, token, label if label is not None else tok(trace, token))]
    words = {
        "accepted": "accepted: on the path the model confirmed",
        "rejected": "verified, rejected: not on the path the model confirmed",
        "bonus": "bonus: the model's own token after the accepted path (next step's root)",
    }
    if status == "pruned" and node is not None:
        why = PRUNE_WORDS.get(node.prune_reason or "", node.prune_reason or "cut")
        if node.prune_reason == "rank" and node.origin in ("g1", "pld"):
            limit = trace.settings.get("continuation" if node.origin == "g1" else "pld_tokens")
            why = f"length limit: the continuation keeps at most {limit} tokens" if limit else "length limit"
        lines.append(f"status: pruned, never verified ({e(why)})")
    else:
        lines.append("status: " + words[status])
    if node is not None:
        lines.append("origin: " + e(ORIGIN_WORDS.get(color_key, node.origin)))
        if node.origin == "g2" and node.rank is not None:
            c = cands.get(node.rank)
            pr = f", probability {c.prob:.4f}" if c is not None else ""
            what = "this candidate" if node.depth == 1 else "branch of candidate"
            cand_txt = f" {e(tok(trace, c.token, list(ctx) + [s.root]))}" if (c is not None and node.depth != 1) else ""
            lines.append(f"rank {node.rank}{pr} ({what}{cand_txt})")
        if node.accept_prob is not None:
            lines.append(f"estimated chance of acceptance: {node.accept_prob:.3f}")
        if node.target_prob is not None:
            lines.append(f"the model's probability for it after its parent: {node.target_prob:.4f}")
    lines.append(f"depth {depth} · position id {s.context_len + depth} (context {s.context_len} + depth)")
    if node is not None and node.query is not None and 0 <= node.query < len(s.queries):
        q = s.queries[node.query]
        lines.append("query: " + e(query_name(trace, s, node.query, ctx)))
        lines.append("n-gram: " + e(match_text(trace, q, query_tail(s, q, ctx))))
    elif node is not None and node.origin == "root":
        lines.append("query: none (the previous forward pass's argmax)")
    if extra:
        lines.append(extra)
    return "<br>".join(lines)


def tree_layout(trace: RunTrace, step: int, width: int | None = None) -> TreeLayout:
    """Where every box of the step's tree goes, its style, label and hover text."""
    s = get_step(trace, step)
    n_lanes, n_cols = lane_count(trace), column_count(trace)
    plot_w = max(MIN_PLOT_W, n_cols * COL_PX) if width is None else max(200, width - MARGIN["l"] - MARGIN["r"])
    col_px = plot_w / n_cols
    lane_px = LANE_PX if n_lanes > 8 else LANE_PX_FEW
    per_row = max(1, int((plot_w + MARGIN["l"] - 60) // LEGEND_ENTRY_PX))
    rows = math.ceil(legend_size(trace) / per_row)
    margin = dict(MARGIN, t=int(150 + rows * LEGEND_ROW_PX))
    fig_w = int(round(plot_w + margin["l"] + margin["r"]))
    fig_h = int(margin["t"] + margin["b"] + n_lanes * lane_px)
    chars = label_chars(col_px)

    path = list(s.accepted_path)
    on_path = set(path)
    ctx = context_before(trace, step)
    pieces = path_pieces(trace, s, ctx)
    views: dict[int, NodeView] = {}
    for node in s.tree:
        status = "pruned" if node.pruned else ("accepted" if node.id in on_path else "rejected")
        key = node_color_key(node.origin, node.rank)
        extra = ""
        wanted = bool(node.pruned and s.bonus is not None and path and node.parent == path[-1]
                      and node.token == s.bonus)
        if wanted:
            extra = "<b>pruning cut the very token the model wanted next</b>"
        text = visible(pieces[node.id].label())
        views[node.id] = NodeView(
            id=node.id, token=node.token, lane=_lane(node), depth=node.depth, status=status,
            color_key=key, label=truncate(text, chars) if chars >= 2 else "",
            hover=_hover(trace, s, node, status, node.depth, node.token, key, extra, text, ctx),
            parent=node.parent if node.parent >= 0 else None, wanted=wanted,
        )
    nodes = list(views.values())
    edges: dict[str, list[tuple[NodeView, NodeView]]] = {"path": [], "draft": [], "pruned": [], "bonus": []}
    for v in nodes:
        if v.parent is None:
            continue
        p = views[v.parent]
        kind = "path" if (v.id in on_path and p.id in on_path) else ("pruned" if v.status == "pruned" else "draft")
        edges[kind].append((p, v))
    if s.bonus is not None and path:
        last = views[path[-1]]
        depth = last.depth + 1
        text = tok(trace, s.bonus, ctx + list(s.tokens))
        b = NodeView(
            id=-1, token=s.bonus, lane=0, depth=depth, status="bonus", color_key="bonus",
            label=truncate(text, chars) if chars >= 2 else "",
            hover=_hover(trace, s, None, "bonus", depth, s.bonus, "bonus", label=text, ctx=ctx), parent=last.id,
        )
        nodes.append(b)
        edges["bonus"].append((last, b))
    return TreeLayout(nodes=nodes, n_lanes=n_lanes, n_cols=n_cols, lane_names=lane_names(trace),
                      width=fig_w, height=fig_h, col_px=col_px, lane_px=lane_px, label_chars=chars, edges=edges,
                      margin=margin)


def _elbow(p: NodeView, c: NodeView) -> tuple[list[float | None], list[float | None]]:
    x0, x1 = p.depth + BOX_W / 2, c.depth - BOX_W / 2
    if p.lane == c.lane:
        return [x0, x1, None], [p.lane, c.lane, None]
    xm = c.depth - 0.5
    return [x0, xm, xm, x1, None], [p.lane, p.lane, c.lane, c.lane, None]


def _edge_trace(pairs, name, color, width, dash, showlegend=True) -> go.Scatter:
    xs: list[float | None] = []
    ys: list[float | None] = []
    for p, c in pairs:
        ex, ey = _elbow(p, c)
        xs += ex
        ys += ey
    # An empty edge set keeps one gap point so its legend entry stays (the legend never jumps).
    return go.Scatter(x=xs or [None], y=ys or [None], mode="lines", name=name, hoverinfo="skip",
                      line=dict(color=color, width=width, dash=dash), showlegend=showlegend,
                      legendrank=500)


def _legend_marker(name: str, fill: str, line_color: str, line_width: float, symbol: str = "square",
                   rank: int = 100) -> go.Scatter:
    return go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip", legendrank=rank,
                      marker=dict(symbol=symbol, size=18, color=fill, line=dict(color=line_color, width=line_width)))


def tree_figure(trace: RunTrace, step: int, theme: str = "light", width: int | None = None) -> go.Figure:
    """The draft tree of one step: where each token came from and what the model did with it."""
    c = theme_colors(theme)
    s = get_step(trace, step)
    lay = tree_layout(trace, step, width)
    fig = go.Figure()

    # Boxes: shapes below the edges and labels (set at once: add_shape is quadratic).
    shapes = []
    for v in lay.nodes:
        base = PALETTE[v.color_key]
        if v.status == "accepted":
            fill, line, lw, dash = base, c["outline"], 3, "solid"
        elif v.status == "rejected":
            fill, line, lw, dash = blend(base, c["bg"], 0.45), base, 1.5, "solid"
        elif v.status == "pruned":
            # Hollow; tinted with the bonus colour when the model wanted exactly this cut token.
            fill = blend(PALETTE["bonus"], c["bg"], 0.45) if v.wanted else c["bg"]
            line, lw, dash = base, 1.5, "dash"
        else:  # bonus
            fill, line, lw, dash = base, c["outline"], 2, "dot"
        shapes.append(dict(type="rect", x0=v.depth - BOX_W / 2, x1=v.depth + BOX_W / 2,
                           y0=v.lane - BOX_H / 2, y1=v.lane + BOX_H / 2, layer="below",
                           fillcolor=fill, line=dict(color=line, width=lw, dash=dash),
                           name=f"node {v.id}" if v.id >= 0 else "bonus"))

    # Edges.
    fig.add_trace(_edge_trace(lay.edges["draft"], "draft edge", c["edge"], 1.3, "solid"))
    fig.add_trace(_edge_trace(lay.edges["pruned"], "edge to a pruned token", c["edge"], 1.3, "dash"))
    fig.add_trace(_edge_trace(lay.edges["path"], "accepted path", PALETTE["accepted"], 5, "solid"))
    fig.add_trace(_edge_trace(lay.edges["bonus"], "to the bonus token", c["outline"], 2.5, "dot"))

    # Labels inside the boxes.
    def label_color(v: NodeView) -> str:
        if v.status in ("accepted", "bonus"):
            return text_on(PALETTE[v.color_key])
        return c["text"] if v.status == "rejected" else c["muted"]

    shown = [v for v in lay.nodes if v.label]
    fig.add_trace(go.Scatter(
        x=[v.depth for v in shown], y=[v.lane for v in shown], mode="text", name="token labels",
        text=[html.escape(v.label, quote=False) for v in shown], textposition="middle center", hoverinfo="skip",
        textfont=dict(family=MONO_FAMILY, size=LABEL_FONT, color=[label_color(v) for v in shown]),
        customdata=[v.id for v in shown], showlegend=False,
    ))

    # Invisible hover targets, one trace per status (the tests read the node ids from them).
    for status, title in (("accepted", "accepted path nodes"), ("rejected", "verified, rejected nodes"),
                          ("pruned", "pruned nodes"), ("bonus", "bonus token")):
        group = [v for v in lay.nodes if v.status == status]
        if status == "accepted":
            group.sort(key=lambda v: v.depth)
        fig.add_trace(go.Scatter(
            x=[v.depth for v in group] or [None], y=[v.lane for v in group] or [None], mode="markers",
            name=title, showlegend=False, customdata=[[v.id, v.status, v.token] for v in group] or None,
            hovertext=[v.hover for v in group] or None, hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(symbol="square", size=max(12, min(lay.col_px * BOX_W, lay.lane_px * BOX_H)),
                        opacity=0, color=c["bg"]),
            hoverlabel=dict(bgcolor=c["bg"], font=dict(color=c["text"], family=MONO_FAMILY, size=MIN_FONT + 1),
                            bordercolor=[PALETTE[v.color_key] for v in group] or c["edge"]),
        ))

    # Legend: colours, then fills, then lines.
    grey = c["muted"]
    origins = _origins(trace)
    legend_names = {"root": "root x_{i+1}", "g1": "g1 continuation", "pld": "prompt lookup chain",
                    "g2-top": "g2 branch, rank 1-8", "g2-mid": "g2 branch, rank 9-32",
                    "g2-tail": "g2 branch, rank 33+"}
    for i, key in enumerate(origins):
        fig.add_trace(_legend_marker(legend_names[key], PALETTE[key], PALETTE[key], 1, rank=10 + i))
    fig.add_trace(_legend_marker("bonus: model's next token", PALETTE["bonus"], c["outline"], 2, rank=30))
    fig.add_trace(_legend_marker("accepted: filled, bold outline", grey, c["outline"], 3, rank=40))
    fig.add_trace(_legend_marker("verified, rejected: faded", blend(grey, c["bg"], 0.45), grey, 1.5, rank=41))
    fig.add_trace(_legend_marker("pruned, never verified: hollow, dashed", grey, grey, 2,
                                 symbol="square-open", rank=42))
    if trace.method not in ("vanilla",):
        fig.add_trace(_legend_marker("pruned, yet the model's next token", blend(PALETTE["bonus"], c["bg"], 0.45),
                                     grey, 1.5, rank=43))

    # Words.
    i = step_position(trace, step)
    verified = sum(not n.pruned for n in s.tree)
    pruned = len(s.tree) - verified
    drafts_ok = max(0, len(s.tokens) - 1)
    title = (f"Draft tree, step {i} of 0–{len(trace.steps) - 1}: {verified} token{'s' if verified != 1 else ''} "
             f"verified in one pass, {drafts_ok} draft token{'s' if drafts_ok != 1 else ''} accepted")
    ctx = context_before(trace, step)
    sub = f"root x_{{i+1}} = {html.escape(ngram_text(trace, [s.root], ctx), quote=False)}"
    if pruned:
        sub += f" · {pruned} pruned token{'s' if pruned != 1 else ''} shown dashed"
    if s.bonus is not None:
        sub += f" · bonus (next root) = {html.escape(ngram_text(trace, [s.bonus], ctx + list(s.tokens)), quote=False)}"
    if not s.forward:
        sub += " · no forward pass needed: the root was the last token"
    layout = base_layout(theme, title, width=lay.width, height=lay.height, margin=lay.margin,
                         hovermode="closest", dragmode="pan")
    layout["title"]["subtitle"] = dict(text=sub, font=dict(size=MIN_FONT + 2, color=c["muted"]))
    layout["title"]["y"] = 1 - 12 / lay.height
    layout["title"]["yanchor"] = "top"
    layout["title"]["yref"] = "container"
    layout["legend"].update(orientation="h", x=0, xanchor="left", y=1 + 62 / (lay.height - lay.margin["t"] - lay.margin["b"]),
                            yanchor="bottom", traceorder="normal", entrywidth=0, font=dict(size=MIN_FONT + 1, color=c["text"]))
    layout["xaxis"].update(
        range=[-0.6, lay.n_cols - 0.5], tickvals=list(range(lay.n_cols)),
        ticktext=[str(d) for d in range(lay.n_cols)], side="top", showgrid=False, zeroline=False,
        title=dict(text=f"Depth in the tree (position id = {s.context_len} + depth)", standoff=6,
                   font=dict(size=MIN_FONT + 2, color=c["text"])),
        fixedrange=False,
    )
    layout["yaxis"].update(
        range=[lay.n_lanes - 0.5, -0.5], tickvals=list(range(lay.n_lanes)), ticktext=lay.lane_names,
        showgrid=False, zeroline=False, showline=False, tickfont=dict(size=MIN_FONT, color=c["text"]),
        title=dict(text="Branch", font=dict(size=MIN_FONT + 2, color=c["text"])),
    )
    layout["shapes"] = shapes
    layout["meta"] = dict(step=i, n_lanes=lay.n_lanes, n_cols=lay.n_cols, label_font=LABEL_FONT)
    fig.update_layout(layout)
    return pretty(fig)
