"""A Plotly figure that a new value redraws in place.

gr.Plot mounts a new plot for every value it is given and draws the figure twice from nothing
(once in the plot being replaced): most of a step move's time in the browser. A LivePlot draws
each new figure into the same plot with Plotly.react (ui/live_plot.js), which changes only what
changed. Gradio writes a type stub (live_plot.pyi) beside the module that defines a component.
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr


def plotly_chunk() -> str:
    """The file name of the Plotly.js module Gradio's gr.Plot loads (its hash changes with Gradio)."""
    found = sorted((Path(gr.__file__).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    return found[0].name if found else "PlotlyPlot.js"


LIVE_PLOT_JS = (Path(__file__).with_name("live_plot.js").read_text(encoding="utf-8")
                .replace("__PLOTLY_CHUNK__", plotly_chunk()))


class LivePlot(gr.HTML):
    """A plot for figures that change often (a step move's). Handlers return plotly Figures, as
    they would to gr.Plot."""

    def __init__(self, value=None, **kwargs) -> None:
        # Gradio builds a component again from its arguments (an update): every one is taken.
        look = dict(elem_classes=["live-plot"], container=False, html_template='<div class="live-plot-host"></div>',
                    js_on_load=LIVE_PLOT_JS, apply_default_css=False)
        super().__init__(value, **{**look, **kwargs})

    def postprocess(self, value) -> str | None:
        """The figure as Plotly's JSON (a string or None passes as it is)."""
        return value if value is None or isinstance(value, str) else value.to_json()
