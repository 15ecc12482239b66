"""The paper's observations, measured on one run."""
from __future__ import annotations

from collections import Counter

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.trace import RunTrace

from .data import (
    BOTH_FAILED,
    G1_MATCHED,
    G2_RESCUED,
    NO_RETRIEVAL,
    OUTCOMES_LOGITSPEC,
    OUTCOMES_PLD,
    PLD_MATCHED,
    forward_steps,
    outcome,
    true_next_next,
)
from .style import (
    ACCEPT_COLORS,
    MIN_FONT,
    PALETTE,
    base_layout,
    pretty,
    style_axes,
    text_on,
    theme_colors,
    top_legend,
)
from .text import accept_label

PAPER_TOPK = (60, 0.50)  # over 50% of next-next tokens lie within the top-60
PAPER_G2_SUCCESS = 0.9776  # retrieval success with g2
PAPER_PLAIN_FAILURE = 0.30  # plain lookup fails on over 30% of steps


def topk_hits(trace: RunTrace) -> list[tuple[int, int | None]]:
    """(step position, rank of the true x_{i+2} among the candidates or None) per forward step
    with candidates whose x_{i+2} is known."""
    out = []
    for i, s in enumerate(trace.steps):
        if not (s.forward and s.candidates):
            continue
        truth = true_next_next(trace, i)
        if truth is None:
            continue
        out.append((i, next((c.rank for c in s.candidates if c.token == truth), None)))
    return out


def topk_hit_curve(trace: RunTrace, K: int | None = None) -> list[float]:
    """Share of steps whose true x_{i+2} is among the candidates of rank <= k, for k = 1..K."""
    hits = topk_hits(trace)
    if K is None:
        K = max((len(s.candidates) for s in trace.steps if s.forward), default=0)
    if not hits or K <= 0:
        return []
    n = len(hits)
    counts = Counter(r for _, r in hits if r is not None)
    curve, run = [], 0
    for k in range(1, K + 1):
        run += counts.get(k, 0)
        curve.append(run / n)
    return curve


def _empty(fig: go.Figure, theme: str, message: str) -> go.Figure:
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=MIN_FONT + 4, color=theme_colors(theme)["muted"]))
    return fig


def topk_hit_figure(trace: RunTrace, theme: str = "light", K: int | None = None) -> go.Figure:
    """How often the true next-next token is among the top-k candidates, k = 1..K."""
    c = theme_colors(theme)
    curve = topk_hit_curve(trace, K)
    n = len(topk_hits(trace))
    fig = go.Figure()
    title = "How often the true x_{i+2} is among the top-k candidates"
    layout = base_layout(theme, title, height=540, margin=dict(l=90, r=40, t=140, b=80), hovermode="x")
    top_legend(layout, theme)
    layout["xaxis"].update(title=dict(text="k: candidates taken from the last logits"), rangemode="tozero")
    layout["yaxis"].update(title=dict(text="Steps with x_{i+2} in the top k (%)"), range=[0, 105])
    fig.update_layout(layout)
    if not curve:
        return pretty(_empty(fig, theme, "no step with candidates (only LogitSpec speculates x_{i+2})"))
    ks = list(range(1, len(curve) + 1))
    fig.add_trace(go.Scatter(
        x=ks, y=[100 * v for v in curve], mode="lines+markers", name="this run",
        line=dict(color=PALETTE["logitspec"], width=4), marker=dict(size=6),
        hovertemplate="top %{x}: %{y:.1f}% of steps<extra></extra>",
    ))
    kp, vp = PAPER_TOPK
    fig.add_trace(go.Scatter(
        x=[kp], y=[100 * vp], mode="markers+text", name="paper: over 50% within the top 60",
        marker=dict(symbol="diamond", size=16, color=PALETTE["g1"], line=dict(color=c["outline"], width=1.5)),
        text=["paper: > 50% within the top 60"], textposition="top left",
        textfont=dict(size=MIN_FONT + 1, color=c["text"]), hoverinfo="name",
    ))
    fig.add_hline(y=100 * vp, line=dict(color=c["muted"], width=1.5, dash="dash"))
    last = curve[-1]
    fig.add_annotation(x=len(curve), y=100 * last, text=f"this run, top {len(curve)}: {100 * last:.1f}%",
                       showarrow=True, arrowhead=2, ax=-80, ay=45 if last < 0.5 else -45, font=dict(size=MIN_FONT + 1, color=c["text"]),
                       bgcolor=c["bg"], arrowcolor=c["muted"])
    fig.update_layout(title_subtitle=dict(
        text=f"measured on {n} forward steps of this run; each step's true x_{{i+2}} is the token the output has there",
        font=dict(size=MIN_FONT + 1, color=c["muted"])))
    return pretty(fig)


def retrieval_outcomes(trace: RunTrace) -> list[str]:
    """Per forward step: "g1 matched", "g2 rescued" or "both failed" (pld: "matched" / "failed")."""
    return [outcome(s) for s in forward_steps(trace)]


def retrieval_success_figure(trace: RunTrace, theme: str = "light") -> go.Figure:
    """Retrieval success of g1 alone against g1 or g2, and the outcome of every step."""
    c = theme_colors(theme)
    outs = retrieval_outcomes(trace)
    n = len(outs)
    counts = Counter(outs)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.66, 0.34], vertical_spacing=0.3)
    layout = base_layout(theme, "Does retrieval find a continuation?", height=640,
                         margin=dict(l=200, r=60, t=110, b=80), barmode="overlay", bargap=0.45)
    layout.pop("xaxis")
    layout.pop("yaxis")
    fig.update_layout(layout)
    style_axes(fig, theme)
    if not n or counts.get(NO_RETRIEVAL) == n:
        return pretty(_empty(fig, theme, "this run did no retrieval"))

    pld = any(o in OUTCOMES_PLD for o in outs)
    if pld:
        bars = [("prompt lookup", counts[PLD_MATCHED] / n, PALETTE["pld"], 1 - PAPER_PLAIN_FAILURE,
                 "paper: plain lookup fails on > 30%")]
        order = OUTCOMES_PLD
    else:
        g1 = counts[G1_MATCHED] / n
        both = (counts[G1_MATCHED] + counts[G2_RESCUED]) / n
        bars = [("g1 or g2 (LogitSpec)", both, PALETTE["g2"], PAPER_G2_SUCCESS, "paper: 97.76% with g2"),
                ("g1 alone (plain lookup)", g1, PALETTE["g1"], 1 - PAPER_PLAIN_FAILURE,
                 "paper: plain lookup fails on > 30%")]
        order = OUTCOMES_LOGITSPEC
    for name, share, color, ref, ref_text in bars:
        fig.add_trace(go.Bar(
            y=[name], x=[100 * share], orientation="h", name=name, marker=dict(color=color),
            text=[f"{100 * share:.1f}%"], textposition="inside", insidetextanchor="start",
            textfont=dict(size=MIN_FONT + 4, color=text_on(color)),
            hovertemplate=f"{name}: %{{x:.1f}}% of {n} steps<extra></extra>", showlegend=False,
        ), row=1, col=1)
        fig.add_trace(go.Scatter(
            y=[name], x=[100 * ref], mode="markers", name=ref_text, showlegend=False,
            marker=dict(symbol="line-ns", size=46, line=dict(color=c["outline"], width=4)),
            hovertemplate=f"{ref_text}<extra></extra>",
        ), row=1, col=1)
        fig.add_annotation(x=100 * ref, y=name, text=ref_text, showarrow=False, xanchor="right", yanchor="bottom",
                           yshift=30, font=dict(size=MIN_FONT, color=c["text"]), xref="x", yref="y")
    fig.update_xaxes(range=[0, 105], title_text="Forward steps where a lookup matched (%)", row=1, col=1)
    fig.update_yaxes(showgrid=False, row=1, col=1)

    fwd = [i for i, s in enumerate(trace.steps) if s.forward]
    for o in order:
        xs = [i + 1 for i, oo in zip(fwd, outs) if oo == o]
        fig.add_trace(go.Scatter(
            x=xs or [None], y=[0] * len(xs) or [None], mode="markers", name=f"{o} ({counts[o]})",
            # Failures are crosses as well as vermillion: the shape tells them apart without colour.
            marker=dict(symbol="x" if o in (BOTH_FAILED, "failed") else "square", size=16, color=PALETTE[o],
                        line=dict(color=c["bg"], width=1)),
            hovertemplate=f"step %{{x}}: {o}<extra></extra>",
        ), row=2, col=1)
    fig.update_xaxes(title_text="Step", row=2, col=1, range=[0, len(trace.steps) + 1])
    fig.update_yaxes(visible=False, range=[-1, 1], row=2, col=1)
    strip_top = fig.layout.yaxis2.domain[1]
    fig.update_layout(
        legend=dict(orientation="h", x=0, y=strip_top + 0.01, xanchor="left", yanchor="bottom",
                    font=dict(size=MIN_FONT + 1, color=c["text"]),
                    title=dict(text="Every step:", font=dict(size=MIN_FONT + 1, color=c["text"]))),
        title_subtitle=dict(text=f"{n} forward steps of this run; the vertical marks are the paper's numbers",
                            font=dict(size=MIN_FONT + 1, color=c["muted"])))
    return pretty(fig)


def accepted_hist_figure(trace: RunTrace, theme: str = "light") -> go.Figure:
    """How many tokens each forward pass committed."""
    c = theme_colors(theme)
    steps = forward_steps(trace)
    counts = Counter(len(s.tokens) for s in steps)
    fig = go.Figure()
    layout = base_layout(theme, "Tokens committed per forward pass", height=500,
                         margin=dict(l=90, r=40, t=110, b=80), bargap=0.15)
    layout["xaxis"].update(title=dict(text="Tokens committed by one forward pass (x_{i+1} + accepted drafts)"),
                           dtick=1)
    layout["yaxis"].update(title=dict(text="Forward passes"))
    fig.update_layout(layout)
    if not steps:
        return pretty(_empty(fig, theme, "no forward step yet"))
    xs = sorted(counts)
    fig.add_trace(go.Bar(
        x=xs, y=[counts[x] for x in xs], marker=dict(color=[ACCEPT_COLORS[accept_label(x)] for x in xs],
                                                     line=dict(color=c["outline"], width=1)),
        text=[str(counts[x]) for x in xs], textposition="outside", cliponaxis=False,
        textfont=dict(size=MIN_FONT + 1, color=c["text"]), name="forward passes",
        hovertemplate="%{y} passes committed %{x} tokens<extra></extra>", showlegend=False,
    ))
    mean = trace.mean_accepted_tokens  # all tokens over forward passes, as the engine counts
    fig.add_vline(x=mean, line=dict(color=c["outline"], width=2, dash="dash"))
    fig.add_annotation(x=mean, y=1, yref="paper", text=f"mean {mean:.2f} tokens per pass", showarrow=False,
                       xanchor="left", xshift=8, yanchor="top", font=dict(size=MIN_FONT + 2, color=c["text"]),
                       bgcolor=c["bg"])
    fig.update_layout(title_subtitle=dict(
        text=(f"{len(steps)} forward passes made {len(trace.tokens)} tokens"
              + (" (the last token needed no pass)" if len(steps) < len(trace.steps) else "")
              + "; vanilla commits exactly 1 per pass"),
        font=dict(size=MIN_FONT + 1, color=c["muted"])))
    return pretty(fig)


def time_breakdown(trace: RunTrace) -> dict[str, float]:
    return {
        "prefill": trace.prefill_seconds,
        "draft": sum(s.draft_seconds for s in trace.steps),
        "forward": sum(s.forward_seconds for s in trace.steps),
        "bookkeeping": sum(s.bookkeeping_seconds for s in trace.steps),
    }


TIME_WORDS = {"prefill": "prefill (the prompt)", "draft": "drafting (speculate, retrieve, build tree)",
              "forward": "forward pass (verify)", "bookkeeping": "bookkeeping (inputs, accept, cache)"}


def time_breakdown_figure(trace: RunTrace, theme: str = "light") -> go.Figure:
    """Where the time went: totals, then every step."""
    c = theme_colors(theme)
    tb = time_breakdown(trace)
    total = sum(tb.values())
    fig = make_subplots(rows=2, cols=1, row_heights=[0.22, 0.78], vertical_spacing=0.2)
    layout = base_layout(theme, "Where the time went", height=660, barmode="stack",
                         margin=dict(l=110, r=40, t=150, b=80))
    layout.pop("xaxis")
    layout.pop("yaxis")
    fig.update_layout(layout)
    style_axes(fig, theme)
    for key, secs in tb.items():
        share = secs / total if total else 0.0
        fig.add_trace(go.Bar(
            y=["whole run"], x=[secs], orientation="h", name=TIME_WORDS[key], legendgroup=key,
            marker=dict(color=PALETTE[key], line=dict(color=c["bg"], width=1)),
            text=[f"{100 * share:.0f}%" if share >= 0.04 else ""], textposition="inside",
            textfont=dict(size=MIN_FONT + 1, color=text_on(PALETTE[key])),
            hovertemplate=f"{TIME_WORDS[key]}: %{{x:.3f}} s ({100 * share:.1f}%)<extra></extra>",
        ), row=1, col=1)
    xs = [i + 1 for i in range(len(trace.steps))]
    for key in ("draft", "forward", "bookkeeping"):
        ys = [1000 * getattr(s, f"{key}_seconds") for s in trace.steps]
        fig.add_trace(go.Bar(
            x=xs, y=ys, name=TIME_WORDS[key], legendgroup=key, showlegend=False,
            marker=dict(color=PALETTE[key]), hovertemplate=f"step %{{x}}: {key} %{{y:.1f}} ms<extra></extra>",
        ), row=2, col=1)
    fig.update_xaxes(title_text="Seconds of compute", row=1, col=1)
    fig.update_yaxes(showgrid=False, row=1, col=1)
    fig.update_xaxes(title_text="Step", row=2, col=1)
    fig.update_yaxes(title_text="Milliseconds", row=2, col=1)
    parts = " · ".join(f"{k} {v:.2f} s" for k, v in tb.items())
    top_legend(layout, theme)
    fig.update_layout(legend=layout["legend"], title_subtitle=dict(
        text=f"{total:.2f} s of compute in all: {parts}", font=dict(size=MIN_FONT + 1, color=c["muted"])))
    return pretty(fig)
