"""The Workbench tab: a set of prompts decoded by one or more methods (a set file), where retrieval
failed across them, and each run opened in the explorer and debugger at its worst step.

Layout and handlers; the set file is read by logitspec.analysis.sets, the tables, figure and CSV
drawn by visual.workbench. `page` is the whole page (ui/page.py).
"""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import gradio as gr

from logitspec.analysis.lanes import label
from logitspec.analysis.sets import SetFile, read_set
from logitspec.core.limits import InputError, Limits
from serve.model_cache import allowed_models, model_label
from serve.own_model import model_note
from visual.verdict import counters_html, machine_words, recorded_note
from logitspec.analysis.sidebyside import side_by_side
from logitspec.analysis.set_tables import overall_rows, position_rows, prompt_rows, summary_csv
from visual.workbench import outcome_figure, side_by_side_figure

from .files import TRACES_DIR
from .set_run import SetRunPanel

SETS_DIR = TRACES_DIR / "sets"
INTRO = ("Many prompts at once: where retrieval fails across a set, and on which steps. Run a set here (a "
         "Spec-Bench category or your own questions, on the model above), pick a recorded set, or upload one made "
         "on any machine with\n\n"
         "`python -m logitspec workbench --questions coding --methods logitspec,pld --max-new 128 -o set.jsonl.gz`\n\n"
         "(`--questions` takes a Spec-Bench category, `all`, or your own JSONL of questions; "
         "`--methods logitspec,logitspec:pool=longest` runs one method under two settings, named in the tables by "
         "the setting that differs). "
         "Sort a table by a column's header; select a run's row to open it in the step explorer and the "
         "retrieval debugger at its worst step (the start of its longest run of failed steps).")


def shipped_sets() -> list[str]:
    return sorted(p.name for p in SETS_DIR.glob("*.jsonl*"))


def csv_button(name: str, text: str) -> gr.DownloadButton:
    """A download button serving `text` as a CSV file named `name`; hidden when there is nothing to serve."""
    if not text:
        return gr.DownloadButton(value=None, visible=False)
    # One folder per content: the same table gives the same file (and the same button) every time.
    folder = Path(tempfile.gettempdir()) / "logitspec-csv" / hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    return gr.DownloadButton(value=str(path), visible=True)


def worst_words(longest_failed: int, looks_up: bool = True) -> str:
    """What a row's opening step is: where its longest run of failed steps starts, or the first step
    when no step failed (never "0 failed steps in a row") or the run looks nothing up."""
    if not looks_up:
        return "it looks nothing up, so it opens at the first step"
    if longest_failed == 0:
        return "no step failed, so it opens at the first"
    if longest_failed == 1:
        return "1 failed step in a row starts there"
    return f"{longest_failed} failed steps in a row start there"


class WorkbenchTab:
    """The tab's components and handlers."""

    def __init__(self, page) -> None:
        self.page = page

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        self.set_state = gr.State(None)
        gr.Markdown(INTRO, elem_id="wb-intro")
        gr.Markdown(model_note(model_label(allowed_models()[0])), elem_id="wb-model")
        self.runner = SetRunPanel(self, self.page.services)
        self.runner.build()
        with gr.Row():
            self.shipped = gr.Dropdown(shipped_sets(), value=None, label="Recorded sets", elem_id="wb-shipped")
            self.upload = gr.File(label="Upload a set file (.jsonl or .jsonl.gz)", file_types=[".jsonl", ".gz"],
                                  type="filepath", elem_id="wb-upload")
        self.note = gr.Markdown("", elem_id="wb-note")
        self.overall = gr.Dataframe(label="Every prompt, per method", interactive=False, elem_id="wb-overall",
                                    visible=False)
        self.table = gr.Dataframe(label="Per prompt and method (select a row to open its run)", interactive=False,
                                  elem_id="wb-table", visible=False, max_height=520)
        self.csv = gr.DownloadButton("Download the failure summary (CSV)", visible=False, size="sm", elem_id="wb-csv")
        self.row_state = gr.State(None)  # the opened row: (prompt index, its run's label)
        self.compare_md = gr.Markdown("", elem_id="wb-compare-note")  # the opened prompt's two runs, side by side
        self.beside = gr.Dropdown([], value=None, label="Set beside it", visible=False, elem_id="wb-beside")
        self.compare = gr.Plot(show_label=False, label="Two runs side by side", elem_id="wb-compare", visible=False)
        self.plot = gr.Plot(show_label=False, label="Steps by retrieval outcome", elem_id="wb-plot", visible=False)
        self.positions = gr.Dataframe(label="Failed steps by output position", interactive=False,
                                      elem_id="wb-positions", visible=False)

    @property
    def set_outputs(self) -> list:
        return [self.set_state, self.note, self.overall, self.table, self.csv, self.plot, self.positions,
                self.compare_md, self.compare, self.beside]

    def wire(self, demo, view_kw: dict) -> None:
        page = self.page
        self.runner.wire(demo, page.race.model, view_kw)
        self.shipped.input(self.pick_shipped, [self.shipped], self.set_outputs, **view_kw)
        self.upload.upload(self.open_set, [self.upload], self.set_outputs, api_name="open_set", **view_kw)
        self.table.select(self.open_row, [self.set_state, page.debugger.outcome, page.state],
                          page.trace_components() + [page.tabs, page.files.download, self.compare_md, self.compare,
                                                     self.beside, self.row_state], **view_kw)
        self.beside.input(self.pick_beside, [self.set_state, self.row_state, self.beside],
                          [self.compare_md, self.compare, self.beside], **view_kw)

    def pick_shipped(self, name):
        if not name or name not in shipped_sets():
            return gr.skip()
        return self.open_set(str(SETS_DIR / name))

    def open_set(self, path):
        """The set's tables and figure; a refused file is said in one line and the tab stays as it was."""
        if not path:
            return gr.skip()
        p = Path(path if isinstance(path, str) else path.name)
        try:
            s = read_set(p, Limits.from_env().set_bytes)
        except InputError as e:
            return {self.note: f"**Not opened:** {p.name}: {e}"}
        return self.show_set(s)

    def show_set(self, s: SetFile) -> dict:
        """A set's tables and figure (an opened file, or one a set run is writing)."""
        p = s.path
        return {self.set_state: s, self.note: self.set_words(s, p.name), self.compare_md: "",
                self.compare: gr.Plot(visible=False), self.beside: gr.Dropdown([], value=None, visible=False),
                self.overall: gr.Dataframe(value=_frame(overall_rows(s)), visible=True),
                self.table: gr.Dataframe(value=_frame(prompt_rows(s)), visible=True),
                self.csv: csv_button(f"{p.name.split('.')[0]}-summary.csv", summary_csv(s)),
                self.plot: gr.Plot(value=outcome_figure(s), visible=True),
                self.positions: gr.Dataframe(value=_frame(position_rows(s)), visible=True)}

    @staticmethod
    def set_words(s: SetFile, name: str) -> str:
        """One line: what the set holds and where it ran."""
        h = s.header
        cut = " The last run was cut off while written and is left out." if s.cut_short else ""
        return (f"**{name}**: {_count(s.prompts, 'prompt')} × {_count(len(s.runs), 'run')} ({', '.join(s.names().values())}), "
                f"{h.get('model', 'model not named')}, {machine_words(str(h.get('machine', ''))) or 'machine not named'}."
                f"{cut}")

    def open_row(self, s: SetFile | None, outcomes, view, evt: gr.SelectData):
        """A run's row: its prompt's runs (every method) in the explorer, this method's lane, at its worst step."""
        row = getattr(evt, "row_value", None)
        if s is None or not row:
            return gr.skip()
        prompt, names = int(row[0]) - 1, s.names()
        # The table names a run as every view does; its label stays the set's own key.
        entry = next((e for e in s.entries if e.prompt == prompt and names[e.label] == str(row[3])), None)
        if entry is None:
            return gr.skip()
        method = entry.label
        from .view import View

        page = self.page
        try:
            lanes = s.lanes(prompt)
        except InputError as e:
            return {page.race.status_md: f"**Not opened:** run {prompt + 1} of the set: {e}"}
        view.replaced()
        new = View.of_lanes(lanes, f"{s.path.name} #{prompt + 1}")
        new.lane = method
        out = page.trace_outputs(new, outcomes)
        out[page.explorer.lane_pick] = gr.Radio(choices=[(run_words(n, t), n) for n, t in lanes.items()], value=method,
                                                visible=len(lanes) > 1)
        out.update(page.explorer.step_outputs(new, entry.summary.worst_step))
        out[page.race.status_md] = (f"**Exploring** prompt {prompt + 1} ({entry.category} {entry.question_id}) of "
                                    f"{s.path.name}, {names[method]}, at step {entry.summary.worst_step}: "
                                    f"{worst_words(entry.summary.longest_failed, entry.summary.looks_up)}.")
        machine = str(s.header.get("machine", ""))
        # The results above are this prompt's runs now, as a race file's are: never the last race's.
        out[page.race.counters] = counters_html(lanes, False, recorded_note(machine), recorded_on=machine)
        out.update(page.files.downloadable(None))
        out[page.tabs] = gr.Tabs(selected="explorer")
        out[self.row_state] = (prompt, method)
        out.update(self.compared(lanes, method, prompt))
        return out

    def pick_beside(self, s: SetFile | None, row, other: str | None):
        """Another run of the opened prompt, chosen to set beside the row's."""
        if s is None or not row or not other:
            return gr.skip()
        prompt, method = row
        try:
            lanes = s.lanes(prompt)
        except InputError as e:
            return {self.compare_md: f"**Not compared:** run {prompt + 1} of the set: {e}"}
        return self.compared(lanes, method, prompt, other)

    def compared(self, lanes: dict, method: str, prompt: int, other: str | None = None) -> dict:
        """The row's run beside `other` (by default the prompt's other run of its method, under another
        setting, else its next method), aligned by output position; hidden with one run. The choice of
        the other run is offered among the prompt's runs."""
        others = sorted((m for m in lanes if m != method), key=lambda m: lanes[m].method != lanes[method].method)
        if not others:
            return {self.compare_md: "", self.compare: gr.Plot(visible=False),
                    self.beside: gr.Dropdown([], value=None, visible=False)}
        other = other if other in others else others[0]
        sbs = side_by_side(method, lanes[method], other, lanes[other])
        return {self.compare_md: f"**Prompt {prompt + 1}, side by side:** {sbs.words()}",
                self.compare: gr.Plot(value=side_by_side_figure(sbs), visible=True),
                self.beside: gr.Dropdown([(run_words(n, lanes[n]), n) for n in others], value=other, visible=True)}


def run_words(name: str, trace) -> str:
    """A set run's name in the explorer: its lane's label, and the setting that differs where it ran twice."""
    rest = name[len(trace.method):] if name.startswith(trace.method + " ") else ""
    return label(trace.method, trace) + rest


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _frame(rows: list[dict]):
    """Rows as a pandas frame (numbers stay numbers, so a column sorts by value)."""
    import pandas as pd

    return pd.DataFrame(rows)
