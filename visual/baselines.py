"""A step of the paper's baselines drawn from its trace: Lookahead decoding's Jacobi window and
the pool's n-grams it verified, or REST's continuations retrieved from its datastore.

Each token is a box at its depth (its position id is the context's length plus the depth), in a
row of its own kind:
- Lookahead: the window's levels on top (level l, column i at depth i + l: the diagonals are the
  n-grams the window hands the pool), the root x_{i+1}, then each n-gram the pool held for the
  root, one a row (the verification branch; shared prefixes are one node in the tree);
- REST: the root, then each retrieved continuation, one a row (the tree merges them into a trie).
The box's colour says where the token came from, its fill what the model did with it. Drawn
for a page, the app (visual.fit: the container's width, the words in an HTML caption, the
labels cut by the browser) or a 16:9 slide.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import plotly.graph_objects as go

from logitspec.core.trace import RunTrace, StepRecord, TreeNode

from .counts import plural
from .data import context_before, get_step, ngram_text, query_tail, step_position, token_labels
from .fit import APP_PLOT_W, SLIDE_H, SLIDE_W, for_app, frame
from .style import MIN_FONT, MONO_CHAR_EM, MONO_FAMILY, PALETTE, base_layout, blend, pretty, text_on, theme_colors

BASELINE_METHODS = ("lookahead", "rest")  # the methods baseline_figure draws: the paper's other baselines
ROW_PX = 30  # vertical pitch of the rows, pixels
BOX_W, BOX_H = 0.86, 0.72  # a box, in depth columns and rows
LABEL_PAD_PX = 4
MAX_ROWS = 12  # continuations drawn at most; the draft tree holds the rest
PAGE_W = 1000
STATUS_WORDS = {"accepted": "verified and accepted", "rejected": "verified, rejected",
                "pruned": "cut before verification", "window": "computed in the pass to grow the pool, never accepted"}


@dataclass
class Cell:
    """One box: a node of the step's tree, in a row, at its depth."""

    node: TreeNode
    row: int
    kind: str  # its colour: "root" | "window" | "pool" | "retrieved"
    status: str  # "accepted" | "rejected" | "pruned" | "window"
    label: str = ""
    note: str = ""  # a hover line of its own


@dataclass
class Grid:
    """What a drawing holds: its boxes, its rows' names (top first) and its words."""

    cells: list[Cell]
    rows: list[str]
    title: str
    subtitle: str
    kinds: list[str] = field(default_factory=list)  # the colours in the key

    @property
    def cols(self) -> int:
        return max((c.node.depth for c in self.cells), default=0) + 1


# ---------------------------------------------------------------- what the trace holds

def window_levels(s: StepRecord) -> list[list[TreeNode]]:
    """The Jacobi window's levels, level 0 first, each in column order. Level 0 is the chain of
    window nodes from the root (they come first, logitspec.drafters.lookahead.JacobiWindow.nodes); each
    upper level holds one more node, column i at depth i + level."""
    win = [n for n in s.tree if n.origin == "window"]
    level0: list[TreeNode] = []
    for n in win:
        if n.parent != (level0[-1].id if level0 else 0):
            break
        level0.append(n)
    rest, width = win[len(level0):], len(level0) + 1
    return [level0] + [rest[i:i + width] for i in range(0, len(rest), width)]


def drafted_paths(s: StepRecord, origin: str) -> list[list[TreeNode]]:
    """Each branch of `origin` from the root to a leaf, in the order the drafter added them
    (its leaf's id): the pool's n-grams for Lookahead, the retrieved continuations for REST."""
    by_id = {n.id: n for n in s.tree}
    mine = [n for n in s.tree if n.origin == origin]
    parents = {n.parent for n in mine}
    paths = []
    for leaf in (n for n in mine if n.id not in parents):
        path, cur = [], leaf
        while cur is not None and cur.origin == origin:
            path.append(cur)
            cur = by_id.get(cur.parent)
        paths.append(path[::-1])
    return paths


def step_lanes(trace: RunTrace, s: StepRecord) -> dict[int, int]:
    """Node id -> its lane in the draft tree's lanes: the root's 0, then a lane per drafted branch
    (a shared prefix on its first branch's), then Lookahead's window, a lane per level."""
    lanes = {n.id: 0 for n in s.tree if n.parent < 0}
    origin = "pool" if trace.method == "lookahead" else "retrieved"
    for j, path in enumerate(drafted_paths(s, origin)):
        for n in path:
            lanes.setdefault(n.id, 1 + j)
    first = 1 + _most_branches(trace)
    for lv, level in enumerate(window_levels(s) if trace.method == "lookahead" else []):
        lanes.update({n.id: first + lv for n in level})
    return {n.id: lanes.get(n.id, 0) for n in s.tree}


def _most_branches(trace: RunTrace) -> int:
    """The lanes a run's drafted branches take: Lookahead's guess set, or REST's most continuations in a step."""
    if trace.method == "lookahead":
        return int(trace.settings.get("lookahead_guesses", 7))
    return max((len(drafted_paths(s, "retrieved")) for s in trace.steps), default=0)


def lane_names(trace: RunTrace) -> list[str]:
    """The draft tree's lane names after the root's (see step_lanes)."""
    if trace.method == "lookahead":
        levels = int(trace.settings.get("lookahead_ngram", 5)) - 1
        return ([f"pool n-gram {j + 1}" for j in range(_most_branches(trace))]
                + [f"window level {lv}" for lv in range(levels)])
    return [f"continuation {j + 1}" for j in range(_most_branches(trace))]


def taken_paths(s: StepRecord, paths: list[list[TreeNode]]) -> list[int]:
    """The branches the accepted path runs along to its end (several where it stops inside a
    prefix they share); none when no draft token was accepted."""
    last = s.accepted_path[-1] if len(s.accepted_path) > 1 else None
    return [j for j, p in enumerate(paths) if any(n.id == last for n in p)]


def _status(s: StepRecord, n: TreeNode) -> str:
    if n.origin == "window":
        return "window"
    return "pruned" if n.pruned else "accepted" if n.id in s.accepted_path else "rejected"


def _labelled(trace: RunTrace, s: StepRecord, cells: list[Cell], ctx: list[int]) -> list[Cell]:
    """Each box's text, decoded along its row after the context and the root."""
    by_row: dict[int, list[Cell]] = {}
    for c in cells:
        by_row.setdefault(c.row, []).append(c)
    for row in by_row.values():
        row.sort(key=lambda c: c.node.depth)
        before = ctx if row[0].kind == "root" else ctx + [s.root]
        for c, text in zip(row, token_labels(trace, [c.node.token for c in row], before, final=False)):
            c.label = text
    return cells


# ---------------------------------------------------------------- Lookahead decoding

def lookahead_grid(trace: RunTrace, step: int) -> Grid:
    """The window's levels (the newest on top), the root, and the pool's n-grams for the root."""
    s = get_step(trace, step)
    levels = [lv for lv in window_levels(s) if lv]
    guesses = drafted_paths(s, "pool")
    top = len(levels) - 1
    cells = [Cell(n, top - lv, "window", "window",
                  note="the pass's argmax after it starts the window's next level" if lv == top and lv else "")
             for lv, level in enumerate(levels) for n in level]
    root = next((n for n in s.tree if n.parent < 0), None)
    if root is not None:
        cells.append(Cell(root, len(levels), "root", "accepted" if s.forward else "rejected"))
    cells += [Cell(n, len(levels) + 1 + g, "pool", _status(s, n)) for g, path in enumerate(guesses) for n in path]
    rows = [f"window level {lv}" for lv in range(top, -1, -1)] + ["x_{i+1}"]
    rows += [f"pool n-gram {g + 1}" for g in range(len(guesses))]
    ctx = context_before(trace, step)
    return Grid(_labelled(trace, s, cells, ctx), rows, *_lookahead_words(trace, step, levels, guesses),
                kinds=["root", "window", "pool"])


def _lookahead_words(trace: RunTrace, step: int, levels: list[list[TreeNode]],
                     guesses: list[list[TreeNode]]) -> tuple[str, str]:
    s = get_step(trace, step)
    ctx = context_before(trace, step)
    n = trace.settings.get("lookahead_ngram", 5)
    kept = len(taken_paths(s, guesses))
    title = (f"Lookahead, step {step_position(trace, step)}: {plural(len(guesses), 'pool n-gram')} for "
             f"x_{{i+1}} = {html.escape(ngram_text(trace, [s.root], ctx), quote=False)} verified, "
             f"{plural(s.drafts_accepted, 'draft token')} accepted")
    width = len(levels[0]) + 1 if levels else 0
    if len(levels) < n - 1:
        win = (f"the Jacobi window is warming up: {len(levels)} of its {n - 1} levels, so it gave the pool "
               "no n-gram yet")
    else:
        win = (f"the Jacobi window: {n - 1} levels of {width} positions; each diagonal is an n-gram of {n} "
               "tokens for the pool, completed by this pass's argmax after the top level")
    pool = (f"the pool held no n-gram starting with x_{{i+1}}: nothing to verify" if not guesses else
            f"the accepted tokens follow {kept} of the {len(guesses)} n-grams" if kept else
            f"the model agreed with none of the {len(guesses)} n-grams past x_{{i+1}}")
    return title, f"{win} · {pool}"


# ---------------------------------------------------------------- REST

def rest_grid(trace: RunTrace, step: int) -> Grid:
    """The root, then each continuation retrieved for the step (accepted ones first, at most MAX_ROWS)."""
    s = get_step(trace, step)
    paths = drafted_paths(s, "retrieved")
    taken = [paths[j] for j in taken_paths(s, paths)]
    shown = (taken + [p for p in paths if p not in taken])[:MAX_ROWS]
    root = next((n for n in s.tree if n.parent < 0), None)
    cells = [Cell(root, 0, "root", "accepted" if s.forward else "rejected")] if root is not None else []
    cells += [Cell(n, 1 + r, "retrieved", _status(s, n)) for r, path in enumerate(shown) for n in path]
    rows = ["x_{i+1}"] + [f"continuation {r + 1}" for r in range(len(shown))]
    ctx = context_before(trace, step)
    title, sub = _rest_words(trace, step, len(paths), len(taken))
    if len(paths) > len(shown):
        sub += f" · {plural(len(paths) - len(shown), 'more continuation')} in the draft tree, not drawn here"
    return Grid(_labelled(trace, s, cells, ctx), rows, title, sub, kinds=["root", "retrieved"])


def _rest_words(trace: RunTrace, step: int, found: int, taken: int) -> tuple[str, str]:
    s = get_step(trace, step)
    ctx = context_before(trace, step)
    q = next((q for q in s.queries if q.kind == "rest"), None)
    title = (f"REST, step {step_position(trace, step)}: {plural(found, 'continuation')} retrieved, "
             f"{plural(s.drafts_accepted, 'draft token')} accepted")
    if q is None or not q.matched:
        tried = f" (suffixes of {q.tried[0]} down to {q.tried[-1]} tokens tried)" if q and q.tried else ""
        return title, f"no suffix of the context was found in the datastore{tried}: nothing to verify"
    seq = query_tail(s, q, ctx)
    suffix = html.escape(ngram_text(trace, seq[-q.matched_n:], seq[:-q.matched_n]), quote=False)
    said = (f"the longest suffix of the context found in the datastore: {plural(q.matched_n, 'token')}, {suffix}; "
            "its most frequent continuations, merged into a trie")
    follow = "continuation 1" if taken == 1 else f"continuations 1 to {taken} (a prefix they share)"
    return title, said + (f" · the accepted tokens follow {follow}" if taken else " · the model took none of them")


# ---------------------------------------------------------------- drawing

def baseline_grid(trace: RunTrace, step: int) -> Grid:
    if trace.method == "lookahead":
        return lookahead_grid(trace, step)
    if trace.method == "rest":
        return rest_grid(trace, step)
    raise ValueError(f"a {trace.method} run is neither Lookahead decoding nor REST")


def _box(c: Cell, bg: str, outline: str) -> dict:
    base = PALETTE[c.kind]
    fill, line, width, dash = {
        "accepted": (base, outline, 3, "solid"), "rejected": (blend(base, bg, 0.45), base, 1.5, "solid"),
        "pruned": (bg, base, 1.5, "dash"), "window": (base, blend(base, outline, 0.5), 1, "solid"),  # already pale: its key's colour
    }[c.status]
    d = c.node.depth
    return dict(type="rect", x0=d - BOX_W / 2, x1=d + BOX_W / 2, y0=c.row - BOX_H / 2, y1=c.row + BOX_H / 2,
                layer="below", fillcolor=fill, line=dict(color=line, width=width, dash=dash), name=f"node {c.node.id}")


def _hover(trace: RunTrace, s: StepRecord, c: Cell, row: str) -> str:
    lines = [f"<b>{html.escape(c.label, quote=False)}</b>   token id {c.node.token}", f"{row} · {STATUS_WORDS.get(c.status, c.status)}",
             f"depth {c.node.depth} · position id {s.context_len + c.node.depth}"]
    return "<br>".join(lines + ([c.note] if c.note else []))


def _labels_fit(chars_px: float) -> dict:
    return {"trace": 0, "box": BOX_W, "pad": LABEL_PAD_PX, "char_px": chars_px, "min_lane_px": MIN_FONT / BOX_H}


def _draw(trace: RunTrace, step: int, grid: Grid, theme: str, mode: str, size: tuple[int, int]) -> go.Figure:
    c = theme_colors(theme)
    s = get_step(trace, step)
    height = size[1] if mode == "slide" else 150 + ROW_PX * len(grid.rows)
    layout = base_layout(theme, grid.title, height=height, hovermode="closest", dragmode=False)
    keys = [_key_name(k) for k in grid.kinds] + ["accepted: filled, bold", "verified, rejected: faded"]
    plot_w = frame(layout, mode, grid.title, grid.subtitle, keys, c, (size[0], height), left=40, bottom=50)
    chars = int((plot_w / max(grid.cols, 1) * BOX_W - LABEL_PAD_PX) // (MIN_FONT * MONO_CHAR_EM))
    cut = [x.label if len(x.label) <= chars else (x.label[:chars - 1] + "…" if chars >= 2 else "") for x in grid.cells]
    text_colors = [text_on(PALETTE[x.kind]) if x.status == "accepted" else c["text"] for x in grid.cells]
    data = [go.Scatter(x=[x.node.depth for x in grid.cells], y=[x.row for x in grid.cells], mode="text",
                       name="token labels", text=[html.escape(t, quote=False) for t in cut], hoverinfo="skip",
                       textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=text_colors), showlegend=False),
            go.Scatter(x=[x.node.depth for x in grid.cells], y=[x.row for x in grid.cells], mode="markers",
                       name="tokens", showlegend=False, marker=dict(symbol="square", size=18, opacity=0),
                       hovertext=[_hover(trace, s, x, grid.rows[x.row]) for x in grid.cells],
                       hovertemplate="%{hovertext}<extra></extra>")]
    data += [go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                        marker=dict(symbol="square", size=16, color=fill, line=dict(color=line, width=2)))
             for name, fill, line in _key(grid, c)]
    layout["shapes"] = [_box(x, c["bg"], c["outline"]) for x in grid.cells]
    layout["xaxis"].update(range=[-0.6, grid.cols - 0.4], tickvals=list(range(grid.cols)), showgrid=False,
                           zeroline=False, fixedrange=True, title=dict(text=_depth_title(mode, s)))
    layout["yaxis"].update(range=[len(grid.rows) - 0.5, -0.5], tickvals=list(range(len(grid.rows))),
                           ticktext=grid.rows, showgrid=False, zeroline=False, showline=False, fixedrange=True,
                           tickfont=dict(size=MIN_FONT, color=c["text"]))
    layout["meta"] = dict(step=step_position(trace, step), rows=len(grid.rows), cols=grid.cols)
    fig = go.Figure(data=data)
    fig.update_layout(layout)
    return pretty(fig)


def _depth_title(mode: str, s: StepRecord) -> str:
    """The depth axis's title; the app's is short enough for a phone (the hover gives each position id)."""
    return "depth" if mode == "app" else f"depth (position id = {s.context_len} + depth)"


def _key_name(kind: str) -> str:
    return {"root": "x_{i+1}, the root", "window": "Jacobi window: never accepted", "pool": "pool n-gram",
            "retrieved": "retrieved continuation"}[kind]


def _key(grid: Grid, c: dict[str, str]) -> list[tuple[str, str, str]]:
    """The key: each colour, then what a fill says (shown on a grey box)."""
    out = [(_key_name(k), PALETTE[k], PALETTE[k]) for k in grid.kinds]
    return out + [("accepted: filled, bold", c["muted"], c["outline"]),
                  ("verified, rejected: faded", blend(c["muted"], c["bg"], 0.45), c["muted"])]


def baseline_figure(trace: RunTrace, step: int, theme: str = "light", width: int | None = None,
                    fit: bool = False) -> go.Figure:
    """A Lookahead or REST step (see the module's docstring): fit draws it for the app, with its 16:9
    slide and its labels for the browser to cut; otherwise a figure `width` pixels wide."""
    grid = baseline_grid(trace, step)
    if not fit:
        return _draw(trace, step, grid, theme, "page", (width or PAGE_W, 0))
    app = _draw(trace, step, grid, theme, "app", (APP_PLOT_W, 0))
    slide = _draw(trace, step, grid, theme, "slide", (SLIDE_W, SLIDE_H))
    spec = _labels_fit(MIN_FONT * MONO_CHAR_EM)
    return for_app(app, slide, grid.title, grid.subtitle, {"labels": {**spec, "full": [x.label for x in grid.cells]}})
