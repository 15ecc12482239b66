"""The workbench's tables, figure and CSV, drawn from a set file's summaries (analysis/sets.py) alone.

Pure functions: no torch, no model, no Gradio. Every number is counted from the runs' traces
(analysis/failures.py); the CSV holds the same rows as the tables on screen.
"""
from __future__ import annotations

import csv
import io
from typing import Any

import plotly.graph_objects as go

from logitspec.analysis.failures import RunSummary, summarise_set
from logitspec.analysis.sets import SetEntry, SetFile
from logitspec.core.trace import BOTH_FAILED, G1_MATCHED, G2_RESCUED, PLD_FAILED, PLD_MATCHED

from .style import PALETTE, base_layout, visible

# Outcomes in the order a reader takes them: found by g1, rescued by g2, nothing found.
OUTCOME_ORDER = (G1_MATCHED, G2_RESCUED, BOTH_FAILED, PLD_MATCHED, PLD_FAILED)
# How a method's outcomes are named in a column: prompt lookup's "matched" is not LogitSpec's g1.
OUTCOME_COLUMN = {G1_MATCHED: "g1 matched %", G2_RESCUED: "g2 rescued %", BOTH_FAILED: "both failed %",
                  PLD_MATCHED: "lookup matched %", PLD_FAILED: "lookup failed %"}
LOOKUP_OUTCOMES = (PLD_MATCHED, PLD_FAILED)
NGRAM_CHARS = 24  # a failed n-gram's text in a cell
# At the foot of the figure, under the ticks: a phone's width fits no legend beside the title.
BOTTOM_LEGEND = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")
FIGURE_RUNS = 30  # runs the outcome figure draws at most: a bar each, readable on a phone


def outcomes_of(entries: list[SetEntry]) -> list[str]:
    """The outcomes any run of the set recorded, in OUTCOME_ORDER."""
    seen = {o for e in entries for o in e.summary.outcomes}
    return [o for o in OUTCOME_ORDER if o in seen]


def _counts(s: RunSummary | Any, outcomes: list[str]) -> dict[str, Any]:
    """The columns every row shares: steps, tokens, tokens per pass, the outcome shares and failures."""
    row: dict[str, Any] = {"steps": s.steps, "tokens": s.tokens, "tokens/pass": round(s.tokens_per_pass, 2)}
    row.update({OUTCOME_COLUMN[o]: round(100 * s.share(o), 1) for o in outcomes})
    row["failed %"] = round(100 * s.failed_steps / s.steps, 1) if s.steps else 0.0
    row["longest failed run"] = s.longest_failed
    return row


def ngram_cell(pairs: list[tuple[str, int]]) -> str:
    """The most failed n-grams as '"text" ×n', visible whitespace."""
    return " · ".join(f"“{visible(text)[:NGRAM_CHARS]}” ×{n}" for text, n in pairs)


def prompt_rows(s: SetFile) -> list[dict[str, Any]]:
    """One row per run (a prompt under a method), in the order written."""
    outcomes, rows = outcomes_of(s.entries), []
    for e in s.entries:
        r = e.summary
        rows.append({"prompt": e.prompt + 1, "id": str(e.question_id), "category": e.category, "method": e.label,
                     **_counts(r, outcomes),
                     "opens at step": r.worst_step, "most failed n-grams": ngram_cell(r.top_ngrams(3))})
    return rows


def overall_rows(s: SetFile) -> list[dict[str, Any]]:
    """One row per run (a method, or a method under one of its settings): every prompt's runs pooled."""
    outcomes, rows = outcomes_of(s.entries), []
    for m in s.runs:
        pooled = summarise_set([e.summary for e in s.entries if e.label == m])
        rows.append({"method": m, "prompts": pooled.runs, **_counts(pooled, outcomes),
                     "most failed n-grams": ngram_cell(pooled.failed_ngrams[:5])})
    return rows


def position_rows(s: SetFile) -> list[dict[str, Any]]:
    """Per method and bucket of output positions: the steps there and the share that failed."""
    rows = []
    for m in s.runs:
        pooled = summarise_set([e.summary for e in s.entries if e.label == m])
        for start, failed, steps in pooled.by_position:
            rows.append({"method": m, "output tokens": f"{start}–{start + 15}", "steps": steps, "failed": failed,
                         "failed %": round(100 * failed / steps, 1) if steps else 0.0})
    return rows


def rows_csv(rows: list[dict[str, Any]]) -> str:
    """Rows as CSV text, the first row's keys as the header."""
    if not rows:
        return ""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def summary_csv(s: SetFile) -> str:
    """The failure summary as one CSV: a row per run, then a row per method over every prompt
    ('all' in the prompt column)."""
    runs = prompt_rows(s)
    pooled = [{**{k: "" for k in runs[0]}, "prompt": "all", "method": r["method"],
               **{k: v for k, v in r.items() if k in runs[0]}} for r in overall_rows(s)]
    return rows_csv(runs + pooled)


def outcome_figure(s: SetFile, theme: str = "light") -> go.Figure:
    """Each run's steps by retrieval outcome, as stacked shares; the run with most failures on top
    (of a large set, the FIGURE_RUNS runs that failed most: the table holds every run)."""
    entries = sorted(s.entries, key=lambda e: (e.summary.failed_share, e.prompt))[-FIGURE_RUNS:]
    labels = [f"#{e.prompt + 1} {e.category} {e.question_id} · {e.label}" for e in entries]
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
