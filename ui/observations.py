"""The Observations tab: the paper's observations, measured on the run or trace explored."""
from __future__ import annotations

import gradio as gr

import visual
from logitspec.core.trace import RunTrace

from .figures import figure_slot

# (element id, title, the figure of a trace), two to a row.
FIGURES = (
    ("obs-topk", "True next-next token within the top-k", visual.topk_hit_figure),
    ("obs-retrieval", "Retrieval success per step", visual.retrieval_success_figure),
    ("obs-accepted", "Tokens committed per forward pass", visual.accepted_hist_figure),
    ("obs-time", "Where the time went", visual.time_breakdown_figure),
    ("obs-budget", "Tokens per pass against tree budget", visual.budget_figure),
)


class ObservationsTab:
    """The tab's figure slots."""

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        gr.Markdown("The paper's observations, measured on the run or trace you are exploring.")
        self.slots = []
        for row in range(0, len(FIGURES), 2):
            with gr.Row():
                for elem_id, title, _ in FIGURES[row:row + 2]:
                    self.slots.append(figure_slot(elem_id, title, min_width=320))

    @property
    def outputs(self) -> list:
        return [c for slot in self.slots for c in slot.outputs]

    def trace_outputs(self, t: RunTrace) -> dict:
        out = {}
        for slot, (_, _, draw) in zip(self.slots, FIGURES):
            out.update(slot.fill(draw(t, fit=True)))
        return out
