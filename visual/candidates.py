"""The next-next candidates of one step: the top-k of the logits that chose x_{i+1}."""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from logitspec.trace import RunTrace

from .data import (
    branch_nodes, context_before, g2_query_of_rank, get_step, match_text, ngram_text, query_tail, step_position, tok,
    true_next_next,
)
from .style import MIN_FONT, PALETTE, base_layout, pretty, theme_colors, top_legend, truncate

NGRAM_SHADES = ["#0072B2", "#56B4E9", "#A8D5F2", "#D6ECFA"]  # longest n first


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


def candidates_figure(trace: RunTrace, step: int, theme: str = "light", width: int | None = None) -> go.Figure:
    """Bars of probability for each candidate x^_{i+2}, coloured by what its g2 lookup found."""
    c = theme_colors(theme)
    s = get_step(trace, step)
    i = step_position(trace, step)
    ctx = context_before(trace, step)
    after = ctx + [s.root]  # a candidate follows x_{i+1}: joined after it, a character it completes shows whole
    root_text = html.escape(ngram_text(trace, [s.root], ctx), quote=False)
    title = f"Step {i}: candidates for the token after x_{{i+1}} = {root_text}"
    if not s.candidates:
        why = ("this decoder takes no next-next candidates" if trace.method != "logitspec"
               else "no forward pass was needed: nothing was drafted" if not s.forward
               else "this step drafted no candidates")
        return pretty(_empty(theme, title, why))

    sizes = [int(n) for n in trace.settings.get("ngram_sizes", [1, 2, 3])] or [1, 2, 3]
    g2 = g2_query_of_rank(s)
    truth = true_next_next(trace, step)
    ranks = [cd.rank for cd in s.candidates]
    groups: dict[str, dict] = {}
    for cd in s.candidates:
        q = g2.get(cd.rank)
        if q is not None and q.matched:
            key, color, n = f"g2 matched a {q.matched_n}-gram", _shade(q.matched_n, sizes), q.matched_n
        else:
            key, color, n = "g2 found no match", c["bg"], None
        g = groups.setdefault(key, dict(x=[], y=[], text=[], hover=[], color=color, n=n))
        g["x"].append(cd.rank)
        g["y"].append(cd.prob)
        g["text"].append(str(n) if n else "–")
        hv = [f"<b>{html.escape(tok(trace, cd.token, after), quote=False)}</b>   token id {cd.token}",
              f"rank {cd.rank} · probability {cd.prob:.5f} · logit {cd.logit:.2f}"]
        if q is not None:
            hv.append("g2 lookup: " + html.escape(match_text(trace, q, query_tail(s, q, ctx)), quote=False))
            qi = s.queries.index(q)
            bn = branch_nodes(s, qi)
            ver = sum(1 for _, nd in bn if nd is not None and not nd.pruned)
            pr = sum(1 for _, nd in bn if nd is not None and nd.pruned)
            acc = sum(1 for _, nd in bn if nd is not None and nd.id in set(s.accepted_path))
            hv.append(f"in the tree: {ver} verified, {pr} pruned, {acc} accepted")
        if truth is not None:
            hv.append("the true x_{i+2}" if cd.token == truth else "not the true x_{i+2}")
        g["hover"].append("<br>".join(hv))

    fig = go.Figure()
    order = sorted(groups, key=lambda k: (groups[k]["n"] is None, -(groups[k]["n"] or 0)))
    for key in order:
        g = groups[key]
        nomatch = g["n"] is None
        fig.add_trace(go.Bar(
            x=g["x"], y=g["y"], name=key, text=g["text"], textposition="outside", cliponaxis=False,
            textfont=dict(size=MIN_FONT, color=c["text"]), hovertext=g["hover"],
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(color=g["color"], line=dict(color=PALETTE["g2"] if not nomatch else c["muted"], width=1.5),
                        pattern=dict(shape="/" if nomatch else "", fgcolor=c["muted"], size=8)),
        ))

    ticktext = [html.escape(truncate(tok(trace, cd.token, after), 8), quote=False) for cd in s.candidates]
    ymin = min(cd.prob for cd in s.candidates)
    ymax = max(cd.prob for cd in s.candidates)
    truth_rank = next((cd.rank for cd in s.candidates if cd.token == truth), None)
    sub = (f"{len(s.candidates)} candidates from the same logits · bar label = n-gram length g2 matched (– none)")
    if truth is None:
        sub += " · true x_{i+2} not known yet"
    elif truth_rank is None:
        sub += f" · true x_{{i+2}} = {html.escape(ngram_text(trace, [truth], after), quote=False)} is not among them"
    else:
        sub += f" · true x_{{i+2}} = {html.escape(ngram_text(trace, [truth], after), quote=False)} at rank {truth_rank}"
    layout = base_layout(theme, title, height=580, barmode="overlay", bargap=0.15,
                         margin=dict(l=90, r=30, t=140, b=150), hovermode="closest")
    if width:
        layout["width"] = width
    layout["title"]["subtitle"] = dict(text=sub, font=dict(size=MIN_FONT + 1, color=c["muted"]))
    top_legend(layout, theme)
    layout["xaxis"].update(tickvals=[0] + ranks, ticktext=["<b>x_{i+1}</b>"] + ticktext, tickangle=-90,
                           range=[-0.8, max(ranks) + 0.8],
                           tickfont=dict(size=MIN_FONT, color=c["text"], family="'DejaVu Sans Mono', monospace"),
                           title=dict(text="Candidate x̂_{i+2}, by rank (most likely first)"), showgrid=False)
    layout["yaxis"].update(type="log", range=[math.log10(ymin) - 0.3, math.log10(ymax) + 0.35],
                           title=dict(text="Probability (log scale)"))
    fig.update_layout(layout)
    # x_{i+1}: the argmax itself, not a candidate; its probability is not in the trace.
    fig.add_vrect(x0=-0.4, x1=0.4, fillcolor=PALETTE["root"], opacity=0.85, line_width=0, layer="below")
    fig.add_annotation(x=1, y=1, xref="paper", yref="paper", showarrow=False, xanchor="right", yanchor="top",
                       text=(f"x_{{i+1}} = {root_text} is the argmax and is committed;"
                             "<br>the candidates are the next-best entries of the same logits"),
                       font=dict(size=MIN_FONT, color=c["text"]), bgcolor=c["bg"], bordercolor=PALETTE["root"],
                       borderwidth=2, align="left")
    fig.add_trace(go.Bar(x=[None], y=[None], name="x_{i+1}: the root (argmax)", marker=dict(color=PALETTE["root"])))
    if truth_rank is not None:
        p = next(cd.prob for cd in s.candidates if cd.rank == truth_rank)
        fig.add_trace(go.Scatter(
            x=[truth_rank], y=[p], mode="markers", name="the true x_{i+2}", hoverinfo="skip",
            marker=dict(symbol="star", size=22, color=PALETTE["accepted"], line=dict(color=c["outline"], width=1.5)),
        ))
        fig.add_annotation(x=truth_rank, y=math.log10(p), text="true x_{i+2}", showarrow=True, arrowhead=2,
                           ax=40, ay=-50, font=dict(size=MIN_FONT + 1, color=c["text"]),
                           arrowcolor=PALETTE["accepted"], bgcolor=c["bg"])
    fig.update_layout(meta=dict(step=i, truth=truth, truth_rank=truth_rank))
    return pretty(fig)
