"""The top of the page: the statuses, the race's form, and the race as it runs.

Layout and the race's handlers: the lanes come from serve.race, the counters and
figures from visual/. What a finished race fills in the tabs below, the page decides.
"""
from __future__ import annotations

import time

import gradio as gr

import visual
from logitspec.core.errors import DecodeError
from logitspec.core.limits import InputError, Limits, check_context, check_prompt
from serve.model_cache import allowed_models, check_model_choice, model_label
from serve.race import RaceStopped, interleave
from logitspec.analysis.race import result_of
from serve.stop import run_deadline
from serve.zerogpu import race_lanes
from logitspec.core.settings import DecodeSettings
from visual.glossary import ON_SCREEN
from visual.pieces import split_note
from logitspec.analysis.lanes import label
from visual.verdict import counters_html, verdict_text

from .figures import figure_slot
from .files import load_examples, recorded_pass_costs, write_race_file
from .form import SETTINGS, by_name, lane_boxes, race_inputs, race_lanes_of, sampling_note, settings_from
from .present import present_switch
from .services import Services
from .view import View

LIVE_REDRAW_SECONDS = 2.0  # the least time between redraws of the heavy figures during a race
LIVE_DRAW_RATIO = 9  # and at least this many times the last redraw's own time: the lanes wait at most a tenth
# The counters tick on the page's own timer, off the race's path: each update the race sends makes
# the server rebuild every one of its outputs' configs (about 50 ms of a core), while the lanes wait.
LIVE_COUNT_SECONDS = 0.5
TREE_ROWS_SHOWN = 8  # the break-even preset a page opens on: a size most races have measured
MODEL_POLL_SECONDS = 0.5  # how often a race waiting for its model looks again (and for Stop)
# Every word a first-time visitor needs is defined in the sentence where it first appears (<dfn>).
INTRO_MD = ("# LogitSpec Explorer\nLogitSpec makes a model write faster without changing a word. A model writes "
            f"one <dfn>token</dfn> ({ON_SCREEN['token']}) per run over the text, a <dfn>forward pass</dfn>; "
            "LogitSpec guesses the next few tokens and checks them all in one pass. Watch it race "
            "<dfn>vanilla</dfn> decoding (one token per pass, always the model's top choice: <dfn>greedy</dfn>), "
            "then open any step to see its guesses and where they came from.")


# A phone shows the table above the form (ui/page.py's CSS): Run, pressed below it, brings the live
# counters back into view.
COUNTERS_IN_VIEW_JS = """() => {
  if (window.matchMedia('(max-width: 640px)').matches) document.getElementById('counters')?.scrollIntoView({block: 'start'});
}"""


TEXT_LABEL = ("LogitSpec output: one colour block per step (colour = tokens the step committed); "
              "click a block to open its step")


def answer_label(t) -> str:
    """The answer box's label: the lane of the run on screen (LogitSpec's before any run)."""
    return f"{label(t.method, t) if t is not None else label('logitspec')}: the answer, as plain text"


class RaceTab:
    """The race's components and handlers. `page` fills the explorer and the tabs (ui/page.py)."""

    def __init__(self, services: Services, page) -> None:
        self.services = services
        self.page = page
        self.pass_costs = recorded_pass_costs()  # other machines' measured c(n), for "Where it pays"

    # ------------------------------------------------------------ layout

    def build(self) -> None:
        """The statuses, the form and the race's live views."""
        gr.Markdown(INTRO_MD, sanitize_html=False, elem_id="intro")  # our own words: <dfn> kept
        with gr.Row(elem_id="status-bar"):
            self.model_md = gr.Markdown("", elem_id="model-status")
            self.status_md = gr.Markdown("", elem_id="status")
            present_switch()
        with gr.Row(elem_id="race-row"):
            with gr.Column(scale=2, min_width=300, elem_id="race-form"):
                self._build_form()
            with gr.Column(scale=3, min_width=300, elem_id="race-views"):
                self._build_views()
        self.status_timer = gr.Timer(2.0, active=False)
        self.count_timer = gr.Timer(LIVE_COUNT_SECONDS, active=False)  # the live race's counters

    def _build_form(self) -> None:
        models, lim, s = allowed_models(), Limits.from_env(), DecodeSettings()
        self.prompt = gr.Textbox(label="Prompt", lines=5, max_lines=14, elem_id="prompt",
                                 placeholder="Ask something, or pick an example below")
        with gr.Row():
            self.run_btn = gr.Button("▶ Run the race", variant="primary", elem_id="run")
            self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="stop")
        examples = load_examples()
        gr.Examples(examples=[[p] for _, p in examples], inputs=[self.prompt],
                    example_labels=[label for label, _ in examples], label="Examples")
        self.recorded_box = gr.Column()
        gr.Markdown("Examples: questions from [Spec-Bench](https://github.com/hemingkx/Spec-Bench) "
                    "(Apache-2.0).", elem_id="attribution")
        self.model = gr.Dropdown(choices=[(model_label(m), m) for m in models], value=models[0],
                                 label="Model", allow_custom_value=False, elem_id="model")
        self.boxes = {b.name: gr.Checkbox(label=b.label, value=False, elem_id=b.elem_id) for b in lane_boxes(s)}
        with gr.Accordion("Decoder parameters (paper defaults)", open=False, elem_id="decoder-params"):
            self.settings = {f.name: f.component(lim, s) for f in SETTINGS}

    def _build_views(self) -> None:
        self.counters = gr.HTML(elem_id="counters")
        self.answer = gr.Textbox(label=answer_label(None), lines=4, max_lines=12,
                                 interactive=False, elem_id="answer", buttons=["copy"])
        self.race_fig = figure_slot("race-plot", "Race: tokens against each method's compute time")
        # Counts, not time: what the paper's tokens per pass mean on any hardware.
        self.passes_fig = figure_slot("race-passes-plot", "Race: tokens against forward passes")
        # Folded: drawn only when a visitor opens it, so the first screen loads no faster or slower.
        with gr.Accordion("Where it pays: this race's passes priced on each machine's measured costs",
                          open=False, elem_id="pays-fold"):
            self.pays_fig = figure_slot("race-pays-plot", "Where it pays")
            self.tree_rows = gr.Radio(choices=list(visual.TREE_ROWS), value=TREE_ROWS_SHOWN, elem_id="pays-rows",
                                      label="A tree of this many rows: the tokens a pass must commit to pay")
            self.break_even = gr.HTML(elem_id="pays-break-even")
            self.committed_fig = figure_slot("race-committed-plot", "Tokens committed per pass, every lane")
        self.text_view = gr.HighlightedText(
            label=TEXT_LABEL,
            color_map=visual.ACCEPT_COLORS, show_legend=True, combine_adjacent=False, elem_id="text-view")

    def wire(self, demo: gr.Blocks, trace_out: list, view_kw: dict, step_kw: dict) -> None:
        """Run, the race, its live counters, Stop and the model's status; `trace_out` is what a
        whole trace fills, the race API's outputs with the download after them."""
        page, names = self.page, race_inputs()
        race_in = self.inputs(names, {"outcomes": page.debugger.outcome}) + [page.state]
        # Arming is instant and unqueued, so Stop works even while the race waits its turn; the
        # race itself keeps the page as it is while queued (no overlay blanking the panels).
        # A second Run while this page's race runs: the arm stops that race, and the new one is sent
        # once it has ended ("always_last"; the default "once" would drop it, leaving nothing racing).
        racing = self.run_btn.click(self.arm_run, None, [self.status_md, self.count_timer], queue=False).then(
            by_name(self.race, names), race_in, trace_out + [page.files.download], api_name="race",
            concurrency_limit=1, concurrency_id="model", show_progress="hidden", trigger_mode="always_last")
        page.explain.held.drawn(racing.success, page.explain.show, [page.state, page.explain.picked],
                                page.explain.outputs, step_kw)
        racing.then(self.count_after, [page.state], [self.count_timer], queue=False, api_visibility="undocumented")
        self.count_timer.tick(self.live_counters, [page.state], [self.counters], concurrency_limit=None,
                              show_progress="hidden", api_visibility="undocumented")
        self.run_btn.click(None, None, None, js=COUNTERS_IN_VIEW_JS)
        # A new figure is a new race (or file) on screen: its own costs change the break-even line.
        for event in (self.pays_fig.plot.change, self.tree_rows.change):
            event(self.break_even_line, [self.tree_rows, page.state], [self.break_even], queue=False,
                  show_progress="hidden", api_visibility="undocumented")
        # No `cancels`: the race sees the flag within one step and ends in its final state.
        self.stop_btn.click(self.stop_run, None, [self.status_md], api_name="stop", queue=False)
        demo.unload(self.on_leave)
        model_out = [self.model_md, self.status_timer]
        self.model.change(self.pick_model, [self.model], model_out, concurrency_limit=None)
        self.status_timer.tick(self.model_status, [self.model], model_out, concurrency_limit=None)
        demo.load(self.model_status, [self.model], model_out, concurrency_limit=None)

    def inputs(self, names: list[str], extra: dict) -> list:
        """The components of the API inputs `names`; `extra` holds those outside this form."""
        mine = {"prompt": self.prompt, "model": self.model, **self.boxes, **self.settings}
        return [mine[n] if n in mine else extra[n] for n in names]

    # ------------------------------------------------------------ what the race shows

    def cleared_run(self) -> dict:
        """The answer, text and race figures emptied: a live race starting must not show the last run's numbers."""
        empty = {c: None for f in self.figure_slots for c in f.outputs}
        return {**empty, self.answer: "", self.text_view: None}

    def race_figures(self, traces, stopped: bool = False) -> dict:
        """The race against compute time and against forward passes, and where its passes pay."""
        return {**self.race_fig.fill(visual.race_figure(traces, stopped=stopped, fit=True)),
                **self.passes_fig.fill(visual.passes_figure(traces, stopped=stopped, fit=True)),
                **self.pays_fig.fill(visual.pays_figure(traces, self.pass_costs, stopped=stopped, fit=True)),
                **self.committed_fig.fill(visual.committed_figure(traces, fit=True))}

    def break_even_line(self, rows, view: View | None):
        """The break-even tokens a pass for a tree of `rows` rows, on the race on screen; none while
        it races (the finished race's figure asks again)."""
        if view is None or view.racing or rows is None:
            return gr.skip()
        return visual.break_even_html(view.traces, self.pass_costs, int(rows))

    @property
    def figure_slots(self) -> list:
        """The race's figures, in the order the page lists their outputs."""
        return [self.race_fig, self.passes_fig, self.pays_fig, self.committed_fig]

    def run_outputs(self, t) -> dict:
        """The run's text (its label says what ‹hex› is when a block shows one) and answer, labelled with
        the lane that wrote it (a workbench row or a picked lane is not LogitSpec's)."""
        spans = visual.text_spans(t)
        note = split_note(*(text for text, _ in spans))
        return {self.text_view: gr.HighlightedText(spans, label=TEXT_LABEL + (f" · {note}" if note else "")),
                self.answer: gr.Textbox(visual.answer_text(t), label=answer_label(t))}

    # ------------------------------------------------------------ Run, Stop and the model

    def arm_run(self, request: gr.Request):
        """Run was clicked: arm this session's stop flag at once, say if the race must wait its turn, and
        start the counters' timer."""
        stops = self.services.stops
        own = request is not None and stops.racing(request.session_hash)
        if request is not None:
            stops.start(request.session_hash)  # a race of this page's own, running, stops after its step
        tick = gr.Timer(active=True)  # the live counters, until the race ends
        if own:
            return ("**Stopping your race** after its current step; the new one starts as soon as it has."), tick
        if stops.running():
            return ("**Waiting for your turn:** another visitor's race is running on this machine; yours starts "
                    "when it ends. Meanwhile the page shows the last race."), tick
        return "**Starting the race…**", tick

    def stop_run(self, request: gr.Request):
        """Stop this user's run; it ends before its next decoding step and shows where it got to."""
        if request is not None and self.services.stops.stop(request.session_hash):
            return "**Stopping** after the current step…"
        return gr.skip()

    def on_leave(self, request: gr.Request) -> None:
        """A closed tab stops its run, so no run is left going."""
        if request is not None:
            self.services.stops.stop(request.session_hash)

    def model_status(self, model):
        """The chosen model's load state, and whether the status needs polling again."""
        try:
            name = check_model_choice(model)
        except InputError as e:
            return f"**Model:** {e}", gr.Timer(active=False)
        st = self.services.models.status(name)
        word = {"ready": "ready", "loading": "loading", "failed": "failed", "idle": "not loaded"}[st.state]
        text = f"**Model {word}:** {st.message}"
        if st.state == "idle":
            text += " — it loads when you press Run."
        return text, gr.Timer(active=st.state == "loading")

    def pick_model(self, model):
        """Start loading a newly chosen model in the background."""
        try:
            name = check_model_choice(model)
        except InputError as e:
            raise gr.Error(str(e)) from None
        models = self.services.models
        if models.loaded(name) is None and models.status(name).state != "loading":
            models.preload(name)  # says "loading" from the call on
        return self.model_status(name)

    # ------------------------------------------------------------ the race

    def race(self, values: dict, view: View, request: gr.Request):
        """Stream the race: one step of each lane in turn, counters live, figures now and then.

        Stop ends it within one step, and the page then shows the steps so far, a verdict over
        the tokens every lane reached, and the trace to download.
        """
        session = request.session_hash if request is not None else "anonymous"
        stop = self.services.stops.claim(session)  # armed when Run was clicked: a Stop while queued counts
        try:
            yield from self._race(stop, values, view)
        finally:
            self.services.stops.finish(session, stop)

    def _race(self, stop, values: dict, was: View):
        """The race the form's `values` ask for, in place of the view `was`."""
        try:
            prompt = check_prompt(values.get("prompt"))
            name = check_model_choice(values.get("model"))
            settings = settings_from(values)
        except InputError as e:
            yield {self.status_md: f"**Not started:** {e}"}  # the status must not keep "Starting…"
            raise gr.Error(str(e)) from None
        lm = yield from self._wait_for_model(name, stop)
        if lm is None:
            yield {self.status_md: "**Stopped** before the race started; nothing was decoded."}
            return
        try:
            # On the models' own thread; in one GPU call on ZeroGPU.
            lanes = race_lanes(lm, name, prompt, race_lanes_of(values), settings, self.services.models.thread)
            check_context(len(lanes[0].trace.prompt_tokens), settings.max_new_tokens, lm.max_context)
        except InputError as e:
            yield {self.status_md: f"**Not started:** {e}"}
            raise gr.Error(str(e)) from None
        was.replaced()
        view = View(traces={ln.name: ln.trace for ln in lanes}, lane="logitspec", source=f"run on {lm.name}")
        yield {**self.page.started(view),
               self.status_md: f"**Racing** on {lm.name} ({lm.device})… {sampling_note(settings.to_dict())}"
                               "Stop ends it after the current step.",
               self.counters: counters_html(view.traces, True), **self.cleared_run()}
        try:
            yield from self._stream(lanes, view, stop)
        except DecodeError as e:
            yield {self.status_md: f"**Failed:** {e}"}
            raise gr.Error(str(e)) from None
        except RaceStopped as e:
            view.stop_reason = e.reason
            for ln in lanes:
                if not ln.done and ln.finish is not None:
                    ln.finish()  # the pictures need the token texts of a stopped lane too
        yield self._final_outputs(view, values.get("outcomes"), lm)

    def _wait_for_model(self, name: str, stop):
        """The loaded model, with the loading shown as it goes; None when Stop came first."""
        models = self.services.models
        lm = models.loaded(name)
        if lm is not None:
            return lm
        models.preload(name)
        while True:
            st = models.status(name)
            if stop.is_set():
                return None
            if st.state == "failed":
                yield {self.status_md: f"**Not started:** {st.message}"}
                raise gr.Error(st.message)
            lm = models.loaded(name)
            if lm is not None:
                return lm
            yield {self.status_md: f"**Loading the model:** {st.message} — the race starts once it is ready."}
            time.sleep(MODEL_POLL_SECONDS)

    def _stream(self, lanes, view: View, stop):
        """The live race: the heavy figures and the counters now and then (the page's timer ticks
        the counters in between, `live_counters`)."""
        traces = view.traces
        by_name = {ln.name: ln for ln in lanes}
        next_draw = 0.0
        view.racing = True
        try:
            for _ in interleave(lanes, should_stop=stop.is_set, deadline=run_deadline()):
                explored = by_name.get(view.lane)  # the lane the explorer shows, which a visitor may switch mid-race
                if time.monotonic() < next_draw or explored is None or not explored.trace.steps:
                    continue
                # Figures are heavy next to a small model's step: redraw them now and then.
                t0 = time.monotonic()
                if explored.finish is not None:
                    explored.finish()  # token texts so far, for the live text and tree
                yield {self.counters: counters_html(traces, True),
                       **self.page.explorer.step_outputs(view, len(explored.trace.steps) - 1),
                       **self.run_outputs(explored.trace), **self.race_figures(traces)}
                cost = time.monotonic() - t0  # the drawing and the server's sending of it, as the lanes waited
                next_draw = t0 + cost + max(LIVE_REDRAW_SECONDS, LIVE_DRAW_RATIO * cost)
        finally:
            view.racing = False

    def count_after(self, view: View):
        """A race ended: its counters' timer stops, unless the page's next race has already begun."""
        return gr.Timer(active=view is not None and view.racing)

    def live_counters(self, view: View):
        """The counters of the race that fills this page's view, as it goes (the count timer's tick)."""
        if view is None or not view.racing:
            return gr.skip()
        html = counters_html(view.traces, True)
        return html if view.racing else gr.skip()  # a race that ended meanwhile shows its final counters

    def _final_outputs(self, view: View, outcomes, lm) -> dict:
        """The race's end (finished or stopped): every view of its traces, the verdict, the download."""
        reason = view.stop_reason
        view.step = 0
        out = self.page.trace_outputs(view, outcomes)
        note = ""
        if reason is not None:
            note = ("The explorer, the text and the download hold the steps decoded before the stop." if
                    reason == "stopped" else
                    f"The run reached the time limit of {Limits.from_env().run_seconds:.0f} s; the explorer "
                    "holds the steps decoded so far.")
        head = "**Stopped:**" if reason is not None else "**Done:**"
        verdict = verdict_text(result_of(view.traces), reason).replace("<b>", "**").replace("</b>", "**")
        out.update({
            self.counters: counters_html(view.traces, False, note, stop_reason=reason),
            self.status_md: f"{head} {lm.name} on {lm.device}. " + sampling_note(view.traces["logitspec"].settings)
                            + verdict,
            **self.page.files.downloadable(write_race_file(view.traces, reason)),  # every lane, and why it stopped
        })
        return out
