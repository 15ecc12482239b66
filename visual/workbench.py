"""The workbench's figures, drawn from a set file's summaries (analysis/sets.py) alone; its tables
and CSV are logitspec/analysis/set_tables.py's.

Pure functions: no torch, no model, no Gradio. Every number is counted from the runs' traces
(analysis/failures.py).
"""
from __future__ import annotations

import plotly.graph_objects as go

from logitspec.analysis.set_tables import OUTCOME_COLUMN, outcomes_of
from logitspec.analysis.sets import SetFile
from logitspec.core.trace import PLD_FAILED, PLD_MATCHED

from .style import PALETTE, base_layout

LOOKUP_OUTCOMES = (PLD_MATCHED, PLD_FAILED)
# At the foot of the figure, under the ticks: a phone's width fits no legend beside the title.
BOTTOM_LEGEND = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")
FIGURE_RUNS = 30  # runs the outcome figure draws at most: a bar each, readable on a phone


def outcome_figure(s: SetFile, theme: str = "light") -> go.Figure:
    """Each run's steps by retrieval outcome, as stacked shares; the run with most failures on top
    (of a large set, the FIGURE_RUNS runs that failed most: the table holds every run)."""
    entries = sorted(s.entries, key=lambda e: (e.summary.failed_share, e.prompt))[-FIGURE_RUNS:]
    names = s.names()
    labels = [f"#{e.prompt + 1} {e.category} {e.question_id} · {names[e.label]}" for e in entries]
    height = max(360, 200 + 26 * len(entries))
    title = "Steps by outcome, % of each run's passes" + (f" (the {FIGURE_RUNS} runs that failed most)"
                                                          if len(s.entries) > FIGURE_RUNS else "")
    layout = base_layout(theme, title, height=height + 60, barmode="stack", margin=dict(l=80, r=30, t=60, b=130))
    layout["legend"].update(BOTTOM_LEGEND, traceorder="normal")
    fig = go.Figure(layout=layout)
    for o in outcomes_of(s.entries):
        shares = [100 * e.summary.share(o) for e in entries]
        counts = [e.summary.outcomes.get(o, 0) for e in entries]
        # A lookup's outcome keeps the colour of what it means (matched, failed) and is hatched, so that
        # "lookup matched" and "g1 matched" read apart in the legend.
        pattern = dict(shape="/", fgcolor="white", solidity=0.3) if o in LOOKUP_OUTCOMES else None
        fig.add_bar(y=labels, x=shares, orientation="h", name=OUTCOME_COLUMN[o].removesuffix(" %"),
                    marker=dict(color=PALETTE[o], pattern=pattern), customdata=counts,
                    hovertemplate="%{y}<br>" + OUTCOME_COLUMN[o].removesuffix(" %") + ": %{customdata} steps (%{x:.0f}%)<extra></extra>")
    fig.update_xaxes(range=[0, 100])
    return fig


def side_by_side_figure(sbs, theme: str = "light") -> go.Figure:
    """Two runs of one prompt aligned by output position: a bar per step, its width the tokens it
    committed, its colour its retrieval outcome; a line where the runs part."""
    layout = base_layout(theme, "Two runs, by output token", height=360, barmode="overlay",
                         margin=dict(l=80, r=30, t=60, b=130))
    layout["legend"].update(BOTTOM_LEGEND)
    fig = go.Figure(layout=layout)
    shown: set[str] = set()
    for name, spans in zip(sbs.names, sbs.spans):
        for o in dict.fromkeys(s.outcome for s in spans):
            mine = [s for s in spans if s.outcome == o]
            label = OUTCOME_COLUMN.get(o, o + " %").removesuffix(" %")
            fig.add_bar(y=[name] * len(mine), x=[s.length for s in mine], base=[s.start for s in mine],
                        orientation="h", name=label, legendgroup=label, showlegend=label not in shown,
                        marker=dict(color=PALETTE.get(o, "#8C8C8C"), line=dict(width=1, color="white")),
                        customdata=[[s.step, s.length] for s in mine],
                        hovertemplate="step %{customdata[0]}: %{customdata[1]} tokens from %{base}<extra>" + o + "</extra>")
            shown.add(label)
    if sbs.parts_at is not None:
        fig.add_vline(x=sbs.parts_at, line_dash="dash", line_color="#555555")
    fig.update_xaxes(range=[0, max(1, sbs.compared)])
    return fig
