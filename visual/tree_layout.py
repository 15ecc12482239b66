"""Where each box of one step's draft tree goes, and its style, label and hover words.

x is the depth in the tree (0 = the root x_{i+1}); y is the node's lane (visual.tree_lanes),
which never moves between steps of a run. Every node is a box with its token inside; the
box's colour says where the token came from, its fill and outline what happened to it.

A compact tree draws only the lanes with something verified in them (or the token the
model wanted next), and only as deep as the step's own tree: a 64-rank tree then fits a
screen. The same tree is drawn three ways (TreeLook.mode): "page", a figure of its own natural
size (files, the README); "app", filling the app's container, its key and words beside it
in HTML (visual.fit); "slide", 16:9 for a download.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from logitspec.analysis.lanes import node_sources
from logitspec.core.trace import RunTrace, StepRecord, TreeNode

from .data import (
    candidate_by_rank,
    candidate_words,
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
from .baselines import BASELINE_METHODS as BASELINES
from .counts import plural
from .fit import APP_WIDE_PLOT_W, SLIDE_H, SLIDE_PAD, SLIDE_W, right_margin, title_block
from .pieces import TokenPiece, hex_bytes
from .style import MIN_FONT, MONO_CHAR_EM, TITLE_SIZE, node_color_key, truncate, visible
from .tree_key import key_items, legend_size
from .tree_lanes import lane_count, lane_names, node_lanes, shown_lanes, wanted_ids

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
MIN_COLS_COMPACT = 6
APP_MARGIN = dict(l=10, r=10, t=66, b=10)  # the lane names widen l by themselves (automargin)
APP_LANES_PX = 720  # a compact tree's lanes share about a screen's height ...
APP_MIN_LANE_PX = 11  # ... down to this pitch
AXIS_TOP_PX = 62  # the depth axis's ticks and title, above the plot
SLIDE_LANE_NAMES_PX = 150

# Each node source's hover words, from the lane table (logitspec/analysis/lanes.py).
ORIGIN_WORDS = {key: src.words for key, src in node_sources().items()}
PRUNE_WORDS = {
    "rank": "rank rule: this candidate's branch keeps only a few tokens",
    "capacity": "capacity: the tree was already full",
    "cost": "cost: the modelled time outweighed the expected gain",
}
STATUS_WORDS = {
    "accepted": "accepted: on the path the model confirmed",
    "rejected": "verified, rejected: not on the path the model confirmed",
    "bonus": "bonus: the model's own token after the accepted path (next step's root)",
}


@dataclass(frozen=True)
class TreeLook:
    """How the tree is drawn: for a page, the app or a slide (see the module's docstring)."""

    mode: str = "page"
    compact: bool = False
    width: int | None = None  # page: the figure's width (None: its natural width)


@dataclass
class NodeView:
    """One box of the picture."""

    id: int  # node id in the step's tree; -1 for the bonus token
    token: int
    lane: int  # the row it is drawn in (its lane, or the lane's place among the lanes shown)
    depth: int
    status: str  # accepted | rejected | pruned | bonus
    color_key: str
    label: str  # text drawn in the box ("" where there is no room)
    hover: str
    parent: int | None  # node id of the parent (None for the root)
    wanted: bool = False  # a pruned token the model chose next (it equals the bonus)
    full: str = ""  # the whole token as shown, before cutting it to the box


@dataclass
class Frame:
    """The figure's size, and the pitch of its columns and lanes, in pixels."""

    width: int | None  # None: the figure fills its container
    height: int
    margin: dict[str, int]
    col_px: float
    lane_px: float
    label_chars: int
    title_px: int = 0  # a slide's title block


@dataclass
class TreeLayout:
    nodes: list[NodeView]
    n_lanes: int
    n_cols: int  # depth columns, 0..n_cols-1
    lane_names: list[str]
    width: int | None
    height: int
    col_px: float
    lane_px: float
    label_chars: int
    edges: dict[str, list[tuple[NodeView, NodeView]]] = field(default_factory=dict)
    margin: dict[str, int] = field(default_factory=lambda: dict(MARGIN))
    hidden: int = 0  # lanes of the run the tree leaves out
    title_px: int = 0
    notes: list[str] = field(default_factory=list)  # what is not drawn, in words
    tail: tuple[int, int, int] | None = None  # a slide's cut lookup chain: (tokens cut, column, row)

    def node(self, node_id: int) -> NodeView:
        return next(n for n in self.nodes if n.id == node_id)


# ---------------------------------------------------------------- what a drawing keeps

@dataclass
class Selection:
    """What a drawing of a step keeps: its lanes, how deep, and what it leaves out."""

    lanes: list[int]
    max_depth: int  # no node deeper is drawn
    n_cols: int
    notes: list[str] = field(default_factory=list)
    tail: int = 0  # lookup-chain tokens deeper than max_depth


def _slide_cut(s: StepRecord, lanes: list[int], lane_of: dict[int, int]) -> tuple[list[int], int, int]:
    """A slide keeps the branches that matter to the step: lanes of one rejected candidate
    token go, and the lookup chain stops a column past the accepted path or the deepest other
    branch. Returns the lanes, the depth kept, and how many candidate lanes went."""
    by_lane: dict[int, list[TreeNode]] = {}
    for n in s.tree:
        by_lane.setdefault(lane_of[n.id], []).append(n)
    keep_ids = set(s.accepted_path) | wanted_ids(s)
    kept = [x for x in lanes if x <= 1 or any(n.id in keep_ids for n in by_lane[x])
            or sum(not n.pruned for n in by_lane[x]) > 1]
    others = max((n.depth for x in kept if x != 1 for n in by_lane.get(x, [])), default=0)
    return kept, max(len(s.accepted_path), others, MIN_COLS_COMPACT - 2), len(lanes) - len(kept)


def select(trace: RunTrace, step: int, look: TreeLook) -> Selection:
    """The lanes and depths `look` draws: every lane, the compact ones, or a slide's cut."""
    s = get_step(trace, step)
    slide = look.mode == "slide"
    lanes = shown_lanes(trace, step, look.compact or slide)
    hidden = lane_count(trace) - len(lanes)
    notes = [plural(hidden, "empty or pruned-only branch", "empty or pruned-only branches")] if hidden else []
    if not (look.compact or slide):
        return Selection(lanes, column_count(trace), column_count(trace), notes)
    if not slide:
        n_cols = _step_columns(s, set(lanes), node_lanes(trace, s))
        return Selection(lanes, n_cols, n_cols, notes)
    lane_of = node_lanes(trace, s)
    lanes, depth, folded = _slide_cut(s, lanes, lane_of)
    if folded:
        notes.append(plural(folded, "one-token candidate") + ", verified and rejected")
    # lane 1 is a lookup's chain; in a recycled tree or a baseline's, a branch
    chain = trace.method != "recycling" and trace.method not in BASELINES
    tail = sum(1 for n in s.tree if chain and lane_of[n.id] == 1 and n.depth > depth)
    if tail:
        notes.append(plural(tail, "more lookup-chain token"))
    return Selection(lanes, depth, depth + 2, notes, tail)


def column_count(trace: RunTrace) -> int:
    """Depth columns for the whole run: the deepest node anywhere, plus one for the bonus."""
    deepest = 0
    for s in trace.steps:
        for n in s.tree:
            deepest = max(deepest, n.depth)
    return max(deepest + 2, MIN_COLS)


def _step_columns(s: StepRecord, lanes: set[int], lane_of: dict[int, int]) -> int:
    """Depth columns for one step's drawn nodes, plus one for the bonus."""
    deepest = max((n.depth for n in s.tree if lane_of[n.id] in lanes), default=0)
    return max(deepest + 2, MIN_COLS_COMPACT)


def label_chars(col_px: float) -> int:
    """How many monospace characters fit inside a box of a column this wide."""
    return max(0, math.floor((col_px * BOX_W - LABEL_PAD_PX) / (LABEL_FONT * MONO_CHAR_EM)))


# ---------------------------------------------------------------- the frame

def _page_frame(trace: RunTrace, n_rows: int, n_cols: int, width: int | None) -> Frame:
    """A figure of its own size: wide enough for readable labels, the legend on top."""
    plot_w = max(MIN_PLOT_W, n_cols * COL_PX) if width is None else max(200, width - MARGIN["l"] - MARGIN["r"])
    lane_px = LANE_PX if n_rows > 8 else LANE_PX_FEW
    per_row = max(1, int((plot_w + MARGIN["l"] - 60) // LEGEND_ENTRY_PX))
    rows = math.ceil(legend_size(trace) / per_row)
    margin = dict(MARGIN, t=int(150 + rows * LEGEND_ROW_PX))
    col_px = plot_w / n_cols
    return Frame(width=int(round(plot_w + margin["l"] + margin["r"])),
                 height=int(margin["t"] + margin["b"] + n_rows * lane_px),
                 margin=margin, col_px=col_px, lane_px=lane_px, label_chars=label_chars(col_px))


def _app_frame(n_rows: int, n_cols: int, compact: bool) -> Frame:
    """The container's width (labels first cut for APP_WIDE_PLOT_W); the height the lanes need. A
    compact tree of many lanes packs them into about a screen, labels left to hover and tap."""
    lane_px = LANE_PX if n_rows > 8 else LANE_PX_FEW
    if compact and n_rows > 8:
        lane_px = max(APP_MIN_LANE_PX, min(LANE_PX, APP_LANES_PX / n_rows))
    margin = dict(APP_MARGIN)
    col_px = APP_WIDE_PLOT_W / n_cols
    chars = label_chars(col_px) if lane_px * BOX_H >= LABEL_FONT else 0
    return Frame(width=None, height=int(margin["t"] + margin["b"] + n_rows * lane_px), margin=margin,
                 col_px=col_px, lane_px=lane_px, label_chars=chars)


def _slide_frame(trace: RunTrace, n_rows: int, n_cols: int, title_px: int) -> Frame:
    """16:9: the title on top, the key on the right, the lanes sharing the height left."""
    key_px = right_margin([it.name for it in key_items(trace)], MIN_FONT + 1)
    margin = dict(l=SLIDE_LANE_NAMES_PX, r=key_px, t=title_px + AXIS_TOP_PX, b=24)
    col_px = (SLIDE_W - margin["l"] - margin["r"]) / n_cols
    lane_px = min(LANE_PX_FEW, (SLIDE_H - margin["t"] - margin["b"]) / n_rows)
    chars = label_chars(col_px) if lane_px * BOX_H >= LABEL_FONT else 0
    return Frame(width=SLIDE_W, height=SLIDE_H, margin=margin, col_px=col_px, lane_px=lane_px,
                 label_chars=chars, title_px=title_px)


# ---------------------------------------------------------------- nodes and words

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
        # Not final: a token whose character a child would complete shows its bytes of it as ‹hex›.
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


def _status_line(trace: RunTrace, node: TreeNode | None, status: str) -> str:
    if status != "pruned" or node is None:
        return "status: " + STATUS_WORDS[status]
    why = PRUNE_WORDS.get(node.prune_reason or "", node.prune_reason or "cut")
    if node.prune_reason == "rank" and node.origin in ("g1", "pld"):
        limit = trace.settings.get("continuation" if node.origin == "g1" else "pld_tokens")
        why = f"length limit: the continuation keeps at most {limit} tokens" if limit else "length limit"
    return f"status: pruned, never verified ({html.escape(why, quote=False)})"


def _node_lines(trace: RunTrace, s: StepRecord, node: TreeNode, color_key: str, ctx: list[int]) -> list[str]:
    """The hover's lines on where a node came from: origin, rank, the model's numbers."""
    lines = ["origin: " + html.escape(ORIGIN_WORDS.get(color_key, node.origin), quote=False)]
    if node.origin == "g2" and node.rank is not None:
        c = candidate_by_rank(s).get(node.rank)
        pr = f", probability {c.prob:.4f}" if c is not None else ""
        what = "this candidate" if node.depth == 1 else "branch of candidate"
        cand = f" {html.escape(tok(trace, c.token, ctx + [s.root]), quote=False)}" if (c is not None and node.depth != 1) else ""
        lines.append(f"{candidate_words(trace, node.rank).removeprefix('candidate ')}{pr} ({what}{cand})")
    if node.origin == "recycled" and node.rank is not None:
        lines.append(html.escape(recycled_words(trace, s, node, ctx), quote=False))
    if node.accept_prob is not None:
        lines.append(f"estimated chance of acceptance: {node.accept_prob:.3f}")
    if node.target_prob is not None:
        lines.append(f"the model's probability for it after its parent: {node.target_prob:.4f}")
    return lines


def recycled_words(trace: RunTrace, s: StepRecord, node: TreeNode, ctx: list[int]) -> str:
    """Where a recycled node came from: its parent's row in the matrix and its rank there (and, a
    hybrid's candidate, its probability in this step's logits)."""
    parent = next((n for n in s.tree if n.id == node.parent), None)
    row = f'"{tok(trace, parent.token, ctx)}"' if parent is not None else "its parent"
    kept = trace.settings.get("recycle_k", 8)
    said = f"matrix row of {row}: rank {node.rank} of the {kept} successors an earlier pass predicted after it"
    k = trace.settings.get("k")
    c = candidate_by_rank(s).get(k + node.rank) if node.depth == 1 and isinstance(k, int) else None
    return said + (f"; probability {c.prob:.4f} in this step's logits" if c is not None else "")


def _hover(trace: RunTrace, s: StepRecord, node: TreeNode | None, status: str, depth: int,
           token: int, color_key: str, extra: str = "", label: str | None = None, ctx: list[int] = ()) -> str:
    ctx = list(ctx)
    lines = [_head(trace, token, label if label is not None else tok(trace, token)), _status_line(trace, node, status)]
    if node is not None:
        lines += _node_lines(trace, s, node, color_key, ctx)
    lines.append(f"depth {depth} · position id {s.context_len + depth} (context {s.context_len} + depth)")
    if node is not None and node.query is not None and 0 <= node.query < len(s.queries):
        q = s.queries[node.query]
        lines.append("query: " + html.escape(query_name(trace, s, node.query, ctx), quote=False))
        lines.append("n-gram: " + html.escape(match_text(trace, q, query_tail(s, q, ctx)), quote=False))
    elif node is not None and node.origin == "root":
        lines.append("query: none (the previous forward pass's argmax)")
    if extra:
        lines.append(extra)
    return "<br>".join(lines)


def _cut(text: str, chars: int) -> str:
    return truncate(text, chars) if chars >= 2 else ""


def _node_views(trace: RunTrace, step: int, rows: dict[int, int], chars: int,
                max_depth: int) -> dict[int, NodeView]:
    """A box for every node in a drawn lane, down to `max_depth`."""
    s = get_step(trace, step)
    on_path = set(s.accepted_path)
    wanted = wanted_ids(s)
    ctx = context_before(trace, step)
    pieces = path_pieces(trace, s, ctx)
    lane_of = node_lanes(trace, s)
    views: dict[int, NodeView] = {}
    for node in s.tree:
        if lane_of[node.id] not in rows or node.depth > max_depth:
            continue
        status = "pruned" if node.pruned else ("accepted" if node.id in on_path else "rejected")
        key = node_color_key(node.origin, node.rank)
        extra = "<b>pruning cut the very token the model wanted next</b>" if node.id in wanted else ""
        text = visible(pieces[node.id].label())
        views[node.id] = NodeView(
            id=node.id, token=node.token, lane=rows[lane_of[node.id]], depth=node.depth, status=status,
            color_key=key, label=_cut(text, chars), full=text,
            hover=_hover(trace, s, node, status, node.depth, node.token, key, extra, text, ctx),
            parent=node.parent if node.parent >= 0 else None, wanted=node.id in wanted,
        )
    return views


def _bonus_view(trace: RunTrace, step: int, last: NodeView, chars: int) -> NodeView:
    """The model's own token after the accepted path, drawn right after its last node."""
    s = get_step(trace, step)
    ctx = context_before(trace, step)
    depth = last.depth + 1
    text = tok(trace, s.bonus, ctx + list(s.tokens))
    return NodeView(id=-1, token=s.bonus, lane=0, depth=depth, status="bonus", color_key="bonus",
                    label=_cut(text, chars), full=text, parent=last.id,
                    hover=_hover(trace, s, None, "bonus", depth, s.bonus, "bonus", label=text, ctx=ctx))


def _edges(views: dict[int, NodeView], on_path: set[int]) -> dict[str, list[tuple[NodeView, NodeView]]]:
    edges: dict[str, list[tuple[NodeView, NodeView]]] = {"path": [], "draft": [], "pruned": [], "bonus": []}
    for v in views.values():
        if v.parent is None:
            continue
        p = views[v.parent]
        kind = "path" if (v.id in on_path and p.id in on_path) else ("pruned" if v.status == "pruned" else "draft")
        edges[kind].append((p, v))
    return edges


def title_words(trace: RunTrace, step: int, notes: list[str]) -> tuple[str, str]:
    """The tree's title and subtitle."""
    s = get_step(trace, step)
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
    if notes:
        sub += " · not drawn: " + ", ".join(notes)
    return title, sub


def tree_layout(trace: RunTrace, step: int, width: int | None = None, look: TreeLook | None = None) -> TreeLayout:
    """Where every box of the step's tree goes, its style, label and hover text."""
    look = look or TreeLook(width=width)
    s = get_step(trace, step)
    sel = select(trace, step, look)
    lanes, n_cols = sel.lanes, sel.n_cols
    rows = {lane: r for r, lane in enumerate(lanes)}
    if look.mode == "app":
        frame = _app_frame(len(lanes), n_cols, look.compact)
    elif look.mode == "slide":
        title, sub = title_words(trace, step, sel.notes)
        title_px = title_block(title, sub, TITLE_SIZE, MIN_FONT + 2, SLIDE_W - 2 * SLIDE_PAD)[2]
        frame = _slide_frame(trace, len(lanes), n_cols, title_px)
    else:
        frame = _page_frame(trace, len(lanes), n_cols, look.width)
    views = _node_views(trace, step, rows, frame.label_chars, sel.max_depth)
    edges = _edges(views, set(s.accepted_path))
    nodes = list(views.values())
    if s.bonus is not None and s.accepted_path:
        b = _bonus_view(trace, step, views[s.accepted_path[-1]], frame.label_chars)
        nodes.append(b)
        edges["bonus"].append((views[s.accepted_path[-1]], b))
    names = lane_names(trace)
    return TreeLayout(nodes=nodes, n_lanes=len(lanes), n_cols=n_cols, lane_names=[names[x] for x in lanes],
                      width=frame.width, height=frame.height, col_px=frame.col_px, lane_px=frame.lane_px,
                      label_chars=frame.label_chars, edges=edges, margin=frame.margin,
                      hidden=lane_count(trace) - len(lanes), title_px=frame.title_px, notes=sel.notes,
                      tail=(sel.tail, sel.max_depth + 1, rows[1]) if sel.tail and 1 in rows else None)

