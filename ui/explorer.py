"""The Step explorer tab: one step of the explored lane at a time, moved by the slider, the
buttons, the keys, Play, a click on the text or a debugger row.

Layout and wiring only: every piece is drawn by visual/ (the tree through ui/trie_view.py).
"""
from __future__ import annotations

import asyncio
import functools
import math
import time

import gradio as gr

import visual
from logitspec.analysis.lanes import label
from logitspec.core.trace import RunTrace

from . import trie_view
from .drawings import trace_key
from .figures import figure_slot, tree_slot
from .held import HeldFns, HeldSteps
from .keys import presses
from .services import Services
from .view import View

PLAY_SECONDS = 1.0  # Play: a step a second, time to read a tree before the next
PLAY_POLL_SECONDS = 0.05  # how often a waiting Play loop looks for a press on Pause


def play_button(playing: bool) -> gr.Button:
    return gr.Button(value="❚❚ Pause" if playing else "▶ Play")


def selected_index(evt: gr.SelectData | None) -> int | None:
    """The first index of a select event (a span index, or a table row)."""
    if evt is None or evt.index is None:
        return None
    i = evt.index
    return int(i[0] if isinstance(i, (list, tuple)) else i)


def whole_number(value) -> int | None:
    """A number box's raw value as a whole number; None for an empty box or anything not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) else None


def draw_step(t: RunTrace, i: int, tree_view: str, compact: bool) -> dict:
    """A step's drawn pieces; a Lookahead or REST step, which takes no next-next candidates, shows
    its window and pool or its retrieved continuations in their place."""
    beside = (visual.baseline_figure(t, i, fit=True) if t.method in visual.BASELINE_METHODS
              else visual.candidates_figure(t, i, fit=True))
    return {"summary": visual.step_summary_md(t, i), "tree": trie_view.figure(t, i, tree_view, compact),
            "key": trie_view.key_html(t, tree_view), "candidates": beside, "retrieval": visual.retrieval_html(t, i)}


class ExplorerTab:
    """The tab's components and handlers; `state` is the page's gr.State of the View."""

    def __init__(self, services: Services, state: gr.State) -> None:
        self.services = services
        self.state = state

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        # A race's lanes: the explorer and the debugger show one (LogitSpec's first).
        self.lane_pick = gr.Radio([], label="Method explored", visible=False, elem_id="explore-lane",
                                  info="the race's decoder whose steps the explorer and the debugger show")
        with gr.Row():
            self.prev_btn = gr.Button("◀ Previous", elem_id="prev", scale=0, min_width=120)
            self.slider = gr.Slider(0, 1, value=0, step=1, label="Step", elem_id="step-slider", scale=4)
            self.next_btn = gr.Button("Next ▶", elem_id="next", scale=0, min_width=120)
            self.play_btn = gr.Button("▶ Play", elem_id="play", scale=0, min_width=120)
            self.moves = gr.Number(0, visible=False)  # presses counted on the page (ui/keys.py)
        self.step_label = gr.Markdown(elem_id="step-label")
        self.summary_md = gr.Markdown(elem_id="step-summary")
        with gr.Row():
            self.tree_view = gr.Radio(list(trie_view.VIEWS), value="lanes", label="Draft tree as",
                                      info="lanes: a fixed row per branch; trie: the verified tree, "
                                           "shared prefixes drawn once", elem_id="tree-view", scale=3)
            self.trie_download = gr.DownloadButton("Download this step's trie (node-link JSON)",
                                                   visible=False, elem_id="trie-download", scale=1)
        self.tree_fig = tree_slot()
        self.tree_plot = self.tree_fig.plot
        with gr.Row():
            self.cand_fig = figure_slot("cand-plot", "Next-next candidates", live=True, min_width=320)
            self.cand_plot = self.cand_fig.plot
            with gr.Column(min_width=320):  # wraps under the candidates on a phone, not a sliver beside them
                self.retrieval_view = gr.HTML(label="Retrieval", elem_id="retrieval")
        self.held = HeldSteps("explorer", self.slider, self.shown)  # Previous/Next at a slide's pace

    @property
    def outputs(self) -> list:
        """What a step move fills."""
        return [self.slider, *self.shown, self.tree_view, self.trie_download, self.play_btn, self.held.store,
                self.state]

    @property
    def shown(self) -> list:
        """What differs from step to step, in the order the held steps list it."""
        return [self.step_label, self.summary_md, *self.tree_fig.outputs, *self.cand_fig.outputs, self.retrieval_view]

    def wire(self, view_kw: dict, step_kw: dict) -> None:
        """The slider, the tree's options, Previous/Next and Play."""
        out = self.outputs
        # Arrow keys and the number box send `input` only, a drag ends with `release`: both move the view.
        # preprocess=False: Gradio's own range check would put an error on every panel for a step
        # typed past the ends; go_step holds it to the run's steps instead. No progress overlay: the
        # box sends its step again when it loses focus, and an overlay then would swallow the click
        # that took the focus (on the tree view radio, say).
        for moved in (self.slider.input, self.slider.release):
            moved(self.go_step, [self.state, self.slider], out, trigger_mode="always_last", preprocess=False,
                  show_progress="hidden", **step_kw)
        self.tree_view.input(self.set_tree_view, [self.state, self.tree_view], out, **view_kw)
        self.tree_fig.compact.input(self.set_compact_tree, [self.state, self.tree_fig.compact], out, **view_kw)
        fns = HeldFns(self.sync, [self.trie_download, self.state], self.move, self.hold)
        self.held.wire(self.prev_btn, self.next_btn, self.moves, fns, [self.state], out, step_kw, view_kw)
        # A press while playing pauses; the loop mostly sleeps, so it takes no drawing slot.
        self.play_btn.click(self.play, [self.state], out, trigger_mode="multiple", concurrency_limit=None,
                            show_progress="hidden", api_visibility="undocumented")

    # ------------------------------------------------------------ what a step shows

    def step_outputs(self, view: View, step: int | None = None, by: int = 0) -> dict:
        """Everything the step explorer shows for one step of the explored trace: `step`, else the
        step shown, moved `by` steps."""
        with view.moving:
            return self._step_outputs(view, step, by)

    def _step_outputs(self, view: View, step: int | None, by: int) -> dict:
        t = view.trace
        if t is None or not t.steps:
            return {}
        view.step = max(0, min(int(view.step if step is None else step) + by, len(t.steps) - 1))
        i = view.step
        for j in (i + 1, i - 1):  # the likely next moves, drawn while the visitor reads this one
            if 0 <= j < len(t.steps) and not view.racing:
                self.services.drawings.ahead(self._drawing_key(t, j, view), self._drawer(t, j, view))
        return {
            self.slider: gr.Slider(minimum=0, maximum=max(1, len(t.steps) - 1), value=i, step=1),
            **self._shown_values(t, i, view),
            self.tree_view: view.tree_view,
            self.trie_download: trie_view.download(t, i, view.tree_view, self.services.downloads),
            self.play_btn: play_button(bool(view.playing)),
            self.held.store: self._held_after_draw(view),
            self.state: view,
        }

    def _held_after_draw(self, view: View):
        """The store once the server drew a step: while playing, the steps held (the same run's);
        during a race none, with no request (its steps are still coming); else a request for the
        steps around this one."""
        if view.playing:
            return gr.skip()
        view.held_at = None
        return None if view.racing else self.held.ask()

    def _shown_values(self, t: RunTrace, i: int, view: View) -> dict:
        """What the explorer shows of step `i`: each of `shown` and its value."""
        drawn = self._step_drawing(t, i, view)
        return {
            self.step_label: f"### Step {i} (steps 0–{len(t.steps) - 1})  ·  {label(view.lane or t.method, t)}",
            self.summary_md: drawn["summary"],
            **self.tree_fig.fill_tree(drawn["tree"], t, drawn["key"]),
            **self.cand_fig.fill(drawn["candidates"]),
            self.retrieval_view: drawn["retrieval"],
        }

    def hold(self, view: View):
        """The steps around the one shown, for Previous/Next to show on the page (ui/held.py);
        nothing when the page has them already or a race still adds steps."""
        with view.moving:
            t = view.trace
            if view.held_at == view.step or t is None or not t.steps or view.racing or not view.shown:
                return gr.skip()
            view.held_at = view.step
            return self.held.pack(view.step, len(t.steps) - 1, lambda j: self._shown_values(t, j, view))

    @staticmethod
    def _drawing_key(t: RunTrace, i: int, view: View) -> tuple:
        return ("step", trace_key(t), i, view.tree_view, view.compact_tree)

    def _step_drawing(self, t: RunTrace, i: int, view: View) -> dict:
        """A step's drawn pieces: kept from before (or drawn ahead), else drawn now; a live race's
        are drawn once and not kept (its run grows before anyone comes back to them)."""
        draw = self._drawer(t, i, view)
        return draw() if view.racing else self.services.drawings.get(self._drawing_key(t, i, view), draw)

    @staticmethod
    def _drawer(t: RunTrace, i: int, view: View):
        return functools.partial(draw_step, t, i, view.tree_view, view.compact_tree)

    # ------------------------------------------------------------ moving through steps

    def go_step(self, view: View, step):
        """The step the slider or its number box names, held to the run's steps (the box takes any
        number typed); the step already shown is not redrawn (a drag's release after its inputs)."""
        wanted = whole_number(step)
        if wanted is None or view.trace is None or not view.trace.steps:
            return gr.skip()
        held = max(0, min(wanted, len(view.trace.steps) - 1))
        if held == view.step:
            # The box may show a number past the ends: put the step shown back in it.
            return gr.skip() if held == wanted else {self.slider: gr.Slider(value=held)}
        out = self.step_outputs(view, held)
        if view.step == wanted:
            # The slider shows this step already; setting it again would undo a key pressed meanwhile.
            out.pop(self.slider, None)
        return out

    def set_tree_view(self, view: View, mode: str):
        """Draw the explorer's tree as lanes or as a trie (with its JSON to download)."""
        if mode not in trie_view.VIEWS:
            return gr.skip()
        view.tree_view = mode
        return self.step_outputs(view)

    def set_compact_tree(self, view: View, compact: bool):
        """Draw only the branches with a verified token, or every lane of the run."""
        view.compact_tree = bool(compact)
        return self.step_outputs(view)

    def move(self, view: View, at, by):
        """Previous/Next to a step the page did not hold: `by` steps (the presses it counted) from
        step `at`, the one it shows (the server may not have heard of a step shown from the page)."""
        by, at = presses(by), whole_number(at)
        if by == 0 or view.trace is None:
            return gr.skip()
        return self.step_outputs(view, at, by=by)  # None: from the view's step, read under its lock

    def sync(self, view: View, step):
        """Previous/Next to a step the page held and showed: the view takes it up."""
        shown = whole_number(step)
        if shown is None or shown == view.step or view.trace is None or not view.trace.steps:
            return gr.skip()
        with view.moving:
            view.step = max(0, min(shown, len(view.trace.steps) - 1))
            return {self.trie_download: trie_view.download(view.trace, view.step, view.tree_view,
                                                           self.services.downloads), self.state: view}

    def on_span(self, view: View, evt: gr.SelectData):
        """Clicking a token span opens the step that produced it."""
        t, i = view.trace, selected_index(evt)
        if t is None or i is None:
            return gr.skip()
        steps = visual.span_steps(t)
        return self.step_outputs(view, steps[i]) if 0 <= i < len(steps) else gr.skip()

    async def play(self, view: View):
        """Play or Pause (one button): a step every PLAY_SECONDS until the last step, a press on
        Pause, or another run or trace in the view's place. Only the loop sets the button while
        it runs, so its replies, in order, always end on ▶ Play."""
        if view.playing or view.trace is None:
            view.playing = 0  # the running loop sees it within PLAY_POLL_SECONDS
            yield {self.play_btn: gr.skip()}
            return
        loop = view.playing = next(self.services.plays)
        yield {self.play_btn: play_button(True)}
        due = time.monotonic()
        while view.playing == loop:
            due += PLAY_SECONDS  # a step a second, however long a step takes to draw
            while view.playing == loop and time.monotonic() < due:
                await asyncio.sleep(min(PLAY_POLL_SECONDS, max(0.0, due - time.monotonic())))
            # Drawing is heavy: off the event loop, so other visitors' events go on meanwhile.
            out = await asyncio.to_thread(self._play_step, view, loop)
            if out is None or not view.shown:
                break
            out[self.play_btn] = play_button(view.playing == loop)
            out.pop(self.state, None)  # the view moved in place; a replaced one must not come back
            yield out
        # Gradio sends a loop's last reply again when it ends: Play, or nothing for a view replaced.
        yield {self.play_btn: play_button(False) if view.shown else gr.skip()}

    def _play_step(self, view: View, loop: int) -> dict | None:
        """The next step's outputs; None when the loop was paused or replaced before it began."""
        with view.moving:
            if view.playing != loop:
                return None
            out = self.step_outputs(view, by=1)
            if view.step >= len(view.trace.steps) - 1:
                view.playing = 0
            return out
