"""The Explain tab: one step of the visitor's own last run (else a recorded one), panel by panel.

Layout and wiring only: the step is chosen by visual.explain_words and every panel drawn by visual.explain.
"""
from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from logitspec.core.trace import RunTrace
from visual.counts import run_counts, run_words
from visual.explain import Panel, walkthrough
from visual.explain_words import TITLES, choose_step
from visual.style import sub_x

from .drawings import Drawings, trace_key
from .figures import FigureSlot, figure_slot
from .held import HeldFns, HeldSteps
from .keys import presses
from .lesson import LessonView
from .links import parse_link, request_params

CHOSEN = "the step you chose"  # why a step moved to, typed or linked is explained
LINKED = "the step the link named"

INTRO_MD = """
**Speculative decoding**, in one line: guess several tokens ahead, check all the guesses in one
pass of the model, and keep the ones the model agrees with, so the text comes out exactly as
without guessing, only sooner. **Lesson** walks through it on a real step of a run; **In
detail** takes any step apart in six panels.
"""

DETAIL_MD = """
LogitSpec is a *lossless* speculative decoder: its output is exactly plain decoding's, only
faster when its guesses are right. Each **step** is one forward pass. Below, one step of a run
is taken apart in six panels, every number and sentence read off that step's trace. ← / →
move between steps when this tab is shown.
"""

PAGE_MD = """
#### The rest of the page
**The race** runs plain decoding and LogitSpec (optionally prompt lookup, PLD) one step each in
turn; each lane's clock counts only its own measured compute. The **text** is coloured by how
many tokens the step that produced it committed: click a block to open that step in the **Step
explorer**, where ← / → (or PageDown / PageUp, or space) step and p plays. The **Retrieval
debugger** lists the steps by retrieval outcome (g1 matched, g2 rescued a failed g1, both failed).

#### Sampling
At a **temperature** above 0 every lane samples instead of taking the argmax, and LogitSpec
still equals plain sampling token for token. The randomness at each position j of the text is
fixed in advance by the **seed** and j alone (Gumbel noise G_j), and the token there is the
argmax of the logits / temperature plus G_j, after **top-p** (and top-k) cut the unlikely
tokens. Drafting changes neither the logits at j nor G_j, so the tree walk takes exactly the
token plain sampling would take; a higher temperature accepts fewer drafts.
"""


@dataclass
class Pick:
    """The step shown, for which run, and why."""

    run: tuple  # identifies the run it belongs to
    step: int
    why: str
    lesson_run: tuple | None = None  # the run the lesson was last drawn for
    held_at: int | None = None  # the step whose neighbours the page holds (ui/held.py)


def panel_words(panel: Panel) -> str:
    """A panel's two sentences as HTML that wraps at any width."""
    said = "".join(f"<p>{sub_x(html.escape(x, quote=False))}</p>" for x in panel.sentences)
    return f'<div id="explain-{panel.key}-text" class="fig-caption explain-words">{said}</div>'


def run_key(trace: RunTrace, source: str) -> tuple:
    return (source, trace.method, trace.prompt_text, len(trace.steps))


class ExplainTab:
    """The tab's components and handlers. `recorded` gives the recorded race's LogitSpec trace
    and its file name, for a visitor with nothing of their own to explain."""

    def __init__(self, recorded: Callable[[], tuple[RunTrace | None, str]], drawings: Drawings | None = None) -> None:
        self.recorded = recorded
        self.drawings = drawings or Drawings()

    def build(self) -> None:
        """The tab's contents; call inside its gr.Tab."""
        gr.Markdown(INTRO_MD)
        self.lesson = LessonView()
        with gr.Tabs(elem_id="explain-levels", selected="lesson") as self.levels:
            with gr.Tab("Lesson", id="lesson", elem_id="explain-lesson"):
                self.lesson.build()
            with gr.Tab("In detail", id="detail", elem_id="explain-detail"):
                self._build_detail()
        self.picked = gr.State(None)

    def _build_detail(self) -> None:
        """The six panels of one step, with the step's controls."""
        gr.Markdown(DETAIL_MD)
        self.head = gr.Markdown(elem_id="explain-head")
        with gr.Row():
            self.prev = gr.Button("◀ Previous step", elem_id="explain-prev", scale=0, min_width=150)
            self.step = gr.Number(label="Step", precision=0, elem_id="explain-step", scale=1, min_width=120)
            self.next = gr.Button("Next step ▶", elem_id="explain-next", scale=0, min_width=150)
            self.moves = gr.Number(0, visible=False)  # presses counted on the page (ui/keys.py)
            self.auto = gr.Button("Pick a step for me", elem_id="explain-auto", scale=0, min_width=170)
        self.slots: dict[str, FigureSlot] = {}
        keys = list(TITLES)
        for row in range(0, len(keys), 2):
            with gr.Row(equal_height=False):
                for key in keys[row:row + 2]:
                    self.slots[key] = figure_slot(f"explain-{key}-plot", TITLES[key], live=True, min_width=320)
        gr.Markdown(PAGE_MD)
        shown = [self.head, *(c for slot in self.slots.values() for c in slot.outputs)]
        self.held = HeldSteps("explain", self.step, shown)  # Previous/Next at a slide's pace

    @property
    def outputs(self) -> list:
        return [self.head, self.step, *(c for slot in self.slots.values() for c in slot.outputs), self.picked,
                *self.lesson.outputs, self.levels, self.held.store]

    def wire(self, tab: gr.Tab, state: gr.State, kw: dict, step_kw: dict) -> None:
        """Draw on opening the tab, on the step box (typing or Enter), the buttons and Pick; the
        moves between steps with `step_kw` (one at a time, so replies come back in order)."""
        ins = [state, self.picked]
        self.held.drawn(tab.select, self.reopen, ins, self.outputs, step_kw)
        self.step.input(self.show_step, ins + [self.step], self.outputs, trigger_mode="always_last", **step_kw)
        fns = HeldFns(self.sync, [self.picked], self.move, self.hold)
        self.held.wire(self.prev, self.next, self.moves, fns, ins, self.outputs, step_kw, kw)
        self.held.drawn(self.auto.click, lambda v, p: self.show(v, None), ins, self.outputs, step_kw)

    # ------------------------------------------------------------ what to explain

    def run_of(self, view) -> tuple[RunTrace | None, str, str]:
        """(trace, source, words for the heading): the view's LogitSpec lane, else the recorded race."""
        name = getattr(view, "source", "") or ""
        traces = getattr(view, "traces", None) or {}
        t = traces.get("logitspec") or next((x for x in traces.values() if x.method == "logitspec"), None)
        rec, rec_name = self.recorded()
        if t is not None and t.steps:
            if t is rec:  # the recorded race itself, not a shipped trace that shares its file's name
                return t, name, (f"the recorded race `{rec_name}`: you have not run one yet (press ▶ Run the race, "
                                 "then come back here to see your own)")
            if name.endswith(".json"):
                return t, name, f"the trace you opened, `{name}`"
            return t, name, f"your last run ({run_words(run_counts(t))}, {name})"
        if traces:
            other = next(iter(traces.values())).method
            why = f"the trace you opened was decoded by {other}, which drafts no next-next guesses"
        else:
            why = "there is no run to explain yet"
        return rec, rec_name, f"the recorded race `{rec_name}` ({why})"

    def show(self, view, picked: Pick | None, step: int | None = None, why: str | None = None) -> dict:
        """Every output for the run the view holds, at `step` (else the step picked before for this
        run, else the chooser's)."""
        trace, source, words = self.run_of(view)
        if trace is None or not trace.steps:
            return {self.head: "Nothing to explain yet: run the race first.", self.picked: None,
                    self.lesson.intro: "Nothing to explain yet: run the race first."}
        key = run_key(trace, source)
        note = ""
        if step is not None:
            if not 0 <= step < len(trace.steps):
                note = f" (there is no step {step}: steps run 0–{len(trace.steps) - 1})"
                step = min(max(step, 0), len(trace.steps) - 1)
            pick = Pick(key, step, why or CHOSEN)
        elif picked is not None and picked.run == key:
            pick = picked
        else:
            choice = choose_step(trace)
            pick = Pick(key, choice.step, choice.rule)
        drawn = picked.lesson_run if picked is not None else None
        pick.lesson_run = key
        out = self._draw(trace, words, pick, note)
        if drawn != key:
            # The lesson follows the run, not the step; a run that never kept a g2 guess is taught on the recorded one.
            linked = pick.step if pick.why == LINKED else None
            out.update(self.lesson.fill(trace, words, self.recorded()[0], linked, getattr(view, "traces", None)))
        return out

    def _draw(self, trace: RunTrace, words: str, pick: Pick, note: str) -> dict:
        out = {self.head: (f"**Explaining** {words}. **Step {pick.step}** of 0–{len(trace.steps) - 1}: "
                           f"{sub_x(pick.why)}{note}."),
               self.step: pick.step, self.picked: pick, self.held.store: self.held.ask()}
        for panel in self._panels(trace, pick.step):
            slot = self.slots[panel.key]
            out.update(slot.fill(panel.figure))
            out[slot.caption] += panel_words(panel)  # the title, then the sentences, then the figure
        return out

    def _panels(self, trace: RunTrace, step: int) -> list:
        """The step's six panels, drawn once (the neighbouring steps drawn ahead for the next move,
        after this one, so they never compete with it)."""
        key = trace_key(trace)
        panels = self.drawings.get(("explain", key, step), functools.partial(walkthrough, trace, step))
        for j in (step + 1, step - 1):
            if 0 <= j < len(trace.steps):
                self.drawings.ahead(("explain", key, j), functools.partial(walkthrough, trace, j))
        return panels

    def reopen(self, view, picked: Pick | None):
        """The tab shown again: drawn only for a run it has not drawn. Otherwise the page still shows
        the pick, or a step moved to since, which a redraw of the pick would take it back from."""
        trace, source, _ = self.run_of(view)
        if picked is not None and trace is not None and picked.run == picked.lesson_run == run_key(trace, source):
            return gr.skip()
        return self.show(view, picked)

    def show_step(self, view, picked: Pick | None, step):
        if step is None:
            return gr.skip()
        return self.show(view, picked, int(step))

    def move(self, view, picked: Pick | None, at, by):
        """Previous/Next to a step the page did not hold: `by` steps (the presses the page counted
        since its last move) from step `at`, the one it shows, kept within the run."""
        by = presses(by)
        if picked is None:
            return self.show(view, picked)
        trace, _, _ = self.run_of(view)
        if trace is None or by == 0:
            return gr.skip()
        base = int(at) if isinstance(at, (int, float)) and math.isfinite(at) else picked.step
        step = max(0, min(base + by, len(trace.steps) - 1))
        return gr.skip() if step == base == picked.step else self.show(view, picked, step)

    def sync(self, view, picked: Pick | None, step):
        """Previous/Next to a step the page held and showed: the pick takes it up."""
        trace, _, _ = self.run_of(view)
        if picked is None or trace is None or not isinstance(step, (int, float)):
            return gr.skip()
        if int(step) == picked.step or not 0 <= int(step) < len(trace.steps):
            return gr.skip()
        return {self.picked: Pick(picked.run, int(step), CHOSEN, picked.lesson_run)}

    def hold(self, view, picked: Pick | None):
        """The detail's steps around the one picked, for Previous/Next to show on the page
        (ui/held.py); nothing when the page has them already."""
        trace, source, words = self.run_of(view)
        if picked is None or picked.held_at == picked.step or trace is None or run_key(trace, source) != picked.run:
            return gr.skip()
        picked.held_at = picked.step
        return self.held.pack(picked.step, len(trace.steps) - 1,
                              lambda j: self._draw(trace, words, Pick(picked.run, j, CHOSEN), ""))

    def linked(self, view, step: int | None) -> Pick | None:
        """The pick a link makes: its step of the run the view holds (None: the chooser picks)."""
        trace, source, _ = self.run_of(view)
        if step is None or trace is None or not 0 <= step < len(trace.steps):
            return None
        return Pick(run_key(trace, source), step, LINKED)

    def on_link(self, view, picked: Pick | None, request: gr.Request):
        """After the first view: fill the tab when the page's link opened it (at the pick the
        link made, which also holds when opening the tab draws it first). The lesson shows first
        (the page opens on it), a named step waiting in "In detail": a link on a slide opens the
        words a class can read. The reply leaves the tabs alone, so a visitor who picked "In
        detail" before it came stays there."""
        link = parse_link(request_params(request), [])
        if link.tab != "explain":
            return gr.skip()
        return self.show(view, picked)
