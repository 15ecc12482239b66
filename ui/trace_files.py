"""The Traces tab and every way a file comes on screen: the download of a run, the shipped
traces, an upload, the recorded runs' cached examples, and the first view a link names.

Layout and handlers; what a trace fills, the page decides (`page.trace_outputs`).
"""
from __future__ import annotations

import html
from pathlib import Path

import gradio as gr

from logitspec.core.limits import InputError
from logitspec.analysis.lanes import label
from logitspec.analysis.gallery import showcase
from logitspec.analysis.race import read_race
from visual.counts import run_counts, run_words
from visual.verdict import counters_html, machine_words, recorded_note

from . import links
from .debugger import OUTCOMES
from .downloads import download_button, download_of
from .files import (GALLERY_DIR, RECORDED_RACE, TRACES_DIR, gallery_names, read_lanes, recorded_examples,
                    recorded_race, shipped_names, shipped_traces)
from .services import Services
from .view import View


def gallery() -> list[tuple[str, str, str]]:
    """(file name, title, why) of each gallery race: its winner and the sentence read off its traces."""
    out = []
    for name in gallery_names():
        race = read_race(GALLERY_DIR / name)
        shown = showcase(race.lanes, machine_words(race.machine))
        who = ("no method beats vanilla here" if shown.kind == "none" else
               f"{label(shown.winner, race.lanes[shown.winner])} makes the most tokens a pass")
        out.append((name, f"{name.split('.')[0]}: {who}", shown.sentence))
    return out


def gallery_html(shown: list[tuple[str, str, str]]) -> str:
    """Each gallery race's title and why, in the menu's order."""
    rows = "".join(f"<li><b>{html.escape(title)}</b>: {html.escape(why)}</li>" for _, title, why in shown)
    return f"<ul class='gallery-why'>{rows}</ul>" if rows else ""


class TraceFilesTab:
    """The tab's components and the handlers that open files. `page` is the whole page (ui/page.py)."""

    def __init__(self, services: Services, page) -> None:
        self.services = services
        self.page = page

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        gr.Markdown("Download your race (every lane's trace, where it ran and whether it was stopped, in one "
                    "file), open one of the traces recorded on the bundled model, or upload a trace or race file "
                    "(no model needed).")
        self.download = gr.DownloadButton("Download this race (JSON)", visible=False, elem_id="download")
        self.shipped = gr.Dropdown(shipped_names(), label="Shipped traces", value=None, elem_id="shipped")
        shown = gallery()
        with gr.Column(elem_id="gallery"):
            self.gallery = gr.Radio([(title, name) for name, title, _ in shown], value=None, elem_id="gallery-pick",
                                    label="Where each method wins: races recorded on the bundled model")
            gr.HTML(gallery_html(shown), elem_id="gallery-words")
        self.upload = gr.File(label="Upload a trace or a recorded race (.json)", file_types=[".json"],
                              type="filepath", elem_id="upload")
        self.upload_note = gr.Markdown("", elem_id="upload-note")  # why an upload was refused

    def wire(self, view_kw: dict) -> None:
        page = self.page
        outcome, trace_out = page.debugger.outcome, page.trace_components()
        self.shipped.input(self.pick_shipped, [self.shipped, outcome, page.state],
                           trace_out + [self.upload_note, self.download], **view_kw)
        self.gallery.input(self.pick_gallery, [self.gallery, outcome, page.state],
                           trace_out + [self.upload_note, self.shipped, self.download], **view_kw)
        self.upload.upload(self.upload_trace, [self.upload, outcome, page.state],
                           trace_out + [self.upload_note, self.upload, self.shipped, self.download],
                           api_name="open_trace", **view_kw)

    def wire_recorded(self, view_kw: dict) -> None:
        """Runs recorded on the bundled model, drawn once at start-up and served from Gradio's
        example cache: a click shows a whole run at once, no model needed."""
        recorded = recorded_examples()
        if not recorded:
            return
        page = self.page
        with page.race.recorded_box:
            rec = gr.Examples(
                examples=[[p, name] for _, p, name in recorded], inputs=[page.race.prompt, self.shipped],
                outputs=[c for c in page.trace_components() if c is not page.state], fn=self.open_recorded,
                example_labels=[label for label, _, _ in recorded], cache_examples=True,
                cache_mode="eager", preload=False, label="Recorded runs (open at once, no model needed)",
                api_name="recorded", elem_id="recorded")
        rec.cache_event.then(self.adopt_recorded, [self.shipped, page.state], [page.state, page.race.status_md],
                             **view_kw)

    def downloadable(self, path: str | None) -> dict:
        """The download button with a race's file, or hidden."""
        button = download_button(path) if path is not None else gr.DownloadButton(value=None, visible=False)
        return {self.download: button}

    # ------------------------------------------------------------ opening files

    def open_trace(self, path, outcomes, view: View):
        """Explore a trace or race file (shipped or uploaded). A bad file leaves every panel as it was
        and says why in the status line; no error badge, since nothing shown is wrong."""
        if not path:
            return gr.skip()
        p = Path(path if isinstance(path, str) else path.name)
        race = self.page.race
        try:
            got = read_lanes(p, self.services.models)
        except InputError as e:
            return {race.status_md: f"**Not opened:** {p.name}: {e}"}
        view.replaced()
        lanes = got.lanes
        new = View.of_lanes(lanes, p.name, got.stop_reason)
        out = self.page.trace_outputs(new, outcomes)
        t = new.trace
        raced = f"a race of {' / '.join(label(n, t) for n, t in lanes.items())}; " if len(lanes) > 1 else ""  # a label may hold a comma
        out[race.status_md] = f"**Exploring** {p.name}: {raced}{run_words(run_counts(t))} ({t.model})"
        out[race.counters] = counters_html(lanes, False, recorded_note(got.machine), stop_reason=got.stop_reason,
                                           recorded_on=got.machine or "")
        out[self.download] = download_of(p)  # the download serves the file on screen, every lane of it
        return out

    def upload_trace(self, path, outcomes, view: View):
        """An uploaded file, explored like a shipped one. A refused file is named beside the upload box
        as well as in the status line, and the box is emptied; the view stays. Either way the shipped
        menu no longer names a file, since it is not what is shown."""
        out = self.open_trace(path, outcomes, view)
        if not isinstance(out, dict):
            return out
        refused = self.page.state not in out
        out.update({self.upload_note: out[self.page.race.status_md] if refused else "", self.shipped: None})
        if refused:
            out[self.upload] = None
        return out

    def pick_shipped(self, name, outcomes, view: View):
        """A shipped file picked from the menu; a note left by a refused upload goes."""
        out = self.open_shipped(name, outcomes, view)
        if isinstance(out, dict) and self.page.state in out:
            out[self.upload_note] = ""
        return out

    def pick_gallery(self, name, outcomes, view: View):
        """A gallery race, opened as a shipped race file; the shipped menu and an upload's note go."""
        if not name or name not in gallery_names():
            return gr.skip()
        out = self.open_trace(str(GALLERY_DIR / name), outcomes, view)
        if isinstance(out, dict) and self.page.state in out:
            out.update({self.upload_note: "", self.shipped: None})
        return out

    def open_shipped(self, name, outcomes, view: View):
        if not name or name not in shipped_names():
            return gr.skip()
        return self.open_trace(str(TRACES_DIR / name), outcomes, view)

    def open_recorded(self, prompt, name):
        """A recorded run's pictures, for the cached examples (which cannot carry session state)."""
        out = self.open_shipped(name, OUTCOMES, View())
        if not isinstance(out, dict):
            return out
        out.pop(self.page.state, None)
        out.pop(self.download, None)  # an example's cache holds pictures, not a session's download
        return out

    def adopt_recorded(self, name, view: View):
        """After a cached example has shown its pictures, explore the same trace in this session."""
        if not name or name not in shipped_names():
            return gr.skip()
        try:
            got = read_lanes(TRACES_DIR / name, self.services.models)
        except InputError as e:
            return {self.page.race.status_md: f"**Not opened:** {name}: {e}"}
        view.replaced()
        return {self.page.state: View.of_lanes(got.lanes, name, got.stop_reason)}

    # ------------------------------------------------------------ the first view

    def initial_view(self, outcomes, request: gr.Request = None):
        """What a new visitor sees at once: the shipped run a link names (?trace=NAME&step=N&tab=TAB),
        else a recorded race of both lanes, else the first shipped trace."""
        link = links.parse_link(links.request_params(request), shipped_names())
        if link.trace:
            out = self.open_shipped(link.trace, outcomes, View())
            out[self.shipped] = link.trace
        else:
            out = self._first_view(outcomes)
        return self._follow_link(link, out)

    def _follow_link(self, link: links.Link, out: dict) -> dict:
        """The step and tab a link names; what was wrong with it, in one line before the status."""
        page = self.page
        view = out.get(page.state)
        if isinstance(view, View) and view.trace is not None:
            step = links.check_step(link, len(view.trace.steps))
            if step is not None:
                out.update(page.explorer.step_outputs(view, step))
        if link.tab:
            out[page.tabs] = gr.Tabs(selected=link.tab)
        if link.tab == "explain":
            out[page.explain.picked] = page.explain.linked(view, link.step)
        if link.problems:
            out[page.race.status_md] = f"**This link:** {link.message}. " + out.get(page.race.status_md, "")
        return out

    def _first_view(self, outcomes) -> dict:
        """A recorded race of both lanes, else the first shipped trace."""
        race = self.page.race
        recorded = recorded_race()
        if recorded is not None:
            traces, machine = dict(recorded[0]), recorded[1]  # the view's own lanes; the runs are shared
            view = View(traces=traces, lane="logitspec", source=RECORDED_RACE.name)
            out = self.page.trace_outputs(view, outcomes)
            out[race.counters] = counters_html(traces, False, recorded_note(machine), recorded_on=machine or "")
            out[race.status_md] = (f"**Recorded race** (not live): {len(traces['logitspec'].tokens)} tokens on "
                                   f"{machine_words(machine)}. Press ▶ Run the race to race on this machine.")
            out[self.download] = download_of(RECORDED_RACE)
            return out
        files = shipped_traces()
        if not files:
            return {}
        out = self.open_trace(str(files[0]), outcomes, View())
        out[self.shipped] = files[0].name
        return out
