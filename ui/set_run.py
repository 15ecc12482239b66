"""The Workbench's own set run: a Spec-Bench category (or an uploaded JSONL of questions) decoded under
the chosen runs on the page's model, prompt by prompt, into the same set file the command line writes.

The decoding is logitspec.workbench's `decode_set`, the command line's own. A set run takes the
race's queue ("model", one at a time), so a set and a race never decode at once; Stop (or leaving
the page) ends it before its next step, and the prompts finished before it stay in the file and the
tables. `tab` is the WorkbenchTab (ui/workbench.py), whose tables show the file.
"""
from __future__ import annotations

import html
import time
from pathlib import Path

import gradio as gr

from logitspec.analysis.lanes import label as lane_label
from logitspec.analysis.lanes import methods as lane_methods
from logitspec.analysis.sets import SetFile, SetWriter, run_name
from logitspec.core.errors import DecodeError, ModelLoadError
from logitspec.core.limits import InputError, Limits, check_prompt, size_words
from logitspec.core.settings import DecodeSettings
from logitspec.workbench import SetStopped, categories, decode_set, pick_questions, set_header, set_runs
from serve.model_cache import check_model_choice
from serve.zerogpu import on_zerogpu

UPLOADED = "upload"  # the questions choice that takes the uploaded JSONL
DEFAULT_MAX_NEW = 64
PROMPT_CHARS = 90  # how much of the prompt under way the progress line repeats
KEY_SUFFIX = "/set"  # a page's set run has a stop flag of its own, apart from its race's
AGAIN_HINT = "pool=longest · ngram=2-4 · k=16 · tree=static"


def stop_key(request: gr.Request | None) -> str:
    return (request.session_hash if request is not None else "anonymous") + KEY_SUFFIX


def progress_html(done: int, total: int, words: str) -> str:
    """A progress bar of the prompts finished and one line on the one under way."""
    return (f"<div class='wb-progress'><progress value='{done}' max='{total}'></progress> "
            f"<span>{words}</span></div>")


class SetRunPanel:
    """The set run's form, its progress and the set file it wrote."""

    def __init__(self, tab, services) -> None:
        self.tab = tab
        self.services = services

    def build(self) -> None:
        lim, cats = Limits.from_env(), categories()
        with gr.Group(elem_id="wb-run-form"):
            with gr.Row():
                self.questions = gr.Dropdown(
                    [(f"Spec-Bench: {c}", c) for c in cats] + [("Spec-Bench: all 13 categories", "all"),
                                                              ("My questions (upload a JSONL)", UPLOADED)],
                    value=cats[0], label="Questions", elem_id="wb-questions")
                self.jsonl = gr.File(label="Your questions: JSONL, one {question_id, category, turns} a line",
                                     file_types=[".jsonl"], type="filepath", elem_id="wb-jsonl")
            with gr.Row():
                self.methods = gr.CheckboxGroup([(lane_label(m), m) for m in lane_methods()], value=["logitspec", "pld"],
                                                label="Methods", elem_id="wb-methods")
                self.again = gr.Textbox(label="…and the first method again with (optional)", placeholder=AGAIN_HINT,
                                        elem_id="wb-again")
                self.max_new = gr.Number(DEFAULT_MAX_NEW, label="Max new tokens", precision=0, minimum=1,
                                         maximum=lim.max_new_tokens, elem_id="wb-max-new")
            with gr.Row():
                self.run_btn = gr.Button("▶ Run the set", variant="primary", elem_id="wb-run")
                self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="wb-stop")
        self.progress = gr.HTML("", elem_id="wb-progress")
        self.download = gr.DownloadButton("Download the set file", visible=False, size="sm", elem_id="wb-set-download")

    def wire(self, demo, model, view_kw: dict) -> None:
        """Run (queued with the race), Stop and leaving the page; `model` is the race's model menu."""
        self.jsonl.upload(lambda _: UPLOADED, [self.jsonl], [self.questions], **view_kw)
        inputs = [self.questions, self.jsonl, self.methods, self.again, self.max_new, model]
        self.run_btn.click(self.arm, None, [self.progress], queue=False).then(
            self.run, inputs, self.tab.set_outputs + [self.progress, self.download], api_name="run_set",
            concurrency_limit=1, concurrency_id="model", show_progress="hidden", trigger_mode="always_last")
        self.stop_btn.click(self.stop, None, [self.progress], queue=False, api_name="stop_set")
        demo.unload(self.on_leave)

    def on_leave(self, request: gr.Request) -> None:
        """A closed page stops its set run, so none is left decoding."""
        self.services.stops.stop(stop_key(request))

    def arm(self, request: gr.Request):
        """Run was clicked: this page's set-run flag armed at once (a Stop while queued counts)."""
        stops = self.services.stops
        stops.start(stop_key(request))
        if stops.running():
            return progress_html(0, 1, "<b>Waiting for your turn:</b> a race or set run is decoding on this "
                                       "machine; yours starts when it ends.")
        return progress_html(0, 1, "<b>Starting…</b>")

    def stop(self, request: gr.Request):
        if self.services.stops.stop(stop_key(request)):
            return progress_html(0, 1, "<b>Stopping</b> after the current step: the prompts finished stay.")
        return gr.skip()

    def run(self, source, jsonl, methods, again, max_new, model, request: gr.Request):
        """Decode the set, the progress and tables as each prompt finishes; the set file at the end."""
        key = stop_key(request)
        stop = self.services.stops.claim(key)
        try:
            yield from self._run(stop, source, jsonl, methods, again, max_new, model)
        finally:
            self.services.stops.finish(key, stop)

    def _checked(self, source, jsonl, methods, again, max_new, model):
        """(questions, prompts, runs, model name, source words), or InputError saying in one line why not."""
        if on_zerogpu():
            raise InputError("a set runs from the command line here: python -m logitspec workbench "
                             "--questions coding -o set.jsonl.gz, then upload the file below")
        spec = ",".join(methods or [])
        if (again or "").strip():
            if not methods:
                raise InputError("choose a method to run again with other settings")
            spec += f",{methods[0]}:" + ":".join(p.strip() for p in again.replace("·", " ").replace(",", " ").split() if p.strip())
        runs = set_runs(spec, {"max_new_tokens": max_new})
        if source == UPLOADED:
            if not jsonl:
                raise InputError("upload a JSONL of questions, or pick a Spec-Bench category")
            where = str(jsonl if isinstance(jsonl, str) else jsonl.name)
            questions, words = pick_questions(where, None), Path(where).name
        else:
            questions, words = pick_questions(str(source or ""), None), f"Spec-Bench subset: {source}"
        prompts = [check_prompt(q["turns"][0]) for q in questions]
        return questions, prompts, runs, check_model_choice(model), words

    def _run(self, stop, *form):
        try:
            questions, prompts, runs, name, words = self._checked(*form)
        except InputError as e:
            yield {self.progress: progress_html(0, 1, f"<b>Not started:</b> {html.escape(str(e))}")}
            return
        models = self.services.models
        if models.loaded(name) is None:
            yield {self.progress: progress_html(0, len(prompts), "<b>Loading the model…</b> the set starts once it is ready.")}
        try:
            lm = models.get(name)
        except ModelLoadError as e:
            yield {self.progress: progress_html(0, 1, f"<b>Not started:</b> {html.escape(str(e))}")}
            return
        yield from self._decode(stop, lm, questions, prompts, runs, words)

    def _decode(self, stop, lm, questions, prompts, runs, words):
        """The set decoded into a file of this page's own; the tables follow each finished prompt."""

        folder = self.services.downloads / "sets"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"set-{time.strftime('%Y%m%d-%H%M%S')}-{id(stop) % 10_000:04d}.jsonl.gz"
        deadline = [0.0]  # each prompt's runs have a race's time limit
        reason, done, total = None, 0, len(prompts)
        names = {r.label: run_name(r.label, r.method, r.settings.to_dict()) for r in runs}

        def should_stop() -> bool:
            return stop.is_set() or time.monotonic() > deadline[0]
        with SetWriter(path, set_header(lm, words, runs)) as writer:
            try:
                for p in decode_set(lm, questions, prompts, runs, writer, should_stop, self.services.models.thread.iterate):
                    if p.written:
                        done = p.prompt + 1
                        yield {**self.tab.show_set(writer.set), self.progress: progress_html(done, total, self._words(p, done, names))}
                    else:
                        if p.run == runs[0].label:  # a prompt starts
                            deadline[0] = time.monotonic() + Limits.from_env().run_seconds
                        yield {self.progress: progress_html(done, total, self._words(p, done, names))}
            except SetStopped:
                reason = "stopped" if stop.is_set() else "time limit"
            except DecodeError as e:
                reason = f"failed: {e}"
        yield self._final(writer.set, done, total, reason)

    @staticmethod
    def _words(p, done: int, names: dict[str, str]) -> str:
        q = p.question
        head = f"Prompt {p.prompt + 1} of {p.total} ({html.escape(str(q.get('category', '')))} " \
               f"{html.escape(str(q.get('question_id', '')))})"
        if p.written:
            return f"{done} of {p.total} prompts done; {head} written."
        text = " ".join(p.prompt_text.split())
        start = text[:PROMPT_CHARS] + ("…" if len(text) > PROMPT_CHARS else "")
        return f"{done} of {p.total} prompts done. {head}, {html.escape(names.get(p.run, p.run))}: “{html.escape(start)}”"

    def _final(self, written: SetFile, done: int, total: int, reason: str | None) -> dict:
        """The set's end: its tables (the finished prompts), what happened, and the set file to download."""
        path = written.path
        if done == 0:
            path.unlink(missing_ok=True)
            why = "stopped" if reason == "stopped" else (reason or "ended")
            return {self.progress: progress_html(0, total, f"<b>{why.capitalize()}</b> before any prompt "
                                                           "finished; nothing was written."),
                    self.download: gr.DownloadButton(visible=False)}
        out = self.tab.show_set(written)
        if reason is None:
            words = f"<b>Done:</b> all {total} prompts."
        elif reason == "stopped" or reason == "time limit":
            what = "stopped" if reason == "stopped" else f"stopped at the time limit of {Limits.from_env().run_seconds:.0f} s a prompt"
            words = (f"<b>Stopped:</b> the run was {what} after {done} of {total} prompts; the tables and the "
                     "file hold those.")
        else:
            words = f"<b>{html.escape(reason.capitalize())}</b> after {done} of {total} prompts; the tables and the file hold those."
        out[self.progress] = progress_html(done, total, words)
        out[self.download] = gr.DownloadButton(f"Download the set file ({size_words(path.stat().st_size)}; it opens "
                                               "back here)",
                                               value=str(path), visible=True)
        if reason is not None:
            out[self.tab.note] = out[self.tab.note] + f" Stopped after {done} of {total} prompts."
        return out
