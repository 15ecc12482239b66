"""The draft tree of one step, drawn (Plotly) from its layout (visual.tree_layout) and key
(visual.tree_key): the boxes, the edges between them, the token labels, the hover targets,
the axes, the title and the legend; for a page, the app (its slide beside it) or a slide.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from logitspec.core.trace import RunTrace, StepRecord

from .data import get_step, step_position
from .fit import SLIDE_W, SLIDER_PX, for_app, right_legend, slide_title
from .style import (
    MIN_FONT,
    MONO_CHAR_EM,
    MONO_FAMILY,
    PALETTE,
    TITLE_SIZE,
    base_layout,
    blend,
    pretty,
    text_on,
    theme_colors,
)
from .tree_key import KeyItem, edge_items, key_items
from .tree_layout import BOX_H, BOX_W, LABEL_FONT, LABEL_PAD_PX, NodeView, TreeLayout, TreeLook, title_words, tree_layout

READ_CHARS = 5  # an app tree shows as many depth columns as hold this many characters, the rest by its slider
SPLIT_CHARS = 16  # ... or a split character's whole ‹hex› label, up to this many characters


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
    edges = [_edge_trace(lay.edges[kind], it.name, it.line, it.width, it.dash) for kind, it in edge_items(c)]
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
    words = title_words(trace, step, lay.notes)
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
    title, sub = title_words(trace, step, lay.notes)
    return for_app(app, slide, title, sub, _label_fit(app, lay))
