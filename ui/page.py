"""The page: the race on top, the tabs below, and what a run or an opened file fills in each.

Each part is its own module with build() and wire(): ui/race.py, ui/explorer.py,
ui/debugger.py, ui/observations.py, ui/explain.py and ui/trace_files.py. Building the page
loads no model.
"""
from __future__ import annotations

import gradio as gr

from logitspec.analysis.lanes import label

from .debugger import DebuggerTab
from .explain import ExplainTab
from .explorer import ExplorerTab, play_button
from .figures import FIGURES_JS
from .files import recorded_logitspec
from .keys import KEYS_JS, MOVES_JS
from .debugger import WHATIF_CLAMP_JS
from .downloads import upload_note_js
from .drawings import trace_key
from .links import SCROLL_JS
from .observations import ObservationsTab
from .present import PRESENT_LOAD_JS
from .race import RaceTab
from .services import Services
from .trace_files import TraceFilesTab
from .view import View
from .workbench import WorkbenchTab

CSS = """
.counters-wrap { overflow-x: auto; max-width: 100%; min-width: 0; }
.counters { width: 100%; border-collapse: collapse; font-size: 1.05rem; }
/* A step's every lookup scrolls in its box; !important: Gradio's block sets overflow: visible inline. */
#retrieval { overflow-wrap: anywhere; max-height: 90vh; overflow-y: auto !important; }
#status-bar { gap: .5rem; }
#status-bar p { margin: 0; }
.counters th, .counters td { padding: 4px 8px; text-align: right; }
.counters th:first-child, .counters td:first-child { text-align: left; }
.counters td { white-space: nowrap; }  /* a lane's swatch and name on one line, a number and its unit */
.counters th { overflow-wrap: normal; word-break: normal; hyphens: none; }  /* a header wraps between words only */
/* Four lanes or more (visual/verdict.py's "many"): a long name wraps between its words, so every
   column, the speed-up last, stays whole beside it at 1440 px. */
.counters.many td:first-child { white-space: normal; min-width: 7em; }
.counters.many th, .counters.many td { padding: 4px 6px; }
.verdict { font-size: 1.2rem; margin-top: .5rem; }
/* A term the table defines in its hover, and the intro's terms defined in their sentence. */
.counters abbr[title], .race-note [title] { text-decoration: underline dotted; cursor: help; }
#intro dfn { font-style: normal; font-weight: 600; }
#attribution { font-size: .85rem; opacity: .8; }
.held-steps { display: none !important; }  /* the steps held for Previous/Next (ui/held.py) */
/* The model's name ends before the dropdown's arrow, cut with "…", never under it. */
#model input { padding-right: 28px; text-overflow: ellipsis; }
/* Gradio's 32 px a side, 8 px at 640 px and narrower: a phone's table keeps its columns. Out of the
   media query below, where Gradio scopes every rule to elements inside the page's .contain. */
.main.app { padding-left: clamp(8px, calc((100vw - 640px) * 1000), 32px) !important;
            padding-right: clamp(8px, calc((100vw - 640px) * 1000), 32px) !important; }
/* Clipped, not hidden: a hidden overflow makes the container a scroller, where a sticky Run sticks to nothing. */
.gradio-container { overflow: clip !important; }
@media (max-width: 640px) {
  /* Every column kept: each lane's name on a line of its own across the table, its numbers in the
     columns under it (a grid: six or, for a stopped race, seven columns of numbers). */
  .counters { font-size: .85rem; display: grid; grid-template-columns: repeat(6, minmax(0, 1fr));
              padding: 0 !important; border: none !important; }
  /* A stopped race's seven: "compute" wants a wider column and its headers smaller type, or it ran
     into "tokens / s, first N tokens" beside it. */
  .counters:has(tr:first-child > th:nth-child(8)) {
    grid-template-columns: repeat(4, minmax(0, 1fr)) minmax(0, 1.3fr) repeat(2, minmax(0, 1fr)); }
  .counters:has(tr:first-child > th:nth-child(8)) th { font-size: max(.72rem, var(--present-px, 0px)); }
  /* Room for the last column's right border, which the cells' -1 px margins push past the table. */
  #counters .counters-wrap { padding-right: 1px; box-sizing: border-box; }
  .counters tbody, .counters tr { display: contents; }
  .counters th, .counters td, .counters.many th, .counters.many td {
    display: block; padding: 2px 3px; border: 1px solid var(--border-color-primary); margin: 0 -1px -1px 0; }
  .counters th:first-child, .counters td:first-child { grid-column: 1 / -1; white-space: normal; min-width: 0; }
  .counters th:first-child { display: none; }  /* "method": each name says itself */
  /* "compute" in a sixth of a phone's width; in large type, that type (ui/present.py's floor) */
  .counters th { font-size: max(.78rem, var(--present-px, 0px)); }
  .verdict { font-size: 1rem; }  /* the table's size, not twice it */
  /* The model's line over the status, each the page's width: side by side, a race's long status
     ran down a third of the screen beside the model's short line for two screens. */
  #status-bar { flex-direction: column; }
  #status-bar > * { min-width: 0; width: 100%; }
  #counters .html-container { padding-left: 0 !important; padding-right: 0 !important; }
  /* The first screen holds the result: the race's table and verdict come first, then the prompt and
     Run, the race's figure, and the rest of both columns in their order (laid out as one column). */
  #race-row { flex-direction: column; flex-wrap: nowrap; }
  #race-form, #race-views { display: contents; }
  #race-form > *, #race-views > * { order: 3; }
  #counters { order: 0; }
  #race-form > :has(#prompt), #race-form > :has(#run) { order: 1; }
  #race-views > .fig-slot:has(#race-plot) { order: 2; }
  #prompt textarea { max-height: 10.5em; }  /* a long prompt scrolls in its box, Run stays near */
  /* Run and Stop stay at the foot of the screen until the page reaches them: Run on the first screen
     (it races the prompt on show), Stop in reach while the counters run above. */
  #race-form > :has(#run) { position: sticky; bottom: 0; z-index: 5; flex-wrap: nowrap;
                            background: var(--background-fill-primary); padding: 6px 0; }
  #run, #stop { min-width: 0 !important; }
  /* The workbench's set form in one column: its boxes side by side cut the questions' names. */
  #wb-run-form .row:not(:has(#wb-run)) { flex-direction: column; }
  #wb-run-form .row:not(:has(#wb-run)) > * { width: 100%; }
  /* The explorer's Previous, Next and Play on one row under the step slider. */
  .row:has(> #prev) { flex-wrap: wrap; }
  .row:has(> #prev) > :has(#step-slider), .row:has(> #prev) > #step-slider { order: -1; flex: 1 1 100% !important; }
  #prev, #next, #play { flex: 1 1 0 !important; min-width: 0 !important; }
}
"""
# A block of the text, clicked, opens its step below the race: the page goes there.
STEP_IN_VIEW_JS = "() => { document.getElementById('step-label')?.scrollIntoView({block: 'start'}); }"
# Drawing is light next to decoding: its own, wider lane so it never waits on a run.
VIEW_KW = dict(concurrency_limit=8, concurrency_id="view", api_visibility="undocumented")
# Moves between steps one at a time: side by side, a later press's reply could land before
# an earlier one's and leave the page a step behind. Drawing holds the GIL, so little is lost.
STEP_KW = dict(VIEW_KW, concurrency_limit=1, concurrency_id="step")


class Page:
    """One app's page: its parts, built and wired with the services they share."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def build(self) -> gr.Blocks:
        """Lay out the page and wire its events; loads no model."""
        with gr.Blocks(title="LogitSpec Explorer", delete_cache=(3600, 3600)) as demo:
            self.state = gr.State(View())
            self.race = RaceTab(self.services, self)
            self.race.build()
            self._build_tabs()
            self.wire(demo)
        self.demo = demo
        return demo

    def _build_tabs(self) -> None:
        """The tabs under the race: explorer, debugger, observations, explanation, trace files."""
        self.explorer = ExplorerTab(self.services, self.state)
        self.debugger = DebuggerTab()
        self.observations = ObservationsTab()
        self.explain = ExplainTab(recorded_logitspec, self.services.drawings)
        self.files = TraceFilesTab(self.services, self)
        self.workbench = WorkbenchTab(self)
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as self.tabs:
            for tab_id, title, part in (("explorer", "Step explorer", self.explorer),
                                        ("debugger", "Retrieval debugger", self.debugger),
                                        ("observations", "Observations", self.observations),
                                        ("explain", "Explain", self.explain), ("traces", "Traces", self.files),
                                        ("workbench", "Workbench", self.workbench)):
                with gr.Tab(title, id=tab_id) as tab:
                    part.build()
                if part is self.explain:
                    self.explain_tab = tab

    # ------------------------------------------------------------ what a run or a file fills

    def trace_components(self) -> list:
        """Everything a whole trace fills, in the race API's order of outputs."""
        race = self.race
        figures = list(self.observations.outputs) + [c for slot in race.figure_slots for c in slot.outputs]
        return (self.explorer.outputs + [race.prompt, race.text_view, race.answer, *self.debugger.trace_components]
                + figures + [race.counters, race.status_md, self.explorer.lane_pick])

    def trace_outputs(self, view: View, outcomes: list[str] | None = None) -> dict:
        """Explorer, debugger, observations, text and race chart of the explored trace."""
        t = view.trace
        if t is None:
            return {}
        out = self.explorer.step_outputs(view)
        out.update(self._whole_run(view, outcomes))
        out.update({
            self.explorer.lane_pick: gr.Radio(choices=[(label(n, t), n) for n, t in view.traces.items()], value=view.lane,
                                              visible=len(view.traces) > 1),
            self.race.prompt: t.prompt_text,  # the prompt of the run on screen, whichever way it was opened
        })
        return out

    def _whole_run(self, view: View, outcomes: list[str] | None) -> dict:
        """The text, figures and tables of the whole run on screen. A finished run's are kept: every
        new visitor's page opens the same recorded race, and drawing it is most of a page load."""
        t, stopped = view.trace, view.stop_reason is not None

        def draw() -> dict:
            return {**self.race.run_outputs(t), **self.observations.trace_outputs(t),
                    **self.race.race_figures(view.traces, stopped=stopped),
                    **self.debugger.trace_outputs(t, outcomes)}
        if view.racing:
            return draw()
        key = ("run", view.lane, tuple(trace_key(x) for x in view.traces.values()), stopped, tuple(outcomes or ()))
        return dict(self.services.drawings.get(key, draw))

    def started(self, view: View) -> dict:
        """A race's first reply: its view, Play reset, no download until it ends."""
        return {self.state: view, self.explorer.play_btn: play_button(False), **self.files.downloadable(None)}

    def pick_lane(self, lane, outcomes, view: View) -> dict:
        """Explore another lane of the race (or race file) on screen, from its first step."""
        if lane not in view.traces:
            return gr.skip()
        with view.moving:
            view.lane, view.step = lane, 0
        return self.trace_outputs(view, outcomes)

    def on_span(self, view: View, evt: gr.SelectData):
        """Clicking a block of the text opens its step in the explorer (the tab shown, the page
        scrolled to it by STEP_IN_VIEW_JS)."""
        out = self.explorer.on_span(view, evt)
        if isinstance(out, dict):
            out[self.tabs] = gr.Tabs(selected="explorer")
        return out

    def on_row(self, view: View, evt: gr.EventData):
        """Clicking a debugger row opens its step in the explorer."""
        step = getattr(evt, "_data", None) or {}
        step = step.get("step") if isinstance(step, dict) else None
        if view.trace is None or not isinstance(step, int) or not 0 <= step < len(view.trace.steps):
            return gr.skip()
        out = self.explorer.step_outputs(view, step)
        out[self.tabs] = gr.Tabs(selected="explorer")
        return out

    # ------------------------------------------------------------ events

    def wire(self, demo: gr.Blocks) -> None:
        """Every event: the race, Stop, the model status, the first view, and each tab's own."""
        race, explorer, trace_out = self.race, self.explorer, self.trace_components()
        self.files.wire_recorded(VIEW_KW)
        explorer.lane_pick.input(self.pick_lane, [explorer.lane_pick, self.debugger.outcome, self.state],
                                 trace_out, **VIEW_KW)
        race.wire(demo, trace_out, VIEW_KW, STEP_KW)
        demo.load(self.files.initial_view, [self.debugger.outcome],
                  trace_out + [self.files.shipped, self.tabs, self.explain.picked, self.files.download],
                  **VIEW_KW).then(
            self.explain.on_link, [self.state, self.explain.picked], self.explain.outputs, **VIEW_KW).then(
            None, None, None, js=SCROLL_JS)
        # keys, counted presses; a stale upload note, the what-if bound; fitting and exporting the figures; present
        for js in (KEYS_JS, MOVES_JS, upload_note_js(), WHATIF_CLAMP_JS, FIGURES_JS, PRESENT_LOAD_JS):
            demo.load(None, None, None, js=js)
        self.explain.wire(self.explain_tab, self.state, VIEW_KW, STEP_KW)
        explorer.wire(VIEW_KW, STEP_KW)
        race.text_view.select(self.on_span, [self.state], explorer.outputs + [self.tabs], **VIEW_KW).then(
            None, None, None, js=STEP_IN_VIEW_JS)
        self.debugger.table.click(self.on_row, [self.state], explorer.outputs + [self.tabs], **VIEW_KW)
        self.debugger.wire(self.state, **VIEW_KW)
        self.files.wire(VIEW_KW)
        self.workbench.wire(demo, VIEW_KW)
