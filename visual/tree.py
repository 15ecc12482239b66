"""The draft tree of one step, in a tidy layered layout with fixed lanes.

x is the depth in the tree (0 = the root x_{i+1}); y is a lane that never moves between
steps of a run: lane 0 holds the root (and the bonus token after the accepted path),
lane 1 the g1 (or prompt lookup) continuation, lane 1 + r the branch of candidate rank r
(a recycled candidate of rank r in the root's matrix row: lane 1 + k + r). A Token Recycling
tree has a lane per branch of the run's trees, by the node's path of ranks (`branch_lanes`).
Every node is a box with its token inside; the box's colour says where the token came
from, its fill and outline what happened to it.

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

import plotly.graph_objects as go

from logitspec.analysis.lanes import node_sources, sources_of
from logitspec.core.trace import RunTrace, StepRecord, TreeNode

from .data import (
    candidate_by_rank,
    candidate_words,
    context_before,
    get_step,
    has_split_characters,
    match_text,
    ngram_text,
    query_name,
    query_tail,
    step_position,
    tok,
    token_pieces,
)
from .baselines import METHODS as BASELINES
from .baselines import lane_names as baseline_lane_names
from .baselines import step_lanes as baseline_lanes
from .counts import plural
from .fit import (
    APP_WIDE_PLOT_W,
    SLIDE_H,
    SLIDE_PAD,
    SLIDE_W,
    SLIDER_PX,
    for_app,
    right_legend,
    right_margin,
    slide_title,
    title_block,
)
from .pieces import SPLIT_NOTE, TokenPiece, hex_bytes
from .style import (
    MIN_FONT,
    MONO_CHAR_EM,
    MONO_FAMILY,
    PALETTE,
    TITLE_SIZE,
    base_layout,
    blend,
    node_color_key,
    pretty,
    sub_x,
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
MIN_COLS_COMPACT = 6
READ_CHARS = 5  # an app tree shows as many depth columns as hold this many characters, the rest by its slider
SPLIT_CHARS = 16  # ... or a split character's whole ‹hex› label, up to this many characters
APP_MARGIN = dict(l=10, r=10, t=66, b=10)  # the lane names widen l by themselves (automargin)
APP_LANES_PX = 720  # a compact tree's lanes share about a screen's height ...
APP_MIN_LANE_PX = 11  # ... down to this pitch
AXIS_TOP_PX = 62  # the depth axis's ticks and title, above the plot
SLIDE_LANE_NAMES_PX = 150

# Each node source's hover words and legend name, from the lane table (logitspec/analysis/lanes.py).
ORIGIN_WORDS = {key: src.words for key, src in node_sources().items()}
PRUNE_WORDS = {
    "rank": "rank rule: this candidate's branch keeps only a few tokens",
    "capacity": "capacity: the tree was already full",
    "cost": "cost: the modelled time outweighed the expected gain",
}
LEGEND_NAMES = {key: src.legend for key, src in node_sources().items()}
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


@dataclass(frozen=True)
class KeyItem:
    """One entry of the tree's key: a box style or an edge style."""

    name: str
    fill: str
    line: str
    width: float
    symbol: str = "square"  # a Plotly marker symbol; "line" for an edge
    dash: str = "solid"
    rank: int = 100


# ---------------------------------------------------------------- lanes and columns

def _lane(node: TreeNode, k: int) -> int:
    """A node's lane in a tree of lookups; a recycled candidate (rank r in the root's row) goes
    past the logits' k candidates, where its g2 branch (rank k + r) already is."""
    if node.origin == "root":
        return 0
    if node.origin == "g2":
        return 1 + (node.rank or 1)
    if node.origin == "recycled":
        return 1 + k + (node.rank or 1)
    return 1  # g1 / pld


def _rank_paths(s: StepRecord) -> dict[int, tuple[int, ...]]:
    """Each node's path of matrix ranks from the root (the root's is ())."""
    by_id = {n.id: n for n in s.tree}
    paths: dict[int, tuple[int, ...]] = {}

    def path(i: int) -> tuple[int, ...]:
        if i not in paths:
            n = by_id[i]
            paths[i] = () if n.parent < 0 or n.parent not in by_id else (*path(n.parent), n.rank or 1)
        return paths[i]

    for n in s.tree:
        path(n.id)
    return paths


def branch_lanes(trace: RunTrace) -> dict[tuple[int, ...], int]:
    """A lane for each rank path of the run's recycled trees, fixed for the run: depth first, a
    node's first child drawn anywhere in the run goes on in its lane and each other child opens the
    next lane; the root's children all open lanes (lane 0 holds the root and the bonus)."""
    paths = {p for s in trace.steps for p in _rank_paths(s).values()}
    lanes, opened, new = {(): 0}, set(), 1
    for p in sorted(paths - {()}):  # depth first: a parent's path sorts before its children's
        parent = p[:-1]
        if parent and parent not in opened:
            lanes[p] = lanes[parent]
        else:
            lanes[p], new = new, new + 1
        opened.add(parent)
    return lanes


def node_lanes(trace: RunTrace, s: StepRecord) -> dict[int, int]:
    """Node id -> its lane in the run's fixed lanes (see the module's docstring)."""
    if trace.method == "recycling":
        lanes = branch_lanes(trace)
        return {i: lanes[p] for i, p in _rank_paths(s).items()}
    if trace.method in BASELINES:
        return baseline_lanes(trace, s)
    k = int(trace.settings.get("k") or 0)
    return {n.id: _lane(n, k) for n in s.tree}


def _max_rank(trace: RunTrace) -> int:
    """The deepest candidate rank any step's tree drew (a recycled one past k): small trees get a short figure."""
    k = 1 if trace.method == "logitspec" else 0
    for s in trace.steps:
        lanes = node_lanes(trace, s)
        k = max([k] + [lanes[n.id] - 1 for n in s.tree if n.origin in ("g2", "recycled")])
    return k


def lane_count(trace: RunTrace) -> int:
    """Lanes the run needs, the same for every step: root, g1 (or PLD), one per candidate rank;
    or a Token Recycling run's branches."""
    if trace.method == "vanilla":
        return 1
    if trace.method == "pld":
        return 2
    if trace.method == "recycling":
        return max(branch_lanes(trace).values()) + 1
    if trace.method in BASELINES:
        return 1 + len(baseline_lane_names(trace))
    return 2 + _max_rank(trace)


def lane_names(trace: RunTrace) -> list[str]:
    names = ["x_{i+1} · bonus"]
    if trace.method in BASELINES:
        names += baseline_lane_names(trace)
    elif trace.method == "pld":
        names.append("prompt lookup")
    elif trace.method == "recycling":
        lanes = branch_lanes(trace)
        first = {}
        for p, lane in sorted(lanes.items()):
            first.setdefault(lane, p)  # a lane is named for the node that opens it
        names += ["ranks " + "·".join(map(str, first[x])) for x in range(1, lane_count(trace))]
    elif trace.method != "vanilla":
        k = int(trace.settings.get("k") or 0)
        names.append("g1 lookup")
        names += [f"rank {r}" if r <= k or trace.method != "logitspec+recycling" else f"recycled {r - k}"
                  for r in range(1, lane_count(trace) - 1)]
    return names


def wanted_ids(s: StepRecord) -> set[int]:
    """Pruned nodes holding the very token the model chose after the accepted path."""
    if s.bonus is None or not s.accepted_path:
        return set()
    last = s.accepted_path[-1]
    return {n.id for n in s.tree if n.pruned and n.parent == last and n.token == s.bonus}


def shown_lanes(trace: RunTrace, step: int, compact: bool) -> list[int]:
    """The lanes drawn, top to bottom: every lane of the run, or (compact) the root's and those
    holding a verified token or the token the model wanted next (no empty or pruned-only lane)."""
    if not compact:
        return list(range(lane_count(trace)))
    s = get_step(trace, step)
    wanted = wanted_ids(s)
    lanes = node_lanes(trace, s)
    return sorted({0} | {lanes[n.id] for n in s.tree if not n.pruned or n.id in wanted})


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


def _origins(trace: RunTrace) -> list[str]:
    return [src.key for src in sources_of(trace.method)]


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


def _words(trace: RunTrace, step: int, notes: list[str]) -> tuple[str, str]:
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
        title, sub = _words(trace, step, sel.notes)
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


# ---------------------------------------------------------------- drawing

def _box_style(v: NodeView, c: dict[str, str]) -> tuple[str, str, float, str]:
    """Fill, outline colour, outline width and dash of a node's box."""
    base = PALETTE[v.color_key]
    if v.status == "accepted":
        return base, c["outline"], 3, "solid"
    if v.status == "rejected":
        return blend(base, c["bg"], 0.45), base, 1.5, "solid"
    if v.status == "pruned":
        # Hollow; tinted with the bonus colour when the model wanted exactly this cut token.
        return (blend(PALETTE["bonus"], c["bg"], 0.45) if v.wanted else c["bg"]), base, 1.5, "dash"
    return base, c["outline"], 2, "dot"  # bonus


def _box_shapes(lay: TreeLayout, c: dict[str, str]) -> list[dict]:
    """The boxes, as shapes below the edges and labels (set at once: add_shape is quadratic)."""
    shapes = []
    for v in lay.nodes:
        fill, line, lw, dash = _box_style(v, c)
        shapes.append(dict(type="rect", x0=v.depth - BOX_W / 2, x1=v.depth + BOX_W / 2,
                           y0=v.lane - BOX_H / 2, y1=v.lane + BOX_H / 2, layer="below",
                           fillcolor=fill, line=dict(color=line, width=lw, dash=dash),
                           name=f"node {v.id}" if v.id >= 0 else "bonus"))
    return shapes


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


def _edge_items(c: dict[str, str]) -> list[tuple[str, KeyItem]]:
    """The four edge styles, by the edge set they draw."""
    return [("draft", KeyItem("draft edge", "", c["edge"], 1.3, "line")),
            ("pruned", KeyItem("edge to a pruned token", "", c["edge"], 1.3, "line", "dash")),
            ("path", KeyItem("accepted path", "", PALETTE["accepted"], 5, "line")),
            ("bonus", KeyItem("to the bonus token", "", c["outline"], 2.5, "line", "dot"))]


def key_items(trace: RunTrace, theme: str = "light") -> list[KeyItem]:
    """The tree's key: origin colours, then fills, then edge styles (legend and HTML key alike)."""
    c = theme_colors(theme)
    grey = c["muted"]
    items = [KeyItem(LEGEND_NAMES[k], PALETTE[k], PALETTE[k], 1, rank=10 + i) for i, k in enumerate(_origins(trace))]
    items += [KeyItem("bonus: model's next token", PALETTE["bonus"], c["outline"], 2, rank=30),
              KeyItem("accepted: filled, bold", grey, c["outline"], 3, rank=40),
              KeyItem("verified, rejected: faded", blend(grey, c["bg"], 0.45), grey, 1.5, rank=41),
              KeyItem("pruned, not verified: dashed", grey, grey, 2, "square-open", rank=42)]
    if trace.method != "vanilla":
        items.append(KeyItem("pruned, yet the model's choice", blend(PALETTE["bonus"], c["bg"], 0.45),
                             grey, 1.5, rank=43))
    return items + [item for _, item in _edge_items(c)]


def _label_color(v: NodeView, c: dict[str, str]) -> str:
    if v.status in ("accepted", "bonus"):
        return text_on(PALETTE[v.color_key])
    return c["text"] if v.status == "rejected" else c["muted"]


def _label_trace(lay: TreeLayout, c: dict[str, str]) -> go.Scatter:
    """The token labels inside the boxes (every box has one, "" where there is no room)."""
    return go.Scatter(
        x=[v.depth for v in lay.nodes], y=[v.lane for v in lay.nodes], mode="text", name="token labels",
        xaxis="x2",  # on an axis of their own that follows x, so a range slider under x draws no text
        text=[html.escape(v.label, quote=False) for v in lay.nodes], textposition="middle center",
        hoverinfo="skip", textfont=dict(family=MONO_FAMILY, size=LABEL_FONT, color=[_label_color(v, c) for v in lay.nodes]),
        customdata=[v.id for v in lay.nodes], showlegend=False,
    )


def _hover_traces(lay: TreeLayout, c: dict[str, str], static: bool) -> list[go.Scatter]:
    """Invisible hover targets, one trace per status (the tests read the node ids from them);
    empty on a `static` figure, which nobody hovers."""
    out = []
    for status, title in (("accepted", "accepted path nodes"), ("rejected", "verified, rejected nodes"),
                          ("pruned", "pruned nodes"), ("bonus", "bonus token")):
        group = [] if static else [v for v in lay.nodes if v.status == status]
        if status == "accepted":
            group.sort(key=lambda v: v.depth)
        out.append(go.Scatter(
            x=[v.depth for v in group] or [None], y=[v.lane for v in group] or [None], mode="markers",
            name=title, showlegend=False, customdata=[[v.id, v.status, v.token] for v in group] or None,
            hovertext=[v.hover for v in group] or None, hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(symbol="square", size=max(12, min(lay.col_px * BOX_W, lay.lane_px * BOX_H)),
                        opacity=0, color=c["bg"]),
            hoverlabel=dict(bgcolor=c["bg"], font=dict(color=c["text"], family=MONO_FAMILY, size=MIN_FONT + 1),
                            bordercolor=[PALETTE[v.color_key] for v in group] or c["edge"]),
        ))
    return out


def _legend_marker(item: KeyItem) -> go.Scatter:
    return go.Scatter(x=[None], y=[None], mode="markers", name=item.name, hoverinfo="skip", legendrank=item.rank,
                      marker=dict(symbol=item.symbol, size=18, color=item.fill,
                                  line=dict(color=item.line, width=item.width)))


def _traces(trace: RunTrace, lay: TreeLayout, theme: str, static: bool) -> list[go.Scatter]:
    """Edges, labels, hover targets and the legend's boxes, in drawing order."""
    c = theme_colors(theme)
    edges = [_edge_trace(lay.edges[kind], it.name, it.line, it.width, it.dash) for kind, it in _edge_items(c)]
    boxes = [_legend_marker(it) for it in key_items(trace, theme) if it.symbol != "line"]
    return edges + [_label_trace(lay, c)] + _hover_traces(lay, c, static) + boxes


def _axes(layout: dict, lay: TreeLayout, s: StepRecord, c: dict[str, str], mode: str) -> None:
    depth_title = "Depth in the tree" if mode == "app" else f"Depth in the tree (position id = {s.context_len} + depth)"
    layout["xaxis"].update(
        range=[-0.6, lay.n_cols - 0.5], tickvals=list(range(lay.n_cols)),
        ticktext=[str(d) for d in range(lay.n_cols)], side="top", showgrid=False, zeroline=False,
        title=dict(text=depth_title, standoff=6, font=dict(size=MIN_FONT + 2, color=c["text"])), fixedrange=False,
    )
    layout["xaxis2"] = dict(overlaying="x", matches="x", visible=False)
    plot_h = lay.height - lay.margin["t"] - lay.margin["b"]
    rows = max(lay.n_lanes, plot_h / lay.lane_px)  # a slide with few lanes keeps their pitch
    layout["yaxis"].update(
        range=[rows - 0.5, -0.5], tickvals=list(range(lay.n_lanes)), ticktext=lay.lane_names,
        showgrid=False, zeroline=False, showline=False, tickfont=dict(size=MIN_FONT, color=c["text"]),
        title=dict(text="Branch", font=dict(size=MIN_FONT + 2, color=c["text"])),
    )


def _frame_words(layout: dict, trace: RunTrace, lay: TreeLayout, words: tuple[str, str], theme: str,
                 mode: str) -> None:
    """Title and legend where the look puts them: above the plot (page), beside it (slide), or
    nowhere (app: the page shows them in HTML)."""
    c = theme_colors(theme)
    legend_font = dict(size=MIN_FONT + 1, color=c["text"])
    if mode == "app":
        layout["title"] = dict(text="")
        layout["showlegend"] = False
        return
    layout["showlegend"] = True
    if mode == "slide":
        slide_title(layout, *words, TITLE_SIZE, MIN_FONT + 2, c["text"], c["muted"])
        layout["legend"] = right_legend(MIN_FONT + 1, c["text"], SLIDE_W - lay.margin["l"] - lay.margin["r"])
        return
    layout["title"]["subtitle"] = dict(text=words[1], font=dict(size=MIN_FONT + 2, color=c["muted"]))
    layout["title"].update(y=1 - 12 / lay.height, yanchor="top", yref="container")
    plot_h = lay.height - lay.margin["t"] - lay.margin["b"]
    layout["legend"].update(orientation="h", x=0, xanchor="left", y=1 + 62 / plot_h, yanchor="bottom",
                            traceorder="normal", entrywidth=0, font=legend_font)


def _draw(trace: RunTrace, step: int, theme: str, look: TreeLook) -> tuple[go.Figure, TreeLayout]:
    """The tree as `look` draws it, and its layout."""
    c = theme_colors(theme)
    s = get_step(trace, step)
    lay = tree_layout(trace, step, look=look)
    words = _words(trace, step, lay.notes)
    layout = base_layout(theme, words[0], width=lay.width, height=lay.height, margin=lay.margin,
                         hovermode="closest", dragmode="pan")
    _frame_words(layout, trace, lay, words, theme, look.mode)
    _axes(layout, lay, s, c, look.mode)
    layout["shapes"] = _box_shapes(lay, c)
    if lay.tail:  # where a slide cut the lookup chain
        n, col, row = lay.tail
        layout["annotations"] = [dict(x=col, y=row, text=f"+{n} ⋯", showarrow=False, xanchor="center",
                                      font=dict(size=MIN_FONT, color=c["muted"], family=MONO_FAMILY))]
    layout["meta"] = dict(step=step_position(trace, step), n_lanes=lay.n_lanes, n_cols=lay.n_cols,
                          label_font=LABEL_FONT, hidden=lay.hidden)
    fig = go.Figure(data=_traces(trace, lay, theme, static=look.mode == "slide"))
    fig.update_layout(layout)
    return pretty(fig), lay


def read_col_px(labels: list[str]) -> float:
    """A column whose box holds READ_CHARS characters, or the longest label with a split character's
    ‹hex› bytes whole (cut, "‹E9 8…" reads as no bytes at all)."""
    chars = max([READ_CHARS] + [min(len(t), SPLIT_CHARS) for t in labels if "‹" in t])
    return (chars * LABEL_FONT * MONO_CHAR_EM + LABEL_PAD_PX) / BOX_W


def _label_fit(fig: go.Figure, lay: TreeLayout) -> dict:
    """What the browser needs to cut the labels to the width it finds, and to show a window of
    readable columns with a slider under it when all of them cannot be (ui/figures.js)."""
    index = next(i for i, t in enumerate(fig.data) if t.name == "token labels")
    full = [v.full for v in lay.nodes]
    return {"labels": {"trace": index, "full": full, "box": BOX_W, "pad": LABEL_PAD_PX,
                       "char_px": LABEL_FONT * MONO_CHAR_EM, "min_lane_px": LABEL_FONT / BOX_H},
            "window": {"col_px": read_col_px(full), "range": list(fig.layout.xaxis.range), "slider_px": SLIDER_PX}}


def tree_figure(trace: RunTrace, step: int, theme: str = "light", width: int | None = None,
                fit: bool = False, compact: bool = False) -> go.Figure:
    """The draft tree of one step: where each token came from and what the model did with it.

    fit: drawn for the app (visual.fit.for_app): it fills its container, its title and key are
    shown in HTML (caption_html, tree_key_html), and it carries its 16:9 slide (always compact).
    compact: only the lanes with something verified in them (shown_lanes).
    """
    if not fit:
        return _draw(trace, step, theme, TreeLook("page", compact, width))[0]
    app, lay = _draw(trace, step, theme, TreeLook("app", compact))
    slide, _ = _draw(trace, step, theme, TreeLook("slide", True))
    title, sub = _words(trace, step, lay.notes)
    return for_app(app, slide, title, sub, _label_fit(app, lay))


def _swatch(item: KeyItem) -> str:
    dash = {"dash": "dashed", "dot": "dotted"}.get(item.dash, "solid")
    if item.symbol == "line":
        return (f'<span class="key-line" style="border-top:{max(2, item.width):.0f}px {dash} {item.line}">'
                "</span>")
    fill = "transparent" if item.symbol == "square-open" else item.fill
    style = "dashed" if item.symbol == "square-open" else "solid"
    return (f'<span class="key-box" style="background:{fill};border:{max(1, item.width):.0f}px {style} '
            f'{item.line}"></span>')


def tree_key_html(trace: RunTrace, theme: str = "light") -> str:
    """The tree's key as HTML, for beside the app's tree (it wraps to any width)."""
    rows = "".join(f"<li>{_swatch(it)}<span>{sub_x(html.escape(it.name, quote=False))}</span></li>"
                   for it in key_items(trace, theme))
    if has_split_characters(trace):  # a box may show part of a character: say how
        rows += f'<li class="split-note"><span>{html.escape(SPLIT_NOTE, quote=False)}</span></li>'
    return f'<ul class="tree-key" aria-label="Key of the draft tree">{rows}</ul>'
