"""LogitSpec Explorer: a live race against greedy decoding and every step of LogitSpec, drawn.

Layout and event wiring only. The decoding lives in logitspec/ (race, session) and the
pictures in visual/. Run `python app.py`; GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read
by Gradio itself.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import math
import os
import tempfile
import threading
import time
from copy import deepcopy
from dataclasses import dataclass, field, fields
from pathlib import Path

import gradio as gr

import visual
from visual.verdict import counters_html, verdict_text
from visual.counts import run_counts, run_words
from logitspec.errors import DecodeError
from logitspec.bench.questions import load_questions
from logitspec.limits import MAX_TEMPERATURE, InputError, Limits, check_context, check_prompt, checked_settings
from logitspec.serve.race import RaceStopped, interleave, load_race, result_of
from logitspec.serve.zerogpu import on_zerogpu, race_lanes
from logitspec.serve.examples import example_cache_folder
from logitspec.serve.model_cache import BUNDLED, ModelCache, allowed_models, check_model_choice, model_label, warm_cost_curves
from logitspec.serve.stop import StopSignals, run_deadline
from logitspec.settings import DecodeSettings
from logitspec.trace import RunTrace
from ui import links, trie_view
from ui.figures import FIGURES_CSS, FIGURES_JS, figure_slot, tree_slot
from ui.debugger import OUTCOMES, WHATIF_CLAMP_JS, DebuggerTab
from ui.downloads import UPLOAD_NOTE_JS, download_of
from ui.drawings import Drawings, trace_key
from ui.explain import ExplainTab
from ui.keys import KEYS_JS, MOVES_JS, on_moves, presses

ROOT = Path(__file__).resolve().parent
TRACES_DIR = ROOT / "traces"
QUESTIONS = ROOT / "data" / "spec_bench_subset.jsonl"
# One example per kind of text; ids refer to data/spec_bench_subset.jsonl.
EXAMPLE_IDS = {"Summarisation": 242, "Code": 122, "Translation": 161, "Maths": 401,
               "Chat": 321, "RAG": 482}
LIVE_REDRAW_SECONDS = 2.0  # the least time between redraws of the heavy figures during a race
LIVE_DRAW_RATIO = 9  # and at least this many times the last redraw's own time: the lanes wait at most a tenth
# The counters tick on the page's own timer, off the race's path: each update the race sends makes
# the server rebuild every one of its outputs' configs (about 50 ms of a core), while the lanes wait.
LIVE_COUNT_SECONDS = 0.5
MODEL_POLL_SECONDS = 0.5  # how often a race waiting for its model looks again (and for Stop)
PLAY_SECONDS = 1.0  # Play: a step a second, time to read a tree before the next
PLAY_POLL_SECONDS = 0.05  # how often a waiting Play loop looks for a press on Pause
RECORDED_RACE = TRACES_DIR / "races" / "summarization-242.json"  # the first screen's race

MODELS = ModelCache(warm=warm_cost_curves)
STOPS = StopSignals()


@dataclass
class View:
    """One user's state: the lanes of their last run (or a loaded trace) and the step shown."""

    traces: dict[str, RunTrace] = field(default_factory=dict)
    lane: str = "logitspec"  # the lane the explorer shows
    step: int = 0
    source: str = ""  # what the traces came from, for the status line
    stop_reason: str | None = None  # "stopped" or "time limit" when the race was cut short
    tree_view: str = "lanes"  # the explorer's draft tree: "lanes" or "trie"
    compact_tree: bool = True  # the lanes: only branches with a verified token
    playing: int = 0  # the Play loop that moves this view (0: paused)
    racing: bool = False  # a race is filling these traces now
    shown: bool = True  # False once another run or trace has taken this view's place

    def __post_init__(self) -> None:
        # Play's steps and presses run side by side: each moves from the step the one before reached.
        # Not a field: Gradio turns a state's fields into its config, and a lock cannot be copied.
        self.moving = threading.RLock()

    def __deepcopy__(self, memo) -> "View":
        # Gradio copies the initial view for each visitor; a lock cannot be copied, each gets its own.
        return View(**{f.name: deepcopy(getattr(self, f.name), memo) for f in fields(self)})

    def replaced(self) -> None:
        """Another run or trace takes this view's place: its Play loop ends."""
        self.shown = False
        self.playing = 0

    @classmethod
    def of_lanes(cls, lanes: dict[str, RunTrace], source: str) -> "View":
        """A view exploring a trace or race file (shipped or uploaded): LogitSpec's lane where it has one."""
        return cls(traces=lanes, lane="logitspec" if "logitspec" in lanes else next(iter(lanes)), source=source)

    @property
    def trace(self) -> RunTrace | None:
        return self.traces.get(self.lane) or next(iter(self.traces.values()), None)


# ---------------------------------------------------------------- helpers (no decoding here)

def load_examples() -> list[tuple[str, str]]:
    """(label, prompt) for the example kinds, from the shipped Spec-Bench subset."""
    by_id = {q["question_id"]: q["turns"][0] for q in load_questions(QUESTIONS)}
    return [(label, by_id[qid]) for label, qid in EXAMPLE_IDS.items() if qid in by_id]


def shipped_traces() -> list[Path]:
    return sorted(TRACES_DIR.glob("*.json"))


def recorded_examples() -> list[tuple[str, str, str]]:
    """(label, prompt, file name) of each shipped trace, for the cached examples."""
    out = []
    for path in shipped_traces():
        try:
            t = RunTrace.load(path)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a broken file is skipped here; opening it by name says why
        kind = path.stem.split("-")[0].capitalize()
        out.append((f"{kind}: {len(t.tokens)} tokens, {len(t.steps)} steps", t.prompt_text, path.name))
    return out


def settings_from(k, capacity, ngram, continuation, max_new, tree, temperature=None, top_p=None, seed=None):
    """Checked DecodeSettings from the form's values, in the form's order (InputError otherwise)."""
    return checked_settings(dict(k=k, capacity=capacity, ngram_sizes=ngram or [], continuation=continuation,
                                 max_new_tokens=max_new, tree=tree, temperature=temperature, top_p=top_p, seed=seed))


def sampling_note(settings: dict) -> str:
    """How a sampled run can be repeated (empty for greedy runs and traces made before sampling)."""
    if not settings.get("temperature"):
        return ""
    return (f"Sampled at temperature {settings['temperature']:g}, top-p {settings.get('top_p', 1.0):g}, "
            f"seed {settings.get('seed', 0)}: the same seed repeats this race token for token. ")


@functools.lru_cache(maxsize=1)
def recorded_logitspec() -> tuple[RunTrace | None, str]:
    """The recorded race's LogitSpec lane (else the first shipped trace) and its file name: what the
    Explain tab explains to a visitor with no run of their own. Read once, never changed."""
    if RECORDED_RACE.is_file():
        return load_race(RECORDED_RACE)[0].get("logitspec"), RECORDED_RACE.name
    files = shipped_traces()
    return (RunTrace.load(files[0]), files[0].name) if files else (None, "")


def write_trace_file(trace: RunTrace) -> str:
    """The trace as a JSON file in Gradio's temp area, for the download button."""
    d = Path(tempfile.mkdtemp(prefix="logitspec-"))
    path = d / f"logitspec-trace-{trace.method}-{len(trace.tokens)}tok.json"
    trace.save(path)
    return str(path)


CSS = """
.counters-wrap { overflow-x: auto; max-width: 100%; min-width: 0; }
.counters { width: 100%; border-collapse: collapse; font-size: 1.05rem; }
/* A step's every lookup scrolls in its box; !important: Gradio's block sets overflow: visible inline. */
#retrieval { overflow-wrap: anywhere; max-height: 90vh; overflow-y: auto !important; }
#status-bar { gap: .5rem; }
#status-bar p { margin: 0; }
.counters th, .counters td { padding: 4px 10px; text-align: right; }
.counters th:first-child, .counters td:first-child { text-align: left; }
.counters td:first-child { white-space: nowrap; }  /* a lane's swatch and name on one line */
.verdict { font-size: 1.2rem; margin-top: .5rem; }
#attribution { font-size: .85rem; opacity: .8; }
@media (max-width: 640px) {
  .gradio-container { padding-left: 6px !important; padding-right: 6px !important; }
  .counters { font-size: .72rem; }
  .counters th { overflow-wrap: normal; word-break: normal; hyphens: none; }  /* a header wraps between words only */
  .counters th, .counters td { padding: 2px; }
  /* The compute clock's seconds are in the race figure's legend: without them a phone's row holds the speed-up. */
  .counters th:nth-child(6), .counters td:nth-child(6) { display: none; }
}
"""


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


def stop_run(request: gr.Request):
    """Stop this user's run; it ends before its next decoding step and shows where it got to."""
    if request is not None and STOPS.stop(request.session_hash):
        return "**Stopping** after the current step…"
    return gr.skip()


def arm_run(request: gr.Request):
    """Run was clicked: arm this session's stop flag at once, say if the race must wait its turn, and
    start the counters' timer."""
    if request is not None:
        STOPS.start(request.session_hash)
    tick = gr.Timer(active=True)  # the live counters, until the race ends
    if STOPS.running():
        return ("**Waiting for your turn:** another visitor's race is running on this machine; yours starts "
                "when it ends. Meanwhile the page shows the last race."), tick
    return "**Starting the race…**", tick


def no_race() -> bool:
    """No race is running: drawing ahead may take the cores."""
    return not STOPS.running()


DRAWINGS = Drawings(idle=no_race)  # the explorer's and Explain's step figures, kept and drawn ahead


def on_leave(request: gr.Request) -> None:
    """A closed tab stops its run, so no run is left going."""
    if request is not None:
        STOPS.stop(request.session_hash)


def model_status(model):
    """The chosen model's load state, and whether the status needs polling again."""
    try:
        name = check_model_choice(model)
    except InputError as e:
        return f"**Model:** {e}", gr.Timer(active=False)
    st = MODELS.status(name)
    word = {"ready": "ready", "loading": "loading", "failed": "failed", "idle": "not loaded"}[st.state]
    text = f"**Model {word}:** {st.message}"
    if st.state == "idle":
        text += " — it loads when you press Run."
    return text, gr.Timer(active=st.state == "loading")


def pick_model(model):
    """Start loading a newly chosen model in the background."""
    try:
        name = check_model_choice(model)
    except InputError as e:
        raise gr.Error(str(e)) from None
    if MODELS.loaded(name) is None and MODELS.status(name).state != "loading":
        MODELS.preload(name)  # says "loading" from the call on
    return model_status(name)


PLAYS = itertools.count(1)  # numbers each Play loop, so a loop knows when it was paused or replaced


def play_button(playing: bool) -> gr.Button:
    return gr.Button(value="❚❚ Pause" if playing else "▶ Play")


@dataclass
class Form:
    """The input components the events read (the outputs live on ExplorerUI)."""

    prompt: object = None
    run_btn: object = None
    stop_btn: object = None
    recorded_box: object = None
    model: object = None
    with_pld: object = None
    with_static: object = None
    with_recycling: object = None
    k: object = None
    capacity: object = None
    ngram: object = None
    continuation: object = None
    max_new: object = None
    tree: object = None
    temperature: object = None
    top_p: object = None
    seed: object = None
    prev_btn: object = None
    next_btn: object = None
    outcome: object = None
    upload: object = None
    status_timer: object = None
    count_timer: object = None  # the live race's counters


class ExplorerUI:
    """The components of one app and the handlers that fill them."""

    # ------------------------------------------------------------ what each view shows

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
        drawn = self._step_drawing(t, i, view)
        for j in (i + 1, i - 1):  # the likely next moves, drawn while the visitor reads this one
            if 0 <= j < len(t.steps) and not view.racing:
                DRAWINGS.ahead(self._drawing_key(t, j, view), self._drawer(t, j, view))
        return {
            self.slider: gr.Slider(minimum=0, maximum=max(1, len(t.steps) - 1), value=i, step=1),
            self.step_label: f"### Step {i} (steps 0–{len(t.steps) - 1})  ·  {t.method}",
            self.summary_md: drawn["summary"],
            **self.tree_fig.fill_tree(drawn["tree"], t, drawn["key"]),
            self.tree_view: view.tree_view,
            self.trie_download: trie_view.download(t, i, view.tree_view),
            **self.cand_fig.fill(drawn["candidates"]),
            self.retrieval_view: drawn["retrieval"],
            self.play_btn: play_button(bool(view.playing)),
            self.state: view,
        }

    @staticmethod
    def _drawing_key(t: RunTrace, i: int, view: View) -> tuple:
        return ("step", trace_key(t), i, view.tree_view, view.compact_tree)

    def _step_drawing(self, t: RunTrace, i: int, view: View) -> dict:
        """A step's drawn pieces: kept from before (or drawn ahead), else drawn now; a live race's
        are drawn once and not kept (its run grows before anyone comes back to them)."""
        draw = self._drawer(t, i, view)
        return draw() if view.racing else DRAWINGS.get(self._drawing_key(t, i, view), draw)

    @staticmethod
    def _drawer(t: RunTrace, i: int, view: View):
        return functools.partial(ExplorerUI._draw_step, t, i, view.tree_view, view.compact_tree)

    @staticmethod
    def _draw_step(t: RunTrace, i: int, tree_view: str, compact: bool) -> dict:
        return {"summary": visual.step_summary_md(t, i), "tree": trie_view.figure(t, i, tree_view, compact),
                "key": trie_view.key_html(t, tree_view), "candidates": visual.candidates_figure(t, i, fit=True),
                "retrieval": visual.retrieval_html(t, i)}

    def trace_outputs(self, view: View, outcomes: list[str] | None = None) -> dict:
        """Explorer, debugger, observations, text and race chart of the explored trace."""
        t = view.trace
        if t is None:
            return {}
        out = self.step_outputs(view)
        out.update({
            self.text_view: visual.text_spans(t),
            **self.obs_topk_fig.fill(visual.topk_hit_figure(t, fit=True)),
            **self.obs_retrieval_fig.fill(visual.retrieval_success_figure(t, fit=True)),
            **self.obs_accepted_fig.fill(visual.accepted_hist_figure(t, fit=True)),
            **self.obs_time_fig.fill(visual.time_breakdown_figure(t, fit=True)),
            **self.obs_budget_fig.fill(visual.budget_figure(t, fit=True)),
            **self.race_figures(view.traces, stopped=view.stop_reason is not None),
            self.lane_pick: gr.Radio(choices=list(view.traces), value=view.lane, visible=len(view.traces) > 1),
            self.answer: visual.answer_text(t),
            self.prompt: t.prompt_text,  # the prompt of the run on screen, whichever way it was opened
        })
        out.update(self.debugger.trace_outputs(t, outcomes))
        return out

    def cleared_run(self) -> dict:
        """The answer, text and race figures emptied: a live race starting must not show the last run's numbers."""
        empty = {c: None for f in (self.race_fig, self.passes_fig) for c in f.outputs}
        return {**empty, self.answer: "", self.text_view: None}

    def race_figures(self, traces: dict[str, RunTrace], stopped: bool = False) -> dict:
        """The race against compute time and against forward passes."""
        return {**self.race_fig.fill(visual.race_figure(traces, stopped=stopped, fit=True)),
                **self.passes_fig.fill(visual.passes_figure(traces, stopped=stopped, fit=True))}

    # ------------------------------------------------------------ the race

    def race(self, prompt, model, with_pld, k, capacity, ngram, continuation, max_new, tree, temperature, top_p,
             seed, outcomes, with_static, with_recycling, view: View, request: gr.Request):
        """Stream the race: one step of each lane in turn, counters live, figures now and then.

        Stop ends it within one step, and the page then shows the steps so far, a verdict over
        the tokens every lane reached, and the trace to download.
        """
        session = request.session_hash if request is not None else "anonymous"
        stop = STOPS.claim(session)  # armed when Run was clicked: a Stop while queued counts
        try:
            form = (k, capacity, ngram, continuation, max_new, tree, temperature, top_p, seed)
            lanes = (["vanilla", "logitspec"] + ["pld"] * bool(with_pld) + ["logitspec-static"] * bool(with_static)
                     + ["recycling"] * bool(with_recycling))
            yield from self._race(stop, prompt, model, lanes, form, outcomes, view)
        finally:
            STOPS.finish(session, stop)

    def _race(self, stop, prompt, model, methods: list[str], form: tuple, outcomes, was: View):
        """The race of the lanes `methods` for settings_from(*form), in place of the view `was`."""
        try:
            prompt = check_prompt(prompt)
            name = check_model_choice(model)
            settings = settings_from(*form)
        except InputError as e:
            yield {self.status_md: f"**Not started:** {e}"}  # the status must not keep "Starting…"
            raise gr.Error(str(e)) from None
        lm = yield from self._wait_for_model(name, stop)
        if lm is None:
            yield {self.status_md: "**Stopped** before the race started; nothing was decoded."}
            return
        try:
            lanes = race_lanes(lm, name, prompt, methods, settings)  # in one GPU call on ZeroGPU
            check_context(len(lanes[0].trace.prompt_tokens), settings.max_new_tokens, lm.max_context)
        except InputError as e:
            yield {self.status_md: f"**Not started:** {e}"}
            raise gr.Error(str(e)) from None
        traces = {ln.name: ln.trace for ln in lanes}
        was.replaced()
        view = View(traces=traces, lane="logitspec", source=f"run on {lm.name}")
        yield {self.state: view, self.play_btn: play_button(False),
               self.status_md: f"**Racing** on {lm.name} ({lm.device})… {sampling_note(settings.to_dict())}"
                               "Stop ends it after the current step.",
               self.counters: counters_html(traces, True), self.download: gr.DownloadButton(visible=False),
               **self.cleared_run()}
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
        yield self._final_outputs(view, outcomes, lm)

    def _wait_for_model(self, name: str, stop):
        """The loaded model, with the loading shown as it goes; None when Stop came first."""
        lm = MODELS.loaded(name)
        if lm is not None:
            return lm
        MODELS.preload(name)
        while True:
            st = MODELS.status(name)
            if stop.is_set():
                return None
            if st.state == "failed":
                yield {self.status_md: f"**Not started:** {st.message}"}
                raise gr.Error(st.message)
            lm = MODELS.loaded(name)
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
                       **self.step_outputs(view, len(explored.trace.steps) - 1),
                       self.text_view: visual.text_spans(explored.trace),
                       self.answer: visual.answer_text(explored.trace), **self.race_figures(traces)}
                cost = time.monotonic() - t0  # the drawing and the server's sending of it, as the lanes waited
                next_draw = t0 + cost + max(LIVE_REDRAW_SECONDS, LIVE_DRAW_RATIO * cost)
        finally:
            view.racing = False

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
        out = self.trace_outputs(view, outcomes)
        res = result_of(view.traces)
        note = ""
        if reason is not None:
            note = ("The explorer, the text and the download hold the steps decoded before the stop." if
                    reason == "stopped" else
                    f"The run reached the time limit of {Limits.from_env().run_seconds:.0f} s; the explorer "
                    "holds the steps decoded so far.")
        head = "**Stopped:**" if reason is not None else "**Done:**"
        out.update({
            self.counters: counters_html(view.traces, False, note, stop_reason=reason),
            self.status_md: f"{head} {lm.name} on {lm.device}. " + sampling_note(view.traces["logitspec"].settings)
                            + verdict_text(res, reason).replace("<b>", "**").replace("</b>", "**"),
            self.download: gr.DownloadButton(value=write_trace_file(view.traces["logitspec"]), visible=True),
        })
        return out

    # ------------------------------------------------------------ traces

    def open_trace(self, path, outcomes, view: View):
        """Explore a trace or race file (shipped or uploaded). A bad file leaves every panel as it was
        and says why in the status line; no error badge, since nothing shown is wrong."""
        if not path:
            return gr.skip()
        p = Path(path if isinstance(path, str) else path.name)
        try:
            lanes, machine = self.read_lanes(p)
        except InputError as e:
            return {self.status_md: f"**Not opened:** {p.name}: {e}"}
        view.replaced()
        new = View.of_lanes(lanes, p.name)
        out = self.trace_outputs(new, outcomes)
        t = new.trace
        race = f"a race of {', '.join(lanes)}; " if len(lanes) > 1 else ""
        out[self.status_md] = f"**Exploring** {p.name}: {race}{run_words(run_counts(t))} ({t.model})"
        out[self.counters] = counters_html(lanes, False, f"A recorded race on {machine}; not live." if machine else "")
        out[self.download] = download_of(p)  # the download serves the file on screen, every lane of it
        return out

    def upload_trace(self, path, outcomes, view: View):
        """An uploaded file, explored like a shipped one. A refused file is named beside the upload box
        as well as in the status line, and the box is emptied; the view stays. Either way the shipped
        menu no longer names a file, since it is not what is shown."""
        out = self.open_trace(path, outcomes, view)
        if not isinstance(out, dict):
            return out
        refused = self.state not in out
        out.update({self.upload_note: out[self.status_md] if refused else "", self.shipped: None})
        if refused:
            out[self.upload] = None
        return out

    def pick_shipped(self, name, outcomes, view: View):
        """A shipped file picked from the menu; a note left by a refused upload goes."""
        out = self.open_shipped(name, outcomes, view)
        if isinstance(out, dict) and self.state in out:
            out[self.upload_note] = ""
        return out

    @staticmethod
    def read_lanes(p: Path) -> tuple[dict[str, RunTrace], str]:
        """The checked lanes in trace or race file `p`, and the machine a race ran on (ids checked
        against the real vocabulary once its model is loaded); InputError saying what is wrong otherwise."""
        limit = Limits.from_env().trace_bytes
        lanes, machine = load_race(p, limit)
        lm = MODELS.loaded(BUNDLED)
        if lm is not None and any(t.model == lm.name for t in lanes.values()):
            lanes, machine = load_race(p, limit, len(lm.tokenizer))
        return lanes, machine

    def open_shipped(self, name, outcomes, view: View):
        if not name or name not in {p.name for p in shipped_traces()}:
            return gr.skip()
        return self.open_trace(str(TRACES_DIR / name), outcomes, view)

    def open_recorded(self, prompt, name):
        """A recorded run's pictures, for the cached examples (which cannot carry session state)."""
        out = self.open_shipped(name, OUTCOMES, View())
        if not isinstance(out, dict):
            return out
        out.pop(self.state, None)
        out.pop(self.download, None)  # an example's cache holds pictures, not a session's download
        return out

    def adopt_recorded(self, name, view: View):
        """After a cached example has shown its pictures, explore the same trace in this session."""
        if not name or name not in {p.name for p in shipped_traces()}:
            return gr.skip()
        try:
            lanes, _ = self.read_lanes(TRACES_DIR / name)
        except InputError as e:
            return {self.status_md: f"**Not opened:** {name}: {e}"}
        view.replaced()
        return {self.state: View.of_lanes(lanes, name)}

    def initial_view(self, outcomes, request: gr.Request = None):
        """What a new visitor sees at once: the shipped run a link names (?trace=NAME&step=N&tab=TAB),
        else a recorded race of both lanes, else the first shipped trace."""
        link = links.parse_link(links.request_params(request), [p.name for p in shipped_traces()])
        if link.trace:
            out = self.open_shipped(link.trace, outcomes, View())
            out[self.shipped] = link.trace
        else:
            out = self._first_view(outcomes)
        return self._follow_link(link, out)

    def _follow_link(self, link: links.Link, out: dict) -> dict:
        """The step and tab a link names; what was wrong with it, in one line before the status."""
        view = out.get(self.state)
        if isinstance(view, View) and view.trace is not None:
            step = links.check_step(link, len(view.trace.steps))
            if step is not None:
                out.update(self.step_outputs(view, step))
        if link.tab:
            out[self.tabs] = gr.Tabs(selected=link.tab)
        if link.tab == "explain":
            out[self.explain.picked] = self.explain.linked(view, link.step)
        if link.problems:
            out[self.status_md] = f"**This link:** {link.message}. " + out.get(self.status_md, "")
        return out

    def _first_view(self, outcomes) -> dict:
        """A recorded race of both lanes, else the first shipped trace."""
        if RECORDED_RACE.is_file():
            traces, machine = load_race(RECORDED_RACE)
            view = View(traces=traces, lane="logitspec", source=RECORDED_RACE.name)
            out = self.trace_outputs(view, outcomes)
            out[self.counters] = counters_html(traces, False, f"A recorded race on {machine}; not live.")
            out[self.status_md] = (f"**Recorded race** (not live): {len(traces['logitspec'].tokens)} tokens on "
                                   f"{machine}. Press ▶ Run the race to race on this machine.")
            out[self.download] = download_of(RECORDED_RACE)
            return out
        files = shipped_traces()
        if not files:
            return {}
        out = self.open_trace(str(files[0]), outcomes, View())
        out[self.shipped] = files[0].name
        return out

    def pick_lane(self, lane, outcomes, view: View) -> dict:
        """Explore another lane of the race (or race file) on screen, from its first step."""
        if lane not in view.traces:
            return gr.skip()
        with view.moving:
            view.lane, view.step = lane, 0
        return self.trace_outputs(view, outcomes)

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

    def move(self, view: View, by):
        """Previous/Next: `by` steps, the presses the page counted since its last move."""
        by = presses(by)
        if by == 0 or view.trace is None:
            return gr.skip()
        return self.step_outputs(view, by=by)

    def on_span(self, view: View, evt: gr.SelectData):
        """Clicking a token span opens the step that produced it."""
        t, i = view.trace, selected_index(evt)
        if t is None or i is None:
            return gr.skip()
        steps = visual.span_steps(t)
        return self.step_outputs(view, steps[i]) if 0 <= i < len(steps) else gr.skip()

    def on_row(self, view: View, evt: gr.EventData):
        """Clicking a debugger row opens its step in the explorer."""
        step = getattr(evt, "_data", None) or {}
        step = step.get("step") if isinstance(step, dict) else None
        if view.trace is None or not isinstance(step, int) or not 0 <= step < len(view.trace.steps):
            return gr.skip()
        out = self.step_outputs(view, step)
        out[self.tabs] = gr.Tabs(selected="explorer")
        return out

    async def play(self, view: View):
        """Play or Pause (one button): a step every PLAY_SECONDS until the last step, a press on
        Pause, or another run or trace in the view's place. Only the loop sets the button while
        it runs, so its replies, in order, always end on ▶ Play."""
        if view.playing or view.trace is None:
            view.playing = 0  # the running loop sees it within PLAY_POLL_SECONDS
            yield {self.play_btn: gr.skip()}
            return
        loop = view.playing = next(PLAYS)
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

    # ------------------------------------------------------------ layout and wiring

    def build(self) -> gr.Blocks:
        """Lay out the app and wire its events; loads no model."""
        with gr.Blocks(title="LogitSpec Explorer", delete_cache=(3600, 3600)) as demo:
            self.state = gr.State(View())
            form = self._layout_race()
            self._layout_tabs(form)
            self._wire(demo, form)
        return demo

    def _layout_race(self) -> Form:
        """The top of the page: the statuses, the race's form, and the race as it runs."""
        models, lim, s = allowed_models(), Limits.from_env(), DecodeSettings()
        gr.Markdown("# LogitSpec Explorer\nSpeculative decoding from the *next-next* token: watch "
                    "LogitSpec race plain decoding on a real model, then open any step to see "
                    "the candidates, the retrieval and the draft tree it verified.")
        with gr.Row(elem_id="status-bar"):
            self.model_md = gr.Markdown("", elem_id="model-status")
            self.status_md = gr.Markdown("", elem_id="status")
        f = Form()
        with gr.Row():
            with gr.Column(scale=2, min_width=300):
                f.prompt = self.prompt = gr.Textbox(label="Prompt", lines=5, max_lines=14, elem_id="prompt",
                                                    placeholder="Ask something, or pick an example below")
                with gr.Row():
                    f.run_btn = gr.Button("▶ Run the race", variant="primary", elem_id="run")
                    f.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="stop")
                examples = load_examples()
                gr.Examples(examples=[[p] for _, p in examples], inputs=[f.prompt],
                            example_labels=[label for label, _ in examples], label="Examples")
                f.recorded_box = gr.Column()
                gr.Markdown("Examples: questions from [Spec-Bench](https://github.com/hemingkx/Spec-Bench) "
                            "(Apache-2.0).", elem_id="attribution")
                f.model = gr.Dropdown(choices=[(model_label(m), m) for m in models], value=models[0],
                                      label="Model", allow_custom_value=False, elem_id="model")
                f.with_pld = gr.Checkbox(label="Also race prompt lookup decoding (PLD)", value=False)
                f.with_static = gr.Checkbox(
                    label=f"Also race the paper's tree ({s.capacity} tokens, what a GPU verifies in one pass)",
                    value=False, elem_id="with-static")
                f.with_recycling = gr.Checkbox(
                    label="Also race Token Recycling (drafts from the successors past passes predicted)",
                    value=False, elem_id="with-recycling")
                with gr.Accordion("Decoder parameters (paper defaults)", open=False):
                    f.k = gr.Slider(1, lim.k, value=s.k, step=1, label="k: next-next candidates from the logits")
                    f.capacity = gr.Slider(1, lim.capacity, value=s.capacity, step=1,
                                           label="Tree capacity (tokens, root included)")
                    f.ngram = gr.CheckboxGroup(list(range(1, lim.ngram + 1)), value=list(s.ngram_sizes),
                                               label="n-gram sizes")
                    f.continuation = gr.Slider(1, lim.continuation, value=s.continuation, step=1,
                                               label="g1 continuation length")
                    f.max_new = gr.Slider(1, lim.max_new_tokens, value=s.max_new_tokens, step=1,
                                          label="Max new tokens", elem_id="max-new")
                    f.tree = gr.Radio(["cost", "static"], value=s.tree, label="Tree sizing",
                                      info="cost: sized by the measured cost of a tree token on this "
                                           f"hardware, at most {s.cpu_capacity} tokens on a CPU; static: "
                                           "the paper's fixed capacity")
                    f.temperature = gr.Slider(0, MAX_TEMPERATURE, value=s.temperature, step=0.05, label="Temperature",
                                              info="0: greedy; above 0 every lane samples, still token for "
                                                   "token alike", elem_id="temperature")
                    f.top_p = gr.Slider(0.01, 1, value=s.top_p, step=0.01, label="Top-p (when sampling)",
                                        elem_id="top-p")
                    f.seed = gr.Number(value=s.seed, precision=0, minimum=0, label="Seed (when sampling)",
                                       info="the same seed repeats a race exactly", elem_id="seed")
            with gr.Column(scale=3, min_width=300):
                self.counters = gr.HTML(elem_id="counters")
                self.answer = gr.Textbox(label="LogitSpec's answer, as plain text", lines=4, max_lines=12,
                                         interactive=False, elem_id="answer", buttons=["copy"])
                self.race_fig = figure_slot("race-plot", "Race: tokens against each lane's compute time")
                self.race_plot = self.race_fig.plot
                # Counts, not time: what the paper's tokens per pass mean on any hardware.
                self.passes_fig = figure_slot("race-passes-plot", "Race: tokens against forward passes")
                self.text_view = gr.HighlightedText(
                    label="LogitSpec output: one colour block per step (colour = tokens the step committed); "
                          "click a block to open its step",
                    color_map=visual.ACCEPT_COLORS, show_legend=True, combine_adjacent=False,
                    elem_id="text-view")
        return f

    def _layout_tabs(self, f: Form) -> None:
        """The tabs under the race: explorer, debugger, observations, explanation, trace files."""
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as self.tabs:
            with gr.Tab("Step explorer", id="explorer"):
                # A race's lanes: the explorer and the debugger show one (LogitSpec's first).
                self.lane_pick = gr.Radio([], label="Lane explored", visible=False, elem_id="explore-lane",
                                          info="the race's decoder whose steps the explorer and the debugger show")
                with gr.Row():
                    f.prev_btn = gr.Button("◀ Previous", elem_id="prev", scale=0, min_width=120)
                    self.slider = gr.Slider(0, 1, value=0, step=1, label="Step", elem_id="step-slider", scale=4)
                    f.next_btn = gr.Button("Next ▶", elem_id="next", scale=0, min_width=120)
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
                    self.cand_fig = figure_slot("cand-plot", "Next-next candidates", min_width=320)
                    self.cand_plot = self.cand_fig.plot
                    self.retrieval_view = gr.HTML(label="Retrieval", elem_id="retrieval")
            with gr.Tab("Retrieval debugger", id="debugger"):
                self.debugger = DebuggerTab()
                self.debugger.build()
                f.outcome, self.debug_table = self.debugger.outcome, self.debugger.table
            with gr.Tab("Observations", id="observations"):
                gr.Markdown("The paper's observations, measured on the run or trace you are exploring.")
                with gr.Row():
                    self.obs_topk_fig = figure_slot("obs-topk", "True next-next token within the top-k",
                                                    min_width=320)
                    self.obs_retrieval_fig = figure_slot("obs-retrieval", "Retrieval success per step",
                                                         min_width=320)
                with gr.Row():
                    self.obs_accepted_fig = figure_slot("obs-accepted", "Tokens committed per forward pass", min_width=320)
                    self.obs_time_fig = figure_slot("obs-time", "Where the time went", min_width=320)
                with gr.Row():
                    self.obs_budget_fig = figure_slot("obs-budget", "Tokens per pass against tree budget",
                                                      min_width=320)
            with gr.Tab("Explain", id="explain") as self.explain_tab:
                self.explain = ExplainTab(recorded_logitspec, DRAWINGS)
                self.explain.build()
            with gr.Tab("Traces", id="traces"):
                gr.Markdown("Download the trace of your run, open one of the traces recorded on the "
                            "bundled model, or upload a trace file (no model needed).")
                self.download = gr.DownloadButton("Download this run's trace (JSON)", visible=False,
                                                  elem_id="download")
                self.shipped = gr.Dropdown([p.name for p in shipped_traces()], label="Shipped traces",
                                           value=None, elem_id="shipped")
                f.upload = self.upload = gr.File(label="Upload a trace or a recorded race (.json)",
                                                 file_types=[".json"], type="filepath", elem_id="upload")
                self.upload_note = gr.Markdown("", elem_id="upload-note")  # why an upload was refused
        f.status_timer = gr.Timer(2.0, active=False)
        f.count_timer = gr.Timer(LIVE_COUNT_SECONDS, active=False)

    def _outputs(self) -> tuple[list, list]:
        """The explorer's outputs, and everything a whole trace fills."""
        explorer = [self.slider, self.step_label, self.summary_md, *self.tree_fig.outputs, self.tree_view,
                    self.trie_download, *self.cand_fig.outputs, self.retrieval_view, self.play_btn, self.state]
        figures = [self.obs_topk_fig, self.obs_retrieval_fig, self.obs_accepted_fig, self.obs_time_fig,
                   self.obs_budget_fig, self.race_fig, self.passes_fig]
        whole = explorer + [self.prompt, self.text_view, self.answer, *self.debugger.trace_components,
                            *(c for f in figures for c in f.outputs), self.counters, self.status_md]
        whole.append(self.lane_pick)
        return explorer, whole

    def _wire_recorded(self, f: Form, trace_out: list, view_kw: dict) -> None:
        """Runs recorded on the bundled model, drawn once at start-up and served from Gradio's
        example cache: a click shows a whole run at once, no model needed."""
        recorded = recorded_examples()
        if not recorded:
            return
        with f.recorded_box:
            rec = gr.Examples(
                examples=[[p, name] for _, p, name in recorded], inputs=[f.prompt, self.shipped],
                outputs=[c for c in trace_out if c is not self.state], fn=self.open_recorded,
                example_labels=[label for label, _, _ in recorded], cache_examples=True,
                cache_mode="eager", preload=False, label="Recorded runs (open at once, no model needed)",
                api_name="recorded", elem_id="recorded")
        rec.cache_event.then(self.adopt_recorded, [self.shipped, self.state], [self.state, self.status_md], **view_kw)

    def _wire(self, demo: gr.Blocks, f: Form) -> None:
        """Every event: the race, Stop, the model status, and moving through a trace."""
        explorer_out, trace_out = self._outputs()
        # Drawing is light next to decoding: its own, wider lane so it never waits on a run.
        view_kw = dict(concurrency_limit=8, concurrency_id="view", api_visibility="undocumented")
        # Moves between steps one at a time: side by side, a later press's reply could land before
        # an earlier one's and leave the page a step behind. Drawing holds the GIL, so little is lost.
        step_kw = dict(view_kw, concurrency_limit=1, concurrency_id="step")
        self._wire_recorded(f, trace_out, view_kw)
        self.lane_pick.input(self.pick_lane, [self.lane_pick, f.outcome, self.state], trace_out, **view_kw)
        # The paper's lane and Token Recycling's come after the older inputs: API callers that predate
        # them keep their places.
        race_in = [f.prompt, f.model, f.with_pld, f.k, f.capacity, f.ngram, f.continuation, f.max_new, f.tree,
                   f.temperature, f.top_p, f.seed, f.outcome, f.with_static, f.with_recycling, self.state]
        # Arming is instant and unqueued, so Stop works even while the race waits its turn; the
        # race itself keeps the page as it is while queued (no overlay blanking the panels).
        racing = f.run_btn.click(arm_run, None, [self.status_md, f.count_timer], queue=False).then(
            self.race, race_in, trace_out + [self.download], api_name="race", concurrency_limit=1,
            concurrency_id="model", show_progress="hidden")
        racing.success(self.explain.show, [self.state, self.explain.picked], self.explain.outputs, **view_kw)
        racing.then(lambda: gr.Timer(active=False), None, [f.count_timer], queue=False, api_visibility="undocumented")
        f.count_timer.tick(self.live_counters, [self.state], [self.counters], concurrency_limit=None,
                           show_progress="hidden", api_visibility="undocumented")
        # No `cancels`: the race sees the flag within one step and ends in its final state.
        f.stop_btn.click(stop_run, None, [self.status_md], api_name="stop", queue=False)
        demo.unload(on_leave)

        model_out = [self.model_md, f.status_timer]
        f.model.change(pick_model, [f.model], model_out, concurrency_limit=None)
        f.status_timer.tick(model_status, [f.model], model_out, concurrency_limit=None)
        demo.load(model_status, [f.model], model_out, concurrency_limit=None)
        demo.load(self.initial_view, [f.outcome],
                  trace_out + [self.shipped, self.tabs, self.explain.picked, self.download],
                  **view_kw).then(
            self.explain.on_link, [self.state, self.explain.picked], self.explain.outputs, **view_kw).then(
            None, None, None, js=links.SCROLL_JS)
        demo.load(None, None, None, js=KEYS_JS)
        demo.load(None, None, None, js=MOVES_JS)
        demo.load(None, None, None, js=UPLOAD_NOTE_JS)
        demo.load(None, None, None, js=WHATIF_CLAMP_JS)
        demo.load(None, None, None, js=FIGURES_JS)  # fits the figures to the page, exports their slides
        self.explain.wire(self.explain_tab, self.state, view_kw, step_kw)

        # Arrow keys and the number box send `input` only, a drag ends with `release`: both move the view.
        # preprocess=False: Gradio's own range check would put an error on every panel for a step
        # typed past the ends; go_step holds it to the run's steps instead. No progress overlay: the
        # box sends its step again when it loses focus, and an overlay then would swallow the click
        # that took the focus (on the tree view radio, say).
        for moved in (self.slider.input, self.slider.release):
            moved(self.go_step, [self.state, self.slider], explorer_out, trigger_mode="always_last", preprocess=False,
                  show_progress="hidden", **step_kw)
        self.tree_view.input(self.set_tree_view, [self.state, self.tree_view], explorer_out, **view_kw)
        self.tree_fig.compact.input(self.set_compact_tree, [self.state, self.tree_fig.compact], explorer_out,
                                    **view_kw)
        on_moves(f.prev_btn, f.next_btn, "explorer", self.move, [self.state, self.moves], explorer_out, **step_kw)
        # A press while playing pauses; the loop mostly sleeps, so it takes no drawing slot.
        self.play_btn.click(self.play, [self.state], explorer_out, trigger_mode="multiple", concurrency_limit=None,
                            show_progress="hidden", api_visibility="undocumented")
        self.text_view.select(self.on_span, [self.state], explorer_out, **view_kw)
        self.debug_table.click(self.on_row, [self.state], explorer_out + [self.tabs], **view_kw)
        self.debugger.wire(self.state, **view_kw)
        self.shipped.input(self.pick_shipped, [self.shipped, f.outcome, self.state],
                           trace_out + [self.upload_note, self.download], **view_kw)
        f.upload.upload(self.upload_trace, [f.upload, f.outcome, self.state],
                        trace_out + [self.upload_note, self.upload, self.shipped, self.download], api_name="open_trace",
                        **view_kw)


def build_app() -> gr.Blocks:
    """The Blocks app; building it loads no model."""
    drawn_from = (shipped_traces() + [Path(__file__)] + sorted((ROOT / "visual").glob("*.py"))
                  + sorted((ROOT / "ui").glob("*.py"))
                  + [ROOT / "logitspec" / f"{m}.py" for m in ("whatif", "retrieval", "drafts")])
    os.environ.setdefault("GRADIO_EXAMPLES_CACHE",
                          str(example_cache_folder(ROOT / ".gradio" / "cached_examples", drawn_from)))
    return ExplorerUI().build()


def main() -> None:
    """Serve the app; the default model starts loading in the background at once."""
    if on_zerogpu():
        import spaces  # noqa: F401  before anything touches CUDA: ZeroGPU takes the placement over
    default = allowed_models()[0]
    loading = MODELS.preload(default)  # loads while the UI is built and served

    def report() -> None:
        loading.join()
        print(f"LogitSpec Explorer: {MODELS.status(default).message}", flush=True)

    threading.Thread(target=report, daemon=True).start()
    demo = build_app()
    # max_file_size: the browser refuses a larger trace before sending it, and the server stops reading it.
    demo.queue(default_concurrency_limit=1, max_size=64).launch(
        show_error=True, theme=gr.themes.Soft(), css=CSS + FIGURES_CSS, max_file_size=Limits.from_env().trace_bytes)


if __name__ == "__main__":
    main()
