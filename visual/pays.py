"""Where it pays: each lane's tokens per pass against the size of its passes, over each machine's
break-even line c(n)/c(1). A lane above a machine's line is faster than vanilla there.

The lines are measured pass costs: the race's own (its passes' median times) and each device curve
the GPU kit recorded (logitspec.analysis.pays). Each lane's legend entry says the speed-up it made
here and the one its passes and drafting would make on each curve.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from logitspec.analysis.lanes import label as lane_label
from logitspec.analysis.pays import HERE, PassCosts, Priced, break_even, curves_for, price
from logitspec.core.trace import RunTrace

from .fit import SLIDE_H, SLIDE_W, for_app, frame
from .race import APP_HEIGHT, LEGEND_LINE_PX, PAGE_SIZE  # drawn as the race's figures: tall enough for the legend
from .style import base_layout, lane_color, pretty, theme_colors

TITLE = "Where it pays: tokens per pass against the pass's cost"
MAX_ROWS = 256
CURVE_DASH = ("solid", "dash", "dot", "dashdot")


def _grid(curve: PassCosts) -> np.ndarray:
    """Pass sizes from 1 to the largest the curve measured: a line is drawn only where it was measured."""
    top = min(MAX_ROWS, max(curve.sizes))
    return np.unique(np.round(np.geomspace(1, top, 60)).astype(int))


def lane_words(p: Priced, lanes: dict[str, RunTrace]) -> str:
    """A lane's legend entry: its tokens per pass and rows, measured speed-up, and each prediction."""
    said = ", ".join(f"{sp:.2f}× on {html.escape(name)}" for name, sp in p.predicted.items())
    return (f"{html.escape(lane_label(p.lane, lanes[p.lane]), quote=False)}<br>{p.tokens_per_pass:.2f} tokens a pass "
            f"of {p.mean_rows:.0f} rows<br>{p.measured:.2f}× measured; priced {said}")


def subtitle(priced: list[Priced], curves: list[PassCosts], stopped: bool = False) -> str:
    """What the lines mean, with the biggest pass's price on each curve."""
    if not priced:
        return "A race with vanilla's lane is priced here: this one has none, or no tokens yet"
    widest = max(priced, key=lambda p: p.mean_rows)
    prices = "; ".join(f"{c.ratio(widest.mean_rows):.2f} on {html.escape(c.name)}" for c in curves)
    scope = "; each lane over its own passes in a stopped race" if stopped else ""
    return (f"Above a machine's line a method is faster than vanilla there, below it slower. "
            f"A pass of {widest.mean_rows:.0f} rows costs as much as this many one-token passes: {prices}{scope}")


def _draw(lanes: dict[str, RunTrace], curves: list[PassCosts], priced: list[Priced], theme: str,
          mode: str, size: tuple[int, int], stopped: bool = False) -> go.Figure:
    c = theme_colors(theme)
    names = [f"{html.escape(cv.name)}: break-even" for cv in curves] + [lane_words(p, lanes) for p in priced]
    lines = sum(n.count("<br>") + 1 for n in names)
    height = size[1] if mode != "app" else size[1] + LEGEND_LINE_PX * lines
    layout = base_layout(theme, TITLE, height=height, hovermode="closest")
    # A legend's width is its longest line's.
    frame(layout, mode, TITLE, subtitle(priced, curves, stopped), [ln for n in names for ln in n.split("<br>")], c, size)
    layout["legend"].update(maxheight=4000)
    top = max([max(cv.sizes) for cv in curves] + [p.mean_rows for p in priced] + [2])
    layout["xaxis"].update(title=dict(text="Rows in a forward pass (the root and every node verified)"),
                           type="log", range=[-0.05, np.log10(min(top, MAX_ROWS)) + 0.05])
    layout["yaxis"].update(title=dict(text="Tokens a pass commits"), rangemode="tozero")
    fig = go.Figure(layout=layout)
    for i, cv in enumerate(curves):
        grid = _grid(cv)
        fig.add_trace(go.Scatter(
            x=grid.tolist(), y=[cv.ratio(n) for n in grid], mode="lines", name=f"{html.escape(cv.name)}: break-even",
            line=dict(color=c["muted"] if i else c["text"], width=3, dash=CURVE_DASH[i % len(CURVE_DASH)]),
            hovertemplate=f"{html.escape(cv.name)}: a pass of %{{x}} rows costs %{{y:.2f}} one-token passes<extra></extra>"))
    for p in priced:
        colour = lane_color(p.lane, lanes[p.lane].method)
        fig.add_trace(go.Scatter(
            x=[p.mean_rows], y=[p.tokens_per_pass], mode="markers", name=lane_words(p, lanes),
            marker=dict(size=14, color=colour, line=dict(color=c["bg"], width=1)),
            hovertemplate=f"{html.escape(lane_label(p.lane, lanes[p.lane]), quote=False)}: "
                          "%{y:.2f} tokens a pass of %{x:.0f} rows<extra></extra>"))
    return pretty(fig)


def pays_figure(lanes: dict[str, RunTrace], curves: list[PassCosts], theme: str = "light",
                width: int | None = None, stopped: bool = False, fit: bool = False) -> go.Figure:
    """The race's lanes over the break-even line of its own pass costs and of each recorded curve
    of its dtype. fit: drawn for the app, with its 16:9 slide (visual.fit)."""
    priced = price(lanes, curves)
    used = curves_for(lanes, curves) if priced else []
    if not fit:
        return _draw(lanes, used, priced, theme, "page", (width or PAGE_SIZE[0], PAGE_SIZE[1]), stopped)
    app = _draw(lanes, used, priced, theme, "app", (PAGE_SIZE[0], APP_HEIGHT), stopped)
    slide = _draw(lanes, used, priced, theme, "slide", (SLIDE_W, SLIDE_H), stopped)
    return for_app(app, slide, TITLE, subtitle(priced, used, stopped))


TREE_ROWS = (1, 8, 16, 32, 64)  # the fold's presets of tree size, in rows (the next token and its guesses)
NEAR = 0.15  # a lane whose passes average within this share of a preset's rows makes passes "about this size"


def _near_lanes(lanes: dict[str, RunTrace], curves: list[PassCosts], rows: int) -> str:
    """The lanes whose passes are about `rows` rows, with the tokens each commits a pass."""
    near = [p for p in price(lanes, curves) if abs(p.mean_rows - rows) <= NEAR * rows]
    said = [f"{html.escape(lane_label(p.lane, lanes[p.lane]), quote=False)}: {p.tokens_per_pass:.2f} tokens a pass"
            for p in near]
    return f" Passes about this size in this race: {'; '.join(said)}." if said else ""


def break_even_html(lanes: dict[str, RunTrace], curves: list[PassCosts], rows: int) -> str:
    """The tokens a pass of `rows` rows must commit to break even with vanilla on each curve the
    race is priced on (c(rows)/c(1)), each curve that never measured a pass that big, and the
    lanes whose passes are about that size."""
    used = curves_for(lanes, curves)
    said, short = [], []
    for cv in used:
        where = "in this race" if cv.name == HERE else f"on the {html.escape(cv.name)}"
        if (r := break_even(cv, rows)) is None:
            short.append(f"{where} no pass of {rows} rows was measured (the largest: {max(cv.sizes)})")
        else:
            said.append(f"<b>{r:.2f}</b> {where}")
    guesses = f"the next token and {rows - 1} guess{'es' if rows > 2 else ''}" if rows > 1 else "the next token alone"
    head = f"A tree of {rows} row{'s' if rows > 1 else ''} ({guesses}) "
    line = (head + f"breaks even with vanilla at this many tokens a pass: {', '.join(said)}." if said else
            head + "has no measured pass cost to be priced on.")
    if short:
        line += " " + "; ".join(short)[:1].upper() + "; ".join(short)[1:] + "."
    if lanes and not any(cv.name == HERE for cv in used):
        line += " This race timed no one-token pass, so its own costs price nothing."
    return f'<p class="pays-break-even">{line}{_near_lanes(lanes, curves, rows)}</p>'


HIST_TITLE = "Tokens committed per forward pass, every lane"


def committed_shares(trace: RunTrace) -> dict[int, float]:
    """Of a lane's passes, the share that committed each number of tokens."""
    counts: dict[int, int] = {}
    for s in trace.steps:
        if s.forward:
            counts[len(s.tokens)] = counts.get(len(s.tokens), 0) + 1
    total = sum(counts.values())
    return {k: counts[k] / total for k in sorted(counts)} if total else {}


def _hist_words(lanes: dict[str, RunTrace]) -> str:
    return ("each lane's passes by the tokens each committed (1: no draft token accepted); "
            "vanilla commits one a pass, and a lane whose bars reach further right makes more tokens a pass")


def _draw_hist(lanes: dict[str, RunTrace], theme: str, mode: str, size: tuple[int, int]) -> go.Figure:
    c = theme_colors(theme)
    names = [lane_label(n, t) for n, t in lanes.items()]
    height = size[1] if mode != "app" else size[1] + LEGEND_LINE_PX * len(names)
    layout = base_layout(theme, HIST_TITLE, height=height, hovermode="closest", barmode="group")
    frame(layout, mode, HIST_TITLE, _hist_words(lanes), names, c, size)
    layout["legend"].update(maxheight=4000)
    top = max((max(committed_shares(t), default=1) for t in lanes.values()), default=1)
    layout["xaxis"].update(title=dict(text="Tokens a pass committed"), dtick=1, range=[0.4, top + 0.6])
    layout["yaxis"].update(title=dict(text="Share of the lane's passes"), tickformat=".0%", rangemode="tozero")
    fig = go.Figure(layout=layout)
    for name, t in lanes.items():
        shares = committed_shares(t)
        fig.add_trace(go.Bar(
            x=list(shares), y=list(shares.values()), name=html.escape(lane_label(name, t), quote=False),
            marker=dict(color=lane_color(name, t.method)),
            hovertemplate=f"{html.escape(lane_label(name, t), quote=False)}: %{{y:.0%}} of its passes committed "
                          "%{x} tokens<extra></extra>"))
    return pretty(fig)


def committed_figure(lanes: dict[str, RunTrace], theme: str = "light", width: int | None = None,
                     fit: bool = False) -> go.Figure:
    """Every lane's passes by the tokens each committed, side by side."""
    if not fit:
        return _draw_hist(lanes, theme, "page", (width or PAGE_SIZE[0], PAGE_SIZE[1]))
    app = _draw_hist(lanes, theme, "app", (PAGE_SIZE[0], APP_HEIGHT))
    slide = _draw_hist(lanes, theme, "slide", (SLIDE_W, SLIDE_H))
    return for_app(app, slide, HIST_TITLE, _hist_words(lanes))
