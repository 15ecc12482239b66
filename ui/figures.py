"""The app's figure containers: each figure's caption (its title and subtitle in HTML, which
wraps at any width), the plot filling its container, and two buttons that download it as a
16:9 slide, PNG or SVG, drawn in the browser by Plotly from the figure's own slide layout
(visual/fit.py; figures.js does the browser's part). Every plot's mode bar (Plotly's toolbar)
shows in a strip of its own above the plot. The draft tree has its key, its compact switch and
the clicked box's whole token beside it. The figures a step move changes are LivePlots: each
new figure is drawn into the same plot (Plotly.react), which a move needs to be quick.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from logitspec.core.trace import RunTrace
from visual.fit import SLIDE_H, SLIDE_SCALE, SLIDE_W, caption_html
from visual.tree_key import tree_key_html

from .live_plot import LivePlot
from .present import PHONE_PX, PRESENT_VW

NODE_HINT = "Click or tap a box in the tree: its whole token and where it came from show here."

FIGURES_JS = (Path(__file__).with_name("figures.js").read_text(encoding="utf-8")
              .replace("__SLIDE__", json.dumps({"width": SLIDE_W, "height": SLIDE_H, "scale": SLIDE_SCALE}))
              .replace("__PRESENT__", json.dumps({"vw": PRESENT_VW, "min_px": PHONE_PX})))

MODEBAR_PX = 28  # Plotly's mode bar: 22-pixel buttons, 2 pixels from the top

FIGURES_CSS = """
.fig-caption .fig-title { font-size: 1.1rem; font-weight: 600; margin: 0 0 .15rem; }
.fig-caption .fig-sub { font-size: .92rem; opacity: .8; margin: 0; }
.fig-caption { overflow-wrap: anywhere; }
.explain-words p { margin: .35rem 0 0; }
/* Plotly's mode bar gets a strip of its own above the plot, so it covers no legend, label or data. */
.js-plotly-plot { margin-top: MODEBAR_PXpx; }
/* A LivePlot fills its column as gr.Plot does: none of gr.HTML's padding. */
.live-plot .html-container { padding: 0 !important; }
.js-plotly-plot .modebar-container { top: -MODEBAR_PXpx !important; }
.fig-downloads { justify-content: flex-end; gap: .4rem; flex-wrap: wrap; }
.fig-downloads button { flex: 0 0 auto; }
/* A range slider's miniature copy of the tree draws its token labels a pixel high, as boxes: none there. */
.js-plotly-plot .rangeslider-rangeplot text { display: none; }
/* A step button reads on one line at every width: "◀ Previous step" wrapped at 1920. */
#prev, #next, #explain-prev, #explain-next { white-space: nowrap; min-width: max-content !important; }
#tree-side { position: sticky; top: .5rem; align-self: flex-start; }
.tree-key { list-style: none; padding: 0; margin: .25rem 0; font-size: .88rem; }
.tree-key li { display: flex; align-items: center; gap: .5rem; margin: .2rem 0; }
.key-box { display: inline-block; width: 16px; height: 16px; flex: none; box-sizing: border-box; }
.key-line { display: inline-block; width: 26px; height: 0; flex: none; }
.tree-node { font-family: 'DejaVu Sans Mono', monospace; font-size: .85rem; overflow-wrap: anywhere;
             border: 1px solid var(--border-color-primary); border-radius: 6px; padding: .4rem .6rem; }
@media (max-width: 640px) { #tree-side { position: static; } }
/* A figure wider than its container (ui/figures.js: a phone's whole tree) scrolls sideways in it;
   !important: Gradio's blocks set overflow: visible inline. */
.fig-scroll { overflow-x: auto !important; overflow-y: hidden !important; }
.fig-scroll .modebar { left: 2px; right: auto !important; }  /* on the first screenful, not past the swipe */
""".replace("MODEBAR_PX", str(MODEBAR_PX))


@dataclass
class FigureSlot:
    """A figure's caption and plot, as the handlers fill them."""

    caption: gr.HTML
    plot: gr.Plot | LivePlot

    @property
    def outputs(self) -> list:
        return [self.caption, self.plot]

    def fill(self, fig) -> dict:
        """The figure, and its caption when it was drawn for the app (visual.fit.for_app)."""
        return {self.caption: caption_html(fig), self.plot: fig}


@dataclass
class TreeSlot(FigureSlot):
    """The draft tree, with its side panel: the compact switch, the clicked box, the key."""

    side: gr.HTML = None
    compact: gr.Checkbox = None

    @property
    def outputs(self) -> list:
        return [self.caption, self.plot, self.side]

    def fill_tree(self, fig, trace: RunTrace, key: str | None = None) -> dict:
        """The tree, and beside it the key `key` of the view drawn (the lanes' key by default)."""
        return {**self.fill(fig), self.side: side_html(trace, (fig.layout.meta or {}).get("step"), key)}


def side_html(trace: RunTrace, step: int | None = None, key: str | None = None) -> str:
    """Beside the tree: the clicked box's details (filled in the browser) and the tree's key
    (`key`, else the lanes' key).

    The panel names the run and step it stands for: the page redraws a component only when its
    value changes, so without them a box clicked at one step (or run) kept its words at the next.
    """
    return (f'<div id="tree-node" class="tree-node" aria-live="polite" data-shows="{run_stamp(trace)}:{step}">'
            f"{NODE_HINT}</div>{tree_key_html(trace) if key is None else key}")


def run_stamp(trace: RunTrace) -> str:
    """A short mark that tells one run from another: its output and measured seconds (two runs of one
    prompt differ in their steps' timings even when their output, and a shared prefill, are the same), and
    the tree it ran, which its label names (logitspec.analysis.lanes.label)."""
    key = repr((trace.method, trace.prompt_text, trace.seconds, trace.tokens, trace.settings.get("tree")))
    return format(zlib.crc32(key.encode("utf-8")), "08x")


def download_buttons(elem_id: str) -> None:
    """16:9 PNG and SVG downloads of the figure in `elem_id`, run in the browser alone."""
    with gr.Row(elem_classes=["fig-downloads"]):
        for fmt in ("png", "svg"):
            btn = gr.Button(f"⤓ 16:9 {fmt.upper()}", size="sm", variant="secondary", scale=0, min_width=100,
                            elem_id=f"{elem_id}-{fmt}")
            btn.click(None, None, None, js=f"() => {{ window.logitspecFigures.download('{elem_id}', '{fmt}'); }}")


def figure_slot(elem_id: str, label: str, live: bool = False, **column) -> FigureSlot:
    """A caption, its slide downloads and the plot (a LivePlot if `live`: one a step move redraws),
    in a column of their own."""
    with gr.Column(elem_classes=["fig-slot"], **column):
        caption = gr.HTML(elem_id=f"{elem_id}-caption", elem_classes=["fig-caption-box"])
        download_buttons(elem_id)
        plot = LivePlot(label=label, elem_id=elem_id) if live else gr.Plot(show_label=False, label=label, elem_id=elem_id)
    return FigureSlot(caption, plot)


def tree_slot() -> TreeSlot:
    """The tree's slot, its side panel beside it (under it on a narrow screen)."""
    with gr.Row(elem_id="tree-row"):
        slot = figure_slot("tree-plot", "Draft tree", live=True, scale=4, min_width=320)
        with gr.Column(scale=1, min_width=240, elem_id="tree-side"):
            compact = gr.Checkbox(value=True, label="Only branches with a verified token",
                                  info="off: every lane of the run, fixed from step to step",
                                  elem_id="tree-compact")
            side = gr.HTML(elem_id="tree-side-panel")
    return TreeSlot(slot.caption, slot.plot, side, compact)
