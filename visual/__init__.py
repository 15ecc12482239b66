"""Pictures of a LogitSpec run, drawn purely from its trace (no torch, no model).

Every function takes a `logitspec.core.trace.RunTrace` (and a step index) and returns a Plotly
figure, an HTML or markdown string, or plain data for a Gradio component.
"""
from .baselines import BASELINE_METHODS, baseline_figure
from .candidates import candidates_figure
from .observations import (
    accepted_hist_figure,
    budget_figure,
    retrieval_outcomes,
    retrieval_success_figure,
    time_breakdown_figure,
    topk_hit_curve,
    topk_hit_figure,
)
from .pays import TREE_ROWS, break_even_html, committed_figure, pays_figure
from .race import passes_figure, race_figure
from .debug_table import debugger_rows, failure_rows
from .retrieval import retrieval_html
from .style import ACCEPT_COLORS, PALETTE, PLOT_CONFIG
from .text import answer_text, span_steps, step_summary_md, text_spans
from .tree import tree_figure

__all__ = [
    "ACCEPT_COLORS",
    "TREE_ROWS",
    "BASELINE_METHODS",
    "PALETTE",
    "PLOT_CONFIG",
    "accepted_hist_figure",
    "answer_text",
    "baseline_figure",
    "break_even_html",
    "budget_figure",
    "candidates_figure",
    "debugger_rows",
    "failure_rows",
    "passes_figure",
    "pays_figure",
    "committed_figure",
    "race_figure",
    "retrieval_html",
    "retrieval_outcomes",
    "retrieval_success_figure",
    "span_steps",
    "step_summary_md",
    "text_spans",
    "time_breakdown_figure",
    "topk_hit_curve",
    "topk_hit_figure",
    "tree_figure",
]
