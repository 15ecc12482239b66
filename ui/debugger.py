"""The Retrieval debugger tab: every step by retrieval outcome, and what-if retrieval.

Layout and wiring only: the rows and sentences come from visual.retrieval, the replay from
logitspec.analysis.whatif and its pictures from visual.whatif.
"""
from __future__ import annotations

import gradio as gr

from logitspec.core.limits import InputError, Limits
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace
from logitspec.analysis.whatif import RetrievalSetting, own_setting, recorded_k, what_if
from visual.data import OUTCOMES_LOGITSPEC
from visual.fit import caption_html
from visual.method_words import LOGITSPEC, ticked, words_of
from visual.debug_table import DEBUG_TABLE_CSS, debugger_html, debugger_note, debugger_rows
from visual.whatif import whatif_figure, whatif_html
from logitspec.analysis.set_tables import rows_csv

from .workbench import csv_button

OUTCOMES = list(OUTCOMES_LOGITSPEC)

WHATIF_MD = ("Retrieval again over this run's own text, with other n-gram sizes, continuation length or k, "
             "no model needed: the output is fixed, so each step's context and candidates are in the trace. "
             "Was a failure the setting or the text?")
# A click (or Enter) on a row sends its step to the server; the listener sits on the component,
# so it outlives each redraw of the table.
ROW_JS = """
const open = (tr) => tr && trigger('click', {step: Number(tr.dataset.step)});
element.addEventListener('click', (e) => open(e.target.closest('tr[data-step]')));
element.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(e.target.closest('tr[data-step]')); });
"""


# A number typed past a what-if slider's range goes back to the nearest end at once, so the box
# shows the setting the replay will use (the label says where k's end comes from).
WHATIF_CLAMP_JS = """
() => {
  if (window.__logitspecClamp) return;
  window.__logitspecClamp = true;
  document.addEventListener('change', (e) => {
    const box = e.target;
    const slider = box && box.closest && box.closest('#whatif-k, #whatif-continuation');
    if (!slider || box.type !== 'number') return;
    const range = slider.querySelector('input[type=range]');
    const lo = Number(range?.min ?? box.min), hi = Number(range?.max ?? box.max), v = Number(box.value);
    if (Number.isNaN(v) || (v >= lo && v <= hi)) return;
    box.value = String(Math.min(hi, Math.max(lo, Math.round(v))));
    box.dispatchEvent(new Event('input', {bubbles: true}));
  }, true);
}
"""


class DebuggerTab:
    """The tab's components and handlers."""

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        lim, s = Limits.from_env(), DecodeSettings()
        # The intro and the filter speak the explored method's words (visual/method_words.py).
        self.intro = gr.Markdown(LOGITSPEC.intro, elem_id="debug-intro")
        self.outcome = gr.CheckboxGroup(list(LOGITSPEC.filters), value=OUTCOMES, label="Show", elem_id="outcome")
        self.note = gr.Markdown(elem_id="debug-note")
        self.table = gr.HTML(elem_id="debug-table", css_template=DEBUG_TABLE_CSS, js_on_load=ROW_JS)
        self.csv = gr.DownloadButton("Download this table (CSV)", visible=False, size="sm", elem_id="debug-csv")
        with gr.Accordion("What-if retrieval", open=True, elem_id="whatif"):
            gr.Markdown(WHATIF_MD)
            with gr.Row():
                self.ngram = gr.CheckboxGroup(list(range(1, lim.ngram + 1)), value=list(s.ngram_sizes),
                                              label="n-gram sizes", elem_id="whatif-ngram", min_width=200)
                self.continuation = gr.Slider(1, lim.continuation, value=s.continuation, step=1,
                                              label="g1 continuation length", elem_id="whatif-continuation",
                                              min_width=200)
                self.k = gr.Slider(0, s.k, value=s.k, step=1, label="k: candidates looked up with g2",
                                   elem_id="whatif-k", min_width=200)
            self.run = gr.Button("Re-run retrieval", elem_id="whatif-run")
            self.summary = gr.HTML(elem_id="whatif-summary")
            self.caption = gr.HTML(elem_id="whatif-plot-caption")
            self.plot = gr.Plot(show_label=False, label="What-if retrieval", elem_id="whatif-plot")

    @property
    def trace_components(self) -> list:
        """What trace_outputs fills."""
        return [self.intro, self.outcome, self.note, self.table, self.csv, self.ngram, self.continuation, self.k, self.summary,
                self.caption, self.plot]

    def wire(self, state: gr.State, **kw) -> None:
        # input, not change: a new trace sets the filter to its method's outcomes without a second draw.
        # Quick clicks on several boxes: the last one's state is drawn ("once" would drop it).
        self.outcome.input(self.filter, [state, self.outcome], [self.note, self.table, self.csv],
                           trigger_mode="always_last", **kw)
        self.run.click(self.rerun, [state, self.ngram, self.continuation, self.k],
                       [self.summary, self.caption, self.plot], **kw)

    def rows_outputs(self, trace: RunTrace | None, outcomes: list[str] | None) -> dict:
        """The table of the chosen outcomes, or only a sentence saying why it lists nothing."""
        rows = debugger_rows(trace, outcomes)
        return {self.note: debugger_note(trace, outcomes, len(rows)),
                self.table: debugger_html(rows, trace.method if trace is not None else "logitspec"),
                self.csv: csv_button(f"steps-{trace.method if trace is not None else 'none'}.csv", rows_csv(rows))}

    def trace_outputs(self, trace: RunTrace, outcomes: list[str] | None) -> dict:
        """Everything the tab shows for a newly explored trace: the what-if starts at the run's own setting."""
        own, most = own_setting(trace), recorded_k(trace)
        words = words_of(trace.method)
        kept = ticked(trace.method, outcomes)  # a choice made for another method's outcomes: all of this one's
        out = self.rows_outputs(trace, kept)
        out[self.intro] = words.intro
        out[self.outcome] = gr.CheckboxGroup(choices=list(words.filters), value=kept, visible=bool(words.filters))
        out[self.ngram] = list(own.ngram_sizes)
        out[self.continuation] = own.continuation
        out[self.k] = gr.Slider(minimum=0, maximum=max(1, most), value=own.k, interactive=most > 0,
                                label=f"k: candidates looked up with g2 (this trace recorded {most})")
        out.update(self.draw(trace, own))
        return out

    def draw(self, trace: RunTrace, setting: RetrievalSetting) -> dict:
        """The what-if at `setting`; a setting it cannot honour is said in one line, the figure kept."""
        try:
            w = what_if(trace, setting)
        except InputError as e:
            return {self.summary: f'<p class="whatif-error"><b>Not re-run:</b> {e}</p>'}
        fig = whatif_figure(w, fit=True)
        return {self.summary: whatif_html(w, trace), self.caption: caption_html(fig), self.plot: fig}

    def filter(self, view, outcomes):
        return self.rows_outputs(view.trace, outcomes)

    def rerun(self, view, ngram, continuation, k):
        if view.trace is None:
            return {self.summary: "<p>Open a run or a trace first.</p>"}
        try:
            setting = RetrievalSetting(tuple(int(n) for n in ngram or ()), int(continuation), int(k))
        except (TypeError, ValueError):
            return {self.summary: "<p class=\"whatif-error\"><b>Not re-run:</b> the settings must be whole numbers</p>"}
        return self.draw(view.trace, setting)
