"""The next-next candidates of one step: the top-k of the logits that chose x_{i+1}.

Drawn for a page or a slide (a fixed size: the title wrapped to it, the legend beside the
plot, the token ticks thinned to what fits) or for the app (visual.fit: the container's
width, the words in an HTML caption, the ticks thinned by the browser).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import plotly.graph_objects as go

from logitspec.core.trace import RunTrace, StepRecord

from .data import (
    branch_nodes, context_before, g2_query_of_rank, get_step, match_text, ngram_text, query_tail, step_position, tok,
    true_next_next,
)
from .fit import SLIDE_H, SLIDE_W, for_app, frame, shown_ticks
from .style import MIN_FONT, MONO_FAMILY, PALETTE, base_layout, marks_note, pretty, sub_x, theme_colors, truncate

NGRAM_SHADES = ["#0072B2", "#56B4E9", "#A8D5F2", "#D6ECFA"]  # longest n first
PAGE_SIZE = (1200, 620)  # a page figure's default width and height
TICK_CHARS = 8  # a candidate's tick label keeps this many characters
TICK_GAP_PX = MIN_FONT * 1.4  # rotated tick labels need this much room each
AXIS_PX = 150  # below the plot: rotated token ticks and the axis title
APP_HEIGHT = 520


@dataclass
class Group:
    """The bars of one g2 outcome (a matched n-gram length, or no match)."""

    color: str
    n: int | None
    x: list[int] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    hover: list[str] = field(default_factory=list)


def _shade(n: int, sizes: list[int]) -> str:
    order = sorted(set(sizes), reverse=True)
    i = order.index(n) if n in order else len(order) - 1
    return NGRAM_SHADES[min(i, len(NGRAM_SHADES) - 1)]


def _empty(theme: str, title: str, message: str, height: int = 420) -> go.Figure:
    c = theme_colors(theme)
    fig = go.Figure()
    fig.update_layout(base_layout(theme, title, height=height))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=MIN_FONT + 4, color=c["muted"]))
    return fig


def _hover(trace: RunTrace, s: StepRecord, cd, ctx: list[int], truth: int | None) -> str:
    """A candidate's token, numbers, g2 lookup and what became of its branch."""
    after = ctx + [s.root]
    q = g2_query_of_rank(s).get(cd.rank)
    hv = [f"<b>{html.escape(tok(trace, cd.token, after), quote=False)}</b>   token id {cd.token}",
          f"rank {cd.rank} · probability {cd.prob:.5f} · logit {cd.logit:.2f}"]
    if q is not None:
        hv.append("g2 lookup: " + html.escape(match_text(trace, q, query_tail(s, q, ctx)), quote=False))
        bn = [nd for _, nd in branch_nodes(s, s.queries.index(q)) if nd is not None]
        acc = sum(1 for nd in bn if nd.id in set(s.accepted_path))
        hv.append(f"in the tree: {sum(not nd.pruned for nd in bn)} verified, {sum(nd.pruned for nd in bn)} pruned, "
                  f"{acc} accepted")
    if truth is not None:
        hv.append("the true x_{i+2}" if cd.token == truth else "not the true x_{i+2}")
    return "<br>".join(hv)


def _groups(trace: RunTrace, step: int, c: dict[str, str]) -> dict[str, Group]:
    """The candidates' bars grouped by what their g2 lookup found."""
    s = get_step(trace, step)
    sizes = [int(n) for n in trace.settings.get("ngram_sizes", [1, 2, 3])] or [1, 2, 3]
    g2 = g2_query_of_rank(s)
    ctx, truth = context_before(trace, step), true_next_next(trace, step)
    groups: dict[str, Group] = {}
    for cd in s.candidates:
        q = g2.get(cd.rank)
        if q is not None and q.matched:
            key, g = f"g2 matched a {q.matched_n}-gram", Group(_shade(q.matched_n, sizes), q.matched_n)
        else:
            key, g = "g2 found no match", Group(c["bg"], None)
        g = groups.setdefault(key, g)
        g.x.append(cd.rank)
        g.y.append(cd.prob)
        g.text.append(str(g.n) if g.n else "")  # a hatched bar says "no match" itself
        g.hover.append(_hover(trace, s, cd, ctx, truth))
    return groups


def _bars(groups: dict[str, Group], c: dict[str, str]) -> list[go.Bar]:
    """One bar trace per group, longest n-gram first, no match last."""
    out = []
    for key in sorted(groups, key=lambda k: (groups[k].n is None, -(groups[k].n or 0))):
        g = groups[key]
        nomatch = g.n is None
        out.append(go.Bar(
            x=g.x, y=g.y, width=0.8, name=key, text=g.text, textposition="outside", cliponaxis=False,
            # A label keeps its font size over a bar narrower than it (Plotly would shrink it to the bar);
            # only the matched bars carry one.
            constraintext="none", textfont=dict(size=MIN_FONT, color=c["text"]), hovertext=g.hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(color=g.color, line=dict(color=PALETTE["g2"] if not nomatch else c["muted"], width=1.5),
                        pattern=dict(shape="/" if nomatch else "", fgcolor=c["muted"], size=8)),
        ))
    return out


def _truth_rank(trace: RunTrace, step: int) -> tuple[int | None, int | None]:
    """The true x_{i+2} (None: not known yet) and its rank among the candidates (None: absent)."""
    s, truth = get_step(trace, step), true_next_next(trace, step)
    return truth, next((cd.rank for cd in s.candidates if cd.token == truth), None)


def _words(trace: RunTrace, step: int) -> tuple[str, str, str]:
    """Title, subtitle, and the note that x_{i+1} is no candidate."""
    s = get_step(trace, step)
    ctx = context_before(trace, step)
    after = ctx + [s.root]  # a candidate follows x_{i+1}: joined after it, a character it completes shows whole
    root_text = html.escape(ngram_text(trace, [s.root], ctx), quote=False)
    title = f"Step {step_position(trace, step)}: candidates for the token after x_{{i+1}} = {root_text}"
    truth, truth_rank = _truth_rank(trace, step)
    sub = f"{len(s.candidates)} candidates from the same logits · bar label = n-gram length g2 matched (hatched: none)"
    if truth is None:
        sub += " · true x_{i+2} not known yet"
    else:
        where = "is not among them" if truth_rank is None else f"at rank {truth_rank}"
        sub += f" · true x_{{i+2}} = {html.escape(ngram_text(trace, [truth], after), quote=False)} {where}"
    rare = marks_note("".join(tok(trace, cd.token, after) for cd in s.candidates) + root_text, only="⇥⇤")
    if rare:  # the common marks are explained beside the text; a rare one where it appears
        sub += f" · {rare}"
    note = (f"x_{{i+1}} = {root_text} is the argmax and is committed;"
            "<br>the candidates are the next-best entries of the same logits")
    return title, sub, note


def _ticks(trace: RunTrace, step: int) -> tuple[list[int], list[str], list[int]]:
    """Tick values (0 = x_{i+1}, then the ranks), their token labels, and the ticks always labelled."""
    s = get_step(trace, step)
    after = context_before(trace, step) + [s.root]
    vals = [0] + [cd.rank for cd in s.candidates]
    text = [sub_x("<b>x_{i+1}</b>")] + [html.escape(truncate(tok(trace, cd.token, after), TICK_CHARS), quote=False)
                                        for cd in s.candidates]
    _, truth_rank = _truth_rank(trace, step)
    return vals, text, [0] + ([truth_rank] if truth_rank is not None else [])


def probability_ticks(lo: float, hi: float) -> dict:
    """A log probability axis's ticks from 10**lo to 10**hi: labels at the powers of ten only
    (1, 0.1, 0.01, then 10^-4…), with 2 and 5 times them where fewer than two powers fit, so no
    minor tick of Plotly's ("2, 5, 9 8 7 6 …") crowds the axis."""
    steps = [1] if math.floor(hi) - math.ceil(lo) >= 1 else [1, 2, 5]
    vals = sorted(m * 10.0 ** e for e in range(math.floor(lo), math.ceil(hi) + 1) for m in steps
                  if lo <= math.log10(m) + e <= hi)
    return dict(tickvals=vals, ticktext=[_probability_text(v) for v in vals], minor=dict(ticks="", showgrid=False))


def _probability_text(v: float) -> str:
    if v >= 0.001:
        return f"{v:g}"
    e = math.floor(math.log10(v) + 1e-9)
    m = round(v / 10.0 ** e)
    return (f"{m}×" if m != 1 else "") + f"10<sup>{e}</sup>"


def _axes(layout: dict, trace: RunTrace, step: int, c: dict[str, str], plot_w: float) -> None:
    s = get_step(trace, step)
    vals, text, keep = _ticks(trace, step)
    tickvals, ticktext = shown_ticks(vals, text, keep, plot_w / (max(vals) + 1.6), TICK_GAP_PX)
    ranks = [cd.rank for cd in s.candidates]
    probs = [cd.prob for cd in s.candidates]
    layout["xaxis"].update(tickvals=tickvals, ticktext=ticktext, tickangle=-90, range=[-0.8, max(ranks) + 0.8],
                           tickfont=dict(size=MIN_FONT, color=c["text"], family=MONO_FAMILY),
                           title=dict(text="Candidate x̂_{i+2} by rank"), showgrid=False)
    lo, hi = math.log10(min(probs)) - 0.3, math.log10(max(probs)) + 0.35
    layout["yaxis"].update(type="log", range=[lo, hi], title=dict(text="Probability (log scale)"),
                           **probability_ticks(lo, hi))


def _marks(fig: go.Figure, trace: RunTrace, step: int, c: dict[str, str], note: str | None) -> None:
    """The root's band, the note on it (framed figures), and the star on the true x_{i+2}."""
    s = get_step(trace, step)
    # x_{i+1}: the argmax itself, not a candidate; its probability is not in the trace.
    fig.add_vrect(x0=-0.4, x1=0.4, fillcolor=PALETTE["root"], opacity=0.85, line_width=0, layer="below")
    if note:
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", showarrow=False, xanchor="right", yanchor="top",
                           text=note, font=dict(size=MIN_FONT, color=c["text"]), bgcolor=c["bg"],
                           bordercolor=PALETTE["root"], borderwidth=2, align="left")
    fig.add_trace(go.Bar(x=[None], y=[None], name="x_{i+1}: the root (argmax)", marker=dict(color=PALETTE["root"])))
    truth, truth_rank = _truth_rank(trace, step)
    if truth_rank is None:
        return
    p = next(cd.prob for cd in s.candidates if cd.rank == truth_rank)
    fig.add_trace(go.Scatter(
        x=[truth_rank], y=[p], mode="markers", name="the true x_{i+2}", hoverinfo="skip",
        marker=dict(symbol="star", size=22, color=PALETTE["accepted"], line=dict(color=c["outline"], width=1.5)),
    ))
    fig.add_annotation(x=truth_rank, y=math.log10(p), text="true x_{i+2}", showarrow=True, arrowhead=2,
                       ax=40, ay=-50, font=dict(size=MIN_FONT + 1, color=c["text"]),
                       arrowcolor=PALETTE["accepted"], bgcolor=c["bg"])


def _draw(trace: RunTrace, step: int, theme: str, mode: str, size: tuple[int, int]) -> go.Figure:
    c = theme_colors(theme)
    words = _words(trace, step)
    bars = _bars(_groups(trace, step, c), c)
    names = [b.name for b in bars] + ["x_{i+1}: the root (argmax)", "the true x_{i+2}"]
    layout = base_layout(theme, words[0], height=size[1] if mode != "app" else APP_HEIGHT, barmode="overlay",
                         bargap=0.15, hovermode="closest")
    plot_w = frame(layout, mode, words[0], words[1], names, c, size, left=90, bottom=AXIS_PX)
    _axes(layout, trace, step, c, plot_w)
    fig = go.Figure(data=bars, layout=layout)
    _marks(fig, trace, step, c, None if mode == "app" else words[2])
    _, truth_rank = _truth_rank(trace, step)
    fig.update_layout(meta=dict(step=step_position(trace, step), truth=true_next_next(trace, step),
                                truth_rank=truth_rank))
    return pretty(fig)


def _empty_for(trace: RunTrace, step: int, theme: str, fit: bool) -> go.Figure:
    s = get_step(trace, step)
    title = _words(trace, step)[0]
    why = ("this decoder takes no next-next candidates" if trace.method != "logitspec"
           else "no forward pass was needed: nothing was drafted" if not s.forward
           else "this step drafted no candidates")
    fig = pretty(_empty(theme, title, why))
    if not fit:
        return fig
    app = go.Figure(fig)
    app.update_layout(title=dict(text=""), margin=dict(t=10))
    slide = go.Figure(fig)
    slide.update_layout(width=SLIDE_W, height=SLIDE_H)
    return for_app(app, slide, title)


def candidates_figure(trace: RunTrace, step: int, theme: str = "light", width: int | None = None,
                      fit: bool = False) -> go.Figure:
    """Bars of probability for each candidate x^_{i+2}, coloured by what its g2 lookup found.

    fit: drawn for the app (visual.fit.for_app), with its 16:9 slide and its ticks for the
    browser to thin; otherwise a figure `width` pixels wide (default PAGE_SIZE).
    """
    if not get_step(trace, step).candidates:
        return _empty_for(trace, step, theme, fit)
    if not fit:
        return _draw(trace, step, theme, "page", (width or PAGE_SIZE[0], PAGE_SIZE[1]))
    app = _draw(trace, step, theme, "app", PAGE_SIZE)
    slide = _draw(trace, step, theme, "slide", (SLIDE_W, SLIDE_H))
    title, sub, note = _words(trace, step)
    vals, text, keep = _ticks(trace, step)
    ticks = {"axis": "xaxis", "vals": vals, "text": text, "keep": keep, "min_px": TICK_GAP_PX}
    return for_app(app, slide, title, f"{sub}<br>{note}", {"ticks": ticks})
