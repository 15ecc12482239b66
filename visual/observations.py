"""The paper's observations, measured on one run.

Each figure is drawn for a page (PAGE_SIZE), or for the app (`fit=True`, visual.fit: the
container's width, the words in an HTML caption, a 16:9 slide inside)."""
from __future__ import annotations

from collections import Counter

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.analysis.budget import BUDGET_MAX, BudgetReplay, replay_budgets
from logitspec.analysis.lanes import LANES
from logitspec.core.limits import InputError
from logitspec.core.trace import BOTH_FAILED, G1_MATCHED, G2_RESCUED, NO_RETRIEVAL, PLD_MATCHED, RunTrace

from .counts import passes_words, plural, run_counts
from .data import OUTCOMES_LOGITSPEC, OUTCOMES_PLD, forward_steps, outcome, true_next_next
from .fit import SLIDE_H, SLIDE_W, for_app, frame, wrap_html
from .style import (ACCEPT_COLORS, BUDGET_DASH, BUDGET_NAMES, MIN_FONT, PALETTE, base_layout, pretty, style_axes,
                    text_on, theme_colors)
from .text import accept_label

PAPER_TOPK = (60, 0.50)  # over 50% of next-next tokens lie within the top-60
PAPER_G2_SUCCESS = 0.9776  # retrieval success with g2
PAPER_PLAIN_FAILURE = 0.30  # plain lookup fails on over 30% of steps
PAGE_W = 1100
APP_HEIGHTS = {"topk": 420, "retrieval": 500, "accepted": 400, "time": 500, "budget": 440}
PAGE_HEIGHTS = {"topk": 540, "retrieval": 640, "accepted": 500, "time": 660, "budget": 600}


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
    text, _ = wrap_html(message, 300, MIN_FONT + 4)  # centred: narrow enough for a phone
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=MIN_FONT + 4, color=theme_colors(theme)["muted"]))
    return fig


def _size(kind: str, mode: str) -> tuple[int, int]:
    if mode == "slide":
        return SLIDE_W, SLIDE_H
    return PAGE_W, (APP_HEIGHTS if mode == "app" else PAGE_HEIGHTS)[kind]


def _fitted(draw, words: tuple[str, str], fit: bool, *args) -> go.Figure:
    """A figure as `draw` makes it for a page, or for the app with its slide (visual.fit)."""
    if not fit:
        return draw(*args, "page")
    return for_app(draw(*args, "app"), draw(*args, "slide"), *words)


def _subplots_layout(fig: go.Figure, layout: dict, theme: str) -> None:
    """A subplot figure takes the framed layout but keeps its own axes."""
    layout.pop("xaxis")
    layout.pop("yaxis")
    fig.update_layout(layout)
    style_axes(fig, theme)


def _topk_words(trace: RunTrace) -> tuple[str, str]:
    n = len(topk_hits(trace))
    return ("How often the true x_{i+2} is among the top-k candidates",
            f"measured on {n} forward steps of this run; each step's true x_{{i+2}} is the token the output has there")


def _draw_topk(trace: RunTrace, theme: str, K: int | None, mode: str) -> go.Figure:
    c = theme_colors(theme)
    curve = topk_hit_curve(trace, K)
    words = _topk_words(trace)
    kp, vp = PAPER_TOPK
    paper = f"paper: over {100 * vp:.0f}% within the top {kp}"
    layout = base_layout(theme, words[0], height=_size("topk", mode)[1], hovermode="x")
    frame(layout, mode, *words, ["this run", paper] if curve else [], c, _size("topk", mode))
    layout["xaxis"].update(title=dict(text="k (candidates taken)"), rangemode="tozero")
    layout["yaxis"].update(title=dict(text="Steps with x_{i+2} in the top k (%)"), range=[0, 105])
    fig = go.Figure(layout=layout)
    if not curve:
        return pretty(_empty(fig, theme, "no step with candidates (only LogitSpec speculates x_{i+2})"))
    fig.add_trace(go.Scatter(
        x=list(range(1, len(curve) + 1)), y=[100 * v for v in curve], mode="lines+markers", name="this run",
        line=dict(color=PALETTE["logitspec"], width=4), marker=dict(size=6),
        hovertemplate="top %{x}: %{y:.1f}% of steps<extra></extra>",
    ))
    # The paper's point names itself in the legend; a framed figure also writes it beside the point.
    fig.add_trace(go.Scatter(
        x=[kp], y=[100 * vp], mode="markers" if mode == "app" else "markers+text", name=paper,
        marker=dict(symbol="diamond", size=16, color=PALETTE["g1"], line=dict(color=c["outline"], width=1.5)),
        text=[f"paper: > {100 * vp:.0f}% within the top {kp}"], textposition="top left",
        textfont=dict(size=MIN_FONT + 1, color=c["text"]), hoverinfo="name",
    ))
    fig.add_hline(y=100 * vp, line=dict(color=c["muted"], width=1.5, dash="dash"))
    last = curve[-1]
    fig.add_annotation(x=len(curve), y=100 * last, text=f"{'' if mode == 'app' else 'this run, '}top {len(curve)}: "
                       f"{100 * last:.1f}%", showarrow=True, arrowhead=2, ax=-60, ay=45 if last < 0.5 else -45,
                       font=dict(size=MIN_FONT + 1, color=c["text"]), bgcolor=c["bg"], arrowcolor=c["muted"],
                       xanchor="right")
    return pretty(fig)


def topk_hit_figure(trace: RunTrace, theme: str = "light", K: int | None = None, fit: bool = False) -> go.Figure:
    """How often the true next-next token is among the top-k candidates, k = 1..K."""
    return _fitted(_draw_topk, _topk_words(trace), fit, trace, theme, K)


def retrieval_outcomes(trace: RunTrace) -> list[str]:
    """Per forward step: "g1 matched", "g2 rescued" or "both failed" (pld: "matched" / "failed")."""
    return [outcome(s) for s in forward_steps(trace)]


# (trace name, y label, colour, the paper's share, the paper's words)
LOOKUP_BARS = {
    "g1 or g2": ("g1 or g2 (LogitSpec)", "g1 or g2<br>(LogitSpec)", PALETTE["g2"], PAPER_G2_SUCCESS,
                 "paper: 97.76% with g2"),
    "g1": ("g1 alone (plain lookup)", "g1 alone<br>(plain lookup)", PALETTE["g1"], 1 - PAPER_PLAIN_FAILURE,
           "paper: plain lookup fails on > 30%"),
    "pld": ("prompt lookup", "prompt<br>lookup", PALETTE["pld"], 1 - PAPER_PLAIN_FAILURE,
            "paper: plain lookup fails on > 30%"),
}


def _lookup_bars(fig: go.Figure, outs: list[str], c: dict[str, str], mode: str) -> None:
    """Row 1: each lookup's share of steps that matched, against the paper's mark."""
    n, counts = len(outs), Counter(outs)
    if any(o in OUTCOMES_PLD for o in outs):
        shares = {"pld": counts[PLD_MATCHED] / n}
    else:
        shares = {"g1 or g2": (counts[G1_MATCHED] + counts[G2_RESCUED]) / n, "g1": counts[G1_MATCHED] / n}
    for i, (key, share) in enumerate(shares.items()):
        name, label, color, ref, ref_text = LOOKUP_BARS[key]
        fig.add_trace(go.Bar(
            y=[label], x=[100 * share], orientation="h", name=name, marker=dict(color=color),
            text=[f"{100 * share:.1f}%"], textposition="inside", insidetextanchor="start",
            textfont=dict(size=MIN_FONT + 4, color=text_on(color)),
            hovertemplate=f"{name}: %{{x:.1f}}% of {n} steps<extra></extra>", showlegend=False,
        ), row=1, col=1)
        # The paper's number: a bold mark, named in the legend once (and beside it on a framed figure).
        fig.add_trace(go.Scatter(
            y=[label], x=[100 * ref], mode="markers", name="the paper's number", showlegend=i == 0,
            legendgroup="paper", marker=dict(symbol="line-ns", size=46, line=dict(color=c["outline"], width=4)),
            hovertemplate=f"{ref_text}<extra></extra>",
        ), row=1, col=1)
        if mode != "app":
            fig.add_annotation(x=100 * ref, y=label, text=ref_text, showarrow=False, xanchor="right",
                               yanchor="bottom", yshift=30, font=dict(size=MIN_FONT, color=c["text"]),
                               xref="x", yref="y")
    fig.update_xaxes(range=[0, 105], title_text="Steps with a match (%)", row=1, col=1)
    fig.update_yaxes(showgrid=False, row=1, col=1)


def _outcome_strip(fig: go.Figure, trace: RunTrace, outs: list[str], c: dict[str, str]) -> None:
    """Row 2: every forward step's outcome."""
    counts = Counter(outs)
    order = OUTCOMES_PLD if any(o in OUTCOMES_PLD for o in outs) else OUTCOMES_LOGITSPEC
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


def _retrieval_words(trace: RunTrace) -> tuple[str, str]:
    return ("Does retrieval find a continuation?",
            f"{passes_words(run_counts(trace).passes)} of this run; the vertical marks are the paper's numbers; "
            "below, each step's outcome")


def _draw_retrieval(trace: RunTrace, theme: str, mode: str) -> go.Figure:
    c = theme_colors(theme)
    outs = retrieval_outcomes(trace)
    words = _retrieval_words(trace)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.66, 0.34], vertical_spacing=0.3)
    layout = base_layout(theme, words[0], height=_size("retrieval", mode)[1], barmode="overlay", bargap=0.45)
    counts = Counter(outs)
    if not outs or counts.get(NO_RETRIEVAL) == len(outs):
        frame(layout, mode, *words, [], c, _size("retrieval", mode))
        _subplots_layout(fig, layout, theme)
        return pretty(_empty(fig, theme, "this run did no retrieval"))
    order = OUTCOMES_PLD if any(o in OUTCOMES_PLD for o in outs) else OUTCOMES_LOGITSPEC
    names = ["the paper's number"] + [f"{o} ({counts[o]})" for o in order]
    frame(layout, mode, *words, names, c, _size("retrieval", mode), left=120)
    _subplots_layout(fig, layout, theme)
    _lookup_bars(fig, outs, c, mode)
    _outcome_strip(fig, trace, outs, c)
    return pretty(fig)


def retrieval_success_figure(trace: RunTrace, theme: str = "light", fit: bool = False) -> go.Figure:
    """Retrieval success of g1 alone against g1 or g2, and the outcome of every step."""
    return _fitted(_draw_retrieval, _retrieval_words(trace), fit, trace, theme)


def _accepted_words(trace: RunTrace) -> tuple[str, str]:
    c = run_counts(trace)
    return ("Tokens committed per forward pass",
            f"{passes_words(c.passes)} made {plural(c.tokens, 'token')}"
            + (" (the last token needed no pass)" if c.passes < c.steps else "")
            + "; vanilla commits exactly 1 per pass; a pass commits x_{i+1} and the drafts it accepted")


def _draw_accepted(trace: RunTrace, theme: str, mode: str) -> go.Figure:
    c = theme_colors(theme)
    steps = forward_steps(trace)
    counts = Counter(len(s.tokens) for s in steps)
    words = _accepted_words(trace)
    mean = run_counts(trace).tokens_per_pass  # all tokens over forward passes, as every tab counts
    mean_name = f"mean {mean:.2f} tokens per pass"
    layout = base_layout(theme, words[0], height=_size("accepted", mode)[1], bargap=0.15)
    frame(layout, mode, *words, [mean_name] if steps else [], c, _size("accepted", mode))
    layout["xaxis"].update(title=dict(text="Tokens per pass"), dtick=1)
    layout["yaxis"].update(title=dict(text="Forward passes"))
    fig = go.Figure(layout=layout)
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
    # The mean: a dashed line named in the legend (nothing to collide with on a narrow screen).
    fig.add_trace(go.Scatter(x=[mean, mean], y=[0, max(counts.values()) * 1.12], mode="lines", name=mean_name,
                             line=dict(color=c["outline"], width=2, dash="dash"), hoverinfo="name"))
    return pretty(fig)


def accepted_hist_figure(trace: RunTrace, theme: str = "light", fit: bool = False) -> go.Figure:
    """How many tokens each forward pass committed."""
    return _fitted(_draw_accepted, _accepted_words(trace), fit, trace, theme)


def time_breakdown(trace: RunTrace) -> dict[str, float]:
    return {
        "prefill": trace.prefill_seconds,
        "draft": sum(s.draft_seconds for s in trace.steps),
        "forward": sum(s.forward_seconds for s in trace.steps),
        "bookkeeping": sum(s.bookkeeping_seconds for s in trace.steps),
    }


TIME_WORDS = {"prefill": "prefill (the prompt)", "draft": "drafting", "forward": "forward pass (verify)",
              "bookkeeping": "bookkeeping"}


def _time_words(trace: RunTrace) -> tuple[str, str]:
    tb = time_breakdown(trace)
    parts = " · ".join(f"{k} {v:.2f} s" for k, v in tb.items())
    # A copied prefill (runtime/prefills.py) is charged the measured time of the pass that ran.
    shared = "; the prefill was one pass shared with an earlier run of this prompt" if trace.prefill_reused else ""
    return "Where the time went", (f"{sum(tb.values()):.2f} s of compute in all: {parts}; drafting = speculate, "
                                   f"retrieve, build the tree; bookkeeping = inputs, acceptance, cache{shared}")


def _time_bars(fig: go.Figure, trace: RunTrace, c: dict[str, str]) -> None:
    """Row 1: the whole run's seconds by kind; row 2: every step's milliseconds."""
    tb = time_breakdown(trace)
    total = sum(tb.values())
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


def _draw_time(trace: RunTrace, theme: str, mode: str) -> go.Figure:
    c = theme_colors(theme)
    words = _time_words(trace)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.22, 0.78], vertical_spacing=0.2)
    layout = base_layout(theme, words[0], height=_size("time", mode)[1], barmode="stack")
    frame(layout, mode, *words, list(TIME_WORDS.values()), c, _size("time", mode), left=110)
    _subplots_layout(fig, layout, theme)
    _time_bars(fig, trace, c)
    fig.update_xaxes(title_text="Seconds of compute", row=1, col=1)
    fig.update_yaxes(showgrid=False, row=1, col=1)
    fig.update_xaxes(title_text="Step", row=2, col=1)
    fig.update_yaxes(title_text="Milliseconds", row=2, col=1)
    return pretty(fig)


def time_breakdown_figure(trace: RunTrace, theme: str = "light", fit: bool = False) -> go.Figure:
    """Where the time went: totals, then every step."""
    return _fitted(_draw_time, _time_words(trace), fit, trace, theme)


# Each replayed ordering in the colour of the lane whose tree it follows (its row's `replay`).
BUDGET_LOOK = {ln.replay: (PALETTE[ln.name], BUDGET_DASH[ln.replay]) for ln in LANES if ln.replay}
GPU_BUDGET_WORDS = "what a GPU would verify in one pass"


def _budget_words(trace: RunTrace) -> tuple[str, str]:
    return ("Tokens per pass against tree budget",
            f"each of the {passes_words(run_counts(trace).passes)} of this run replayed with a tree of at most "
            "B nodes, root included: tokens the output confirms, counted, no speed simulated. The paper's tree "
            "is rebuilt from each step's candidates and lookups; the cost tree ranks only the nodes it recorded; "
            "prompt lookup's chain is looked up again in the context")


def _own_name(rep: BudgetReplay) -> str:
    return f"this run: {rep.own_budget:.1f} nodes, {rep.tokens_per_pass:.2f} per pass"


def _own_point(rep: BudgetReplay, c: dict[str, str], mode: str) -> go.Scatter:
    """The budget the run used (its mean tree) and the tokens per pass it really made."""
    side = "left" if rep.own_budget > 16 else "right"  # toward the middle: the words stay inside the plot
    return go.Scatter(x=[rep.own_budget], y=[rep.tokens_per_pass], mode="markers" if mode == "app" else "markers+text",
                      name=_own_name(rep), marker=dict(symbol="diamond", size=16, color=PALETTE["accepted"],
                                                       line=dict(color=c["outline"], width=1.5)),
                      text=["the budget this run used"], textposition=f"bottom {side}",
                      textfont=dict(size=MIN_FONT + 1, color=c["text"]), hoverinfo="name")


def _budget_curves(fig: go.Figure, rep: BudgetReplay) -> None:
    """One line per ordering, with a marker at B = 64."""
    for name, curve in rep.curves.items():
        color, dash = BUDGET_LOOK[name]
        ys = curve.per_pass
        fig.add_trace(go.Scatter(
            x=list(range(1, len(ys) + 1)), y=ys, mode="lines", name=BUDGET_NAMES[name],
            line=dict(color=color, width=4, dash=dash), customdata=curve.reached,
            hovertemplate=(f"{BUDGET_NAMES[name]}<br>B = %{{x}}: %{{y:.2f}} tokens per pass<br>"
                           f"%{{customdata}} of {curve.passes} passes held B nodes<extra></extra>")))
        fig.add_trace(go.Scatter(
            x=[len(ys)], y=[ys[-1]], mode="markers", name=f"{BUDGET_NAMES[name]} at {len(ys)}", showlegend=False,
            marker=dict(symbol="circle", size=12, color=color), hovertemplate=(
                f"{BUDGET_NAMES[name]} at {len(ys)} ({GPU_BUDGET_WORDS}): %{{y:.2f}} tokens per pass<extra></extra>")))


def _gpu_line(fig: go.Figure, rep: BudgetReplay, c: dict[str, str], mode: str) -> None:
    """B = 64 marked and named: a trace, so it sits in data coordinates on the log axis."""
    top = max([rep.tokens_per_pass, *(max(v.per_pass) for v in rep.curves.values())]) * 1.12
    label, app = f"{BUDGET_MAX}: {GPU_BUDGET_WORDS}", mode == "app"
    # A narrow app plot has no room for the words beside the line: its legend holds them, on two lines for a phone.
    fig.add_trace(go.Scatter(x=[BUDGET_MAX, BUDGET_MAX], y=[0, top], mode="lines+text", showlegend=app,
                             name=label.replace(" verify", "<br>verify") if app else label,
                             line=dict(color=c["muted"], width=1.5, dash="dash"), text=["", "" if app else label + " "],
                             textposition="bottom left", textfont=dict(size=MIN_FONT, color=c["text"]),
                             hoverinfo="name"))


def _draw_budget(trace: RunTrace, rep: BudgetReplay | str, theme: str, mode: str) -> go.Figure:
    c = theme_colors(theme)
    words = _budget_words(trace)
    layout = base_layout(theme, words[0], height=_size("budget", mode)[1], hovermode="closest")
    names = [] if isinstance(rep, str) else [BUDGET_NAMES[n] for n in rep.curves] + [_own_name(rep)]
    frame(layout, mode, *words, names, c, _size("budget", mode))
    layout["xaxis"].update(title=dict(text="Tree budget B (nodes)"),
                           type="log", tickvals=[1, 2, 4, 8, 16, 32, 64], range=[-0.05, 1.86])
    layout["yaxis"].update(title=dict(text="Tokens per forward pass"), rangemode="tozero")
    fig = go.Figure(layout=layout)
    if isinstance(rep, str):
        return pretty(_empty(fig, theme, rep))
    _budget_curves(fig, rep)
    _gpu_line(fig, rep, c, mode)
    fig.add_trace(_own_point(rep, c, mode))
    return pretty(fig)


def budget_replay(trace: RunTrace) -> BudgetReplay | str:
    """The run replayed at every budget (logitspec.analysis.budget), or why it cannot be, in words."""
    try:
        rep = replay_budgets(trace)
    except InputError as e:
        return str(e)
    return rep if rep.passes else "no forward pass yet"


def budget_figure(trace: RunTrace, theme: str = "light", fit: bool = False) -> go.Figure:
    """Tokens per forward pass a tree of at most B nodes would have accepted on this run, B = 1..64
    (logitspec.analysis.budget), for the paper's tree, the cost tree's ranking and prompt lookup's chain."""
    return _fitted(_draw_budget, _budget_words(trace), fit, trace, budget_replay(trace), theme)
