"""One step of a run explained panel by panel: `walkthrough` gives six panels for a step
(the last logits and the next-next guesses, g1, g2 for the right guess, the tree before and
after pruning, the verification, and the accepted path with the bonus), each a small figure
drawn here from the step and the two sentences visual.explain_words computes from the same
step. Which step to explain is `visual.explain_words.choose_step`.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.core.trace import QueryRecord, RunTrace

from .candidates import TICK_GAP_PX, probability_ticks
from .counts import plural
from .data import ngram_before, ngram_text, query_tail
from .explain_words import TITLES, StepFacts, sentences, step_facts, title_of
from .fit import APP_PLOT_W, SLIDE_H, SLIDE_W, for_app, frame, shown_ticks, wrap_html
from .style import (
    MIN_FONT, MONO_CHAR_EM, MONO_FAMILY, PALETTE, base_layout, node_color_key, pretty, style_axes, sub_x, text_on,
    theme_colors, truncate,
)
from .tree_layout import LABEL_PAD_PX
from .trie import (BONUS, ELBOW, drafted_graph, edge_trace, fold_leaves, fold_mark, node_traces, positions_with_bonus,
                   step_graph, tidy_positions)

PANEL_HEIGHT = 340  # a panel's height in the app (its width is its container's)
LOGITS_HEIGHT = 380  # ... the logits panel's: its rotated token ticks take a third of it
ACCEPT_HEIGHT = 200  # ... the accepted path's: one row of boxes
LOOKUP_ROW_PX = 70  # a lookup row: the n-gram above its line, the verdict below
SUBPLOT_TITLE_PX = 30  # above the pruning panel's two plots, for their titles
ACCEPT_BOX = 0.9  # an accepted token's box, in position ids
PHONE_PLOT_W = 280  # a phone's plot width: a centred message wraps to it
BARS = 12  # next-next guesses drawn in the logits panel (the right one is added if further down)


@dataclass
class Panel:
    key: str  # logits | g1 | g2 | tree | verify | accept
    title: str
    sentences: tuple[str, str]
    figure: go.Figure | None = None


def walkthrough(trace: RunTrace, step: int, theme: str = "light") -> list[Panel]:
    """The six panels of a step, each two sentences and a figure drawn for the app (with its slide)."""
    f = step_facts(trace, step)
    said = sentences(trace, step)
    return [Panel(k, title_of(f, k), said[k], panel_figure(f, k, said[k], theme)) for k in TITLES]


def panel_figure(f: StepFacts, key: str, said: tuple[str, str], theme: str = "light") -> go.Figure:
    """A panel's figure for the app (visual.fit.for_app): its container's width, its title for the
    page's caption, what the browser re-cuts, and a 16:9 slide with the title and both sentences."""
    words = sub_x(html.escape(" ".join(said), quote=False))
    title = title_of(f, key)
    app, fit = DRAW[key](f, PanelLook("app", theme, title))
    slide, _ = DRAW[key](f, PanelLook("slide", theme, title, words))
    app.update_layout(meta=dict(step=f.i, panel=key))
    return for_app(app, slide, title, fit=fit)


# ---------------------------------------------------------------- figures


@dataclass
class PanelLook:
    """How a panel is drawn: for the app (its words in the page) or as a slide (its words on top)."""

    mode: str  # app | slide
    theme: str
    title: str
    said: str = ""  # the slide's subtitle: the panel's sentences

    @property
    def colors(self) -> dict[str, str]:
        return theme_colors(self.theme)

    @property
    def plot_w(self) -> float:
        """The plot width labels are first cut for (in the app the browser cuts them again)."""
        return APP_PLOT_W if self.mode == "app" else SLIDE_W - 90


Drawn = tuple[go.Figure, dict]  # a figure and what the browser re-cuts on it (visual.fit)


def _small(look: PanelLook, height: int = PANEL_HEIGHT, left: int = 20, bottom: int = 50, **kw) -> dict:
    """A panel's layout: `height` tall in the app with no title (the page's caption holds it), or
    16:9 with its words on top; no legend."""
    layout = base_layout(look.theme, look.title, height=height if look.mode == "app" else SLIDE_H,
                         hovermode="closest", **kw)
    frame(layout, look.mode, look.title, look.said, [], look.colors, (SLIDE_W, SLIDE_H), left=left, bottom=bottom)
    return layout


def _message(look: PanelLook, text: str) -> Drawn:
    fig = go.Figure(layout=_small(look))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    text, _ = wrap_html(html.escape(text, quote=False), PHONE_PLOT_W, MIN_FONT + 2)
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=MIN_FONT + 2, color=look.colors["muted"]))
    return pretty(fig), {}


def _token(f: StepFacts, token: int, before: list[int]) -> str:
    """A token as visible text, without the «» an n-gram wears."""
    return ngram_text(f.trace, [token], before)[1:-1]


def _label(f: StepFacts, token: int, before: list[int]) -> str:
    return html.escape(truncate(_token(f, token, before), 8), quote=False)


def _depth_ticks(depth: int, look: PanelLook, labels: int = 6) -> int:
    """A depth axis's tick step: about `labels` labels across a phone's plot, more on a slide."""
    return max(1, math.ceil(depth / (labels if look.mode == "app" else 16)))


def logits_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The root's probability and the top guesses for x_{i+2}, the right one in green."""
    s = f.s
    if not s.candidates:
        return _message(look, "no next-next guesses at this step")
    shown = [c for c in s.candidates if c.rank <= BARS or c.rank == f.truth_rank]
    text = [f"{c.rank}: {_label(f, c.token, f.after_root)}" for c in shown]
    ys = [c.prob for c in shown]
    colors = [PALETTE["accepted"] if c.rank == f.truth_rank else PALETTE["g2"] for c in shown]
    if s.root_prob is not None:
        text, ys = [sub_x(f"x_{{i+1}}: {_label(f, s.root, f.ctx)}")] + text, [s.root_prob] + ys
        colors = [PALETTE["root"]] + colors
    xs = list(range(len(ys)))
    truth = next((j for j, c in enumerate(shown) if c.rank == f.truth_rank), None)
    truth = None if truth is None else truth + (s.root_prob is not None)
    fig = go.Figure(go.Bar(x=xs, y=ys, marker=dict(color=colors), customdata=text,
                           hovertemplate="%{customdata}<br>p = %{y:.4f}<extra></extra>"))
    keep = [0] + ([truth] if truth is not None else [])
    vals, ticks = shown_ticks(xs, text, keep, look.plot_w / len(xs), TICK_GAP_PX)
    lo, hi = math.log10(min(ys)), math.log10(max(ys))
    span = max(hi - lo, 0.5)
    layout = _small(look, height=LOGITS_HEIGHT, left=60)
    layout["xaxis"].update(tickvals=vals, ticktext=ticks, tickangle=-90, range=[-0.6, len(xs) - 0.4], showgrid=False,
                           tickfont=dict(family=MONO_FAMILY, size=MIN_FONT))
    # Head-room above the tallest bar for the note on the right guess, but not past a probability of 1.
    bottom, top = lo - 0.1 * span, min(hi + 0.5 * span, 0.1)
    layout["yaxis"].update(type="log", range=[bottom, top], title=dict(text="probability"),
                           **probability_ticks(bottom, top))
    fig.update_layout(layout)
    if truth is not None:
        fig.add_annotation(x=truth, y=math.log10(ys[truth]), text="true x_{i+2}", showarrow=True, ay=-24, ax=0,
                           xanchor="left" if truth < len(xs) / 2 else "right", bgcolor=look.colors["bg"],
                           font=dict(size=MIN_FONT, color=PALETTE["accepted"]))
    return pretty(fig), {"ticks": {"axis": "xaxis", "vals": xs, "text": text, "keep": keep, "min_px": TICK_GAP_PX}}


def _row_note(text: str, row: int, above: bool, color: str, mono: bool = False) -> dict:
    """Words just above (or below) a lookup's row, from the plot's left edge, so none runs off it."""
    return dict(x=0, xref="paper", xanchor="left", y=row, yref="y", yanchor="bottom" if above else "top",
                yshift=9 if above else -9, text=text, showarrow=False,
                font=dict(size=MIN_FONT, color=color, family=MONO_FAMILY if mono else None))


def lookup_figure(f: StepFacts, q: QueryRecord | None, look: PanelLook) -> Drawn:
    """The n-grams a lookup tried, one row each, and where in the context the match (blue) and the
    tokens that followed it (orange) lie, as in the retrieval panel (x = context position)."""
    if q is None:
        return _message(look, "no lookup to show for this step")
    if not q.attempts:
        return _message(look, "nothing to try: the context is too short")
    c = look.colors
    seq = query_tail(f.s, q, f.ctx)
    n, rows = len(f.ctx), len(q.attempts)
    fig = go.Figure(go.Scatter(x=[0, n, None] * rows, y=[y for r in range(rows) for y in (r, r, None)], mode="lines",
                               line=dict(color=c["grid"], width=6), hoverinfo="skip"))
    notes = []
    for row, a in enumerate(q.attempts):
        gram = truncate(f"{a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))}", 28)
        notes.append(_row_note(html.escape(gram, quote=False), row, True, c["text"], mono=True))
        if not a.matched:
            notes.append(_row_note("✗ no earlier occurrence", row, False, PALETTE["rejected"]))
            continue
        start, end = q.match_pos, q.match_pos + a.n
        fig.add_trace(go.Scatter(x=[start, end], y=[row, row], mode="lines", line=dict(color=PALETTE["g2"], width=14),
                                 hovertemplate=f"the {a.n}-gram, at context position {start}<extra></extra>"))
        if q.continuation:
            fig.add_trace(go.Scatter(x=[end, end + len(q.continuation)], y=[row, row], mode="lines",
                                     line=dict(color=PALETTE["g1"], width=10),
                                     hovertemplate=f"{len(q.continuation)} tokens followed it<extra></extra>"))
        notes.append(_row_note(f"✓ at {start}, then {plural(len(q.continuation), 'token')}", row, False, c["text"]))
    layout = _small(look, height=max(PANEL_HEIGHT, LOOKUP_ROW_PX * rows + 110))
    layout["xaxis"].update(range=[-1, n + 1], title=dict(text=f"position in the {n}-token context"))
    layout["yaxis"].update(visible=False, range=[rows - 0.35, -0.65])  # the first n-gram tried on top
    layout["annotations"] = notes
    fig.update_layout(layout)
    return pretty(fig), {}


def pruning_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """Left: every drafted token as a trie; right: only those verified, at the same places."""
    c = look.colors
    d = drafted_graph(f.trace, f.i)
    drafted, verified = d.number_of_nodes(), sum(d.nodes[n]["verified"] for n in d)
    folded = fold_leaves(d, counted=lambda n: d.nodes[n]["verified"])
    pos = tidy_positions(d)
    # Short titles: two of them share a phone's width.
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"drafted: {drafted}", f"verified: {verified}"),
                        shared_yaxes=True, horizontal_spacing=0.06)
    for col, keep in ((1, lambda n: True), (2, lambda n: d.nodes[n]["verified"])):
        sub = {n: p for n, p in pos.items() if keep(n)}
        fig.add_trace(edge_trace(d, sub, lambda a, b: True, "edge", c["edge"], 0.8), row=1, col=col)
        ns = list(sub)
        fig.add_trace(go.Scatter(
            x=[sub[n][0] for n in ns], y=[sub[n][1] for n in ns], mode="markers",
            marker=dict(size=6, color=[PALETTE[node_color_key(d.nodes[n]["origin"], d.nodes[n]["rank"])]
                                       if d.nodes[n]["verified"] else c["bg"] for n in ns],
                        line=dict(width=1, color=[PALETTE[node_color_key(d.nodes[n]["origin"], d.nodes[n]["rank"])]
                                                  for n in ns])),
            hoverinfo="skip"), row=1, col=col)
    layout = _small(look)
    layout["margin"]["t"] += SUBPLOT_TITLE_PX
    fig.update_layout(layout)
    marks = ((1, f"+{len(folded.nodes)} more"), (2, f"+{folded.counted} more"))  # two share a phone's width
    for col, text in marks if folded else ():
        if col == 2 and not folded.counted:
            continue
        lines, note = fold_mark(pos, text, c, MIN_FONT)
        fig.add_traces(lines, rows=1, cols=col)
        fig.add_annotation(note, row=1, col=col)
    style_axes(fig, look.theme)
    fig.update_yaxes(visible=False, autorange="reversed")
    depth = max((p[0] for p in pos.values()), default=0)
    fig.update_xaxes(title_text="depth", dtick=_depth_ticks(int(depth), look, labels=4), showgrid=False)
    return pretty(fig), {}


def verify_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The verified tree: the accepted path bold green, the rejected tokens faded, the bonus a star."""
    c = look.colors
    g = step_graph(f.trace, f.i)
    g.remove_nodes_from([n for n in list(g) if g.nodes[n]["fate"] == "pruned"])
    folded = fold_leaves(g, keep=g.graph["accepted_path"])
    pos = positions_with_bonus(g)
    fig = go.Figure()
    if folded:
        lines, note = fold_mark(pos, f"+{len(folded.nodes)} more, none kept", c, MIN_FONT)
        fig.add_traces(lines)
        fig.add_annotation(note)
    fig.add_trace(edge_trace(g, pos, lambda a, b: not g.edges[a, b]["accepted"], "draft edge", c["edge"], 1))
    fig.add_trace(edge_trace(g, pos, lambda a, b: g.edges[a, b]["accepted"], "accepted", PALETTE["accepted"], 4))
    for tr in node_traces(g, pos, look.theme, labels=False):
        fig.add_trace(tr)
    layout = _small(look)
    depth = max((p[0] for p in pos.values()), default=0)
    layout["xaxis"].update(title=dict(text=f"depth (position id {f.s.context_len} + depth)"), showgrid=False,
                           dtick=_depth_ticks(int(depth), look))
    layout["yaxis"].update(visible=False, autorange="reversed")
    fig.update_layout(layout)
    if BONUS in pos:
        _bonus(fig, g, pos, c)
    return pretty(fig), {}


def _bonus(fig: go.Figure, g, pos: dict, c: dict[str, str]) -> None:
    """The bonus token: a star after the accepted path, its token ending at the star (never past
    the plot's right edge), on the side of the star with more room."""
    (xa, ya), (x, y) = pos[g.graph["accepted_path"][-1]], pos[BONUS]
    fig.add_trace(go.Scatter(x=[xa, xa + ELBOW, xa + ELBOW, x], y=[ya, ya, y, y], mode="lines", hoverinfo="skip",
                             line=dict(color=c["outline"], dash="dot", width=1.5)))
    text = g.graph["bonus_text"]
    fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", hovertext=[html.escape(text, quote=False)],
                             hovertemplate="bonus: %{hovertext}<extra></extra>",
                             marker=dict(symbol="star", size=16, color=PALETTE["bonus"],
                                         line=dict(color=c["outline"], width=1))))
    upper = y <= (min(p[1] for p in pos.values()) + max(p[1] for p in pos.values())) / 2
    fig.add_annotation(x=x, y=y, text=html.escape(truncate(text, 8), quote=False), showarrow=False,
                       xanchor="right", yanchor="top" if upper else "bottom", yshift=-10 if upper else 10,
                       font=dict(family=MONO_FAMILY, size=MIN_FONT, color=c["text"]))


def accepted_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The committed tokens in a row at their position ids, then the bonus (dotted); the browser
    cuts each token to its box."""
    c = look.colors
    s = f.s
    by_id = {n.id: n for n in s.tree}
    toks = list(s.tokens) + ([s.bonus] if s.bonus is not None else [])
    cols = max(len(toks), 4)
    chars = max(0, math.floor((look.plot_w / cols * ACCEPT_BOX - LABEL_PAD_PX) / (MIN_FONT * MONO_CHAR_EM)))
    shapes, xs, full, inks = [], [], [], []
    for j, t in enumerate(toks):
        bonus = j == len(s.tokens)
        node = by_id.get(s.accepted_path[j]) if j < len(s.accepted_path) else None
        key = "bonus" if bonus else (node_color_key(node.origin, node.rank) if node is not None else "root")
        x = s.context_len + j
        shapes.append(dict(type="rect", x0=x - ACCEPT_BOX / 2, x1=x + ACCEPT_BOX / 2, y0=-0.4, y1=0.4,
                           fillcolor=PALETTE[key], layer="below",
                           line=dict(color=c["outline"], width=1.5, dash="dot" if bonus else "solid")))
        xs.append(x)
        full.append(_token(f, t, f.ctx + toks[:j]))
        inks.append(text_on(PALETTE[key]))
    shown = [html.escape(truncate(t, chars), quote=False) if chars >= 2 else "" for t in full]
    fig = go.Figure(go.Scatter(x=xs, y=[0] * len(xs), mode="text", text=shown, hovertext=[html.escape(t) for t in full],
                               hovertemplate="%{hovertext}<extra></extra>",
                               textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=inks)))
    layout = _small(look, height=ACCEPT_HEIGHT, shapes=shapes)
    tick_px = len(str(xs[-1])) * MIN_FONT * MONO_CHAR_EM + 12 if xs else 1
    vals, ticks = shown_ticks(xs, [str(x) for x in xs], xs[:1], look.plot_w / cols, tick_px)
    layout["xaxis"].update(range=[s.context_len - 0.6, s.context_len + cols - 0.4], tickvals=vals, ticktext=ticks,
                           title=dict(text="position id"), showgrid=False, tickfont=dict(size=MIN_FONT))
    layout["yaxis"].update(visible=False, range=[-1, 1] if look.mode == "app" else [-2.5, 2.5])
    fig.update_layout(layout)
    fit = {"labels": {"trace": 0, "full": full, "box": ACCEPT_BOX, "pad": LABEL_PAD_PX,
                      "char_px": MIN_FONT * MONO_CHAR_EM, "min_lane_px": MIN_FONT / 0.8},
           "ticks": {"axis": "xaxis", "vals": xs, "text": [str(x) for x in xs], "keep": xs[:1], "min_px": tick_px}}
    return pretty(fig), fit


DRAW = {"logits": logits_figure, "g1": lambda f, look: lookup_figure(f, f.g1, look),
        "g2": lambda f, look: lookup_figure(f, f.truth_query, look), "tree": pruning_figure,
        "verify": verify_figure, "accept": accepted_figure}
