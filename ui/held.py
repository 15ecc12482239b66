"""Steps the page holds: Previous/Next show a neighbouring step from the page at once.

A move that waits on the server (its queue, the step's drawing, Gradio's update of every output)
takes over half a second on a busy machine; a presenter's clicker wants a slide's pace. So after
each move the server sends the steps around the one shown, each as the page receives it, into a
hidden store that keeps them in the page's script (not in an input, which Gradio would copy on
every event); a press shows one of them at once (`SHOW_JS`), and the server then only hears
which step the page shows. A press past the steps held goes to the server as before.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from .keys import take_moves

AROUND = 2  # steps held on each side of the one shown: quick presses stay on the page

# The store's script: its value, parsed, is the group's held steps (a request holds none).
STORE_JS = """
window.__logitspecHeld = window.__logitspecHeld || {};
const keep = () => { window.__logitspecHeld['%s'] = props.value ? JSON.parse(props.value) : null; };
keep();
watch("value", keep);
"""

# The presses counted for the group since its last move (ui/keys.py), from the step the position
# box shows, to a step held: its values are shown at once, the presses spent, and once the step is
# painted the hidden sync button tells the server (any server event makes Gradio go over every
# component's state, a good part of a move's time, so not before the paint). Without one, nothing
# changes here (Gradio's skip) and the hidden fetch button takes the presses to the server; while
# a step the server draws is on its way, the presses wait for it (FETCHED_JS sends them after).
SHOW_JS = """
(at) => {
  const m = window.__logitspecMoves || {};
  const fetching = window.__logitspecFetching = window.__logitspecFetching || {};
  const by = m['%(group)s'] || 0;
  const held = (window.__logitspecHeld || {})['%(group)s'];
  const to = held && held.steps ? Math.max(0, Math.min(held.last, (Number(at) || 0) + by)) : null;
  const values = by && to !== null && !fetching['%(group)s'] && held.steps[String(to)];
  if (!values) {
    if (by && !fetching['%(group)s']) {
      fetching['%(group)s'] = 1;  // until its reply: the steps held are about to be another step's
      document.getElementById('%(group)s-fetch')?.click();
    }
    return Array(%(n)d).fill({__type__: 'update'});
  }
  m['%(group)s'] = 0;
  requestAnimationFrame(() => setTimeout(() => document.getElementById('%(group)s-sync')?.click(), 0));
  return [to, ...values];
}
"""
# A step the server draws (a move, a tab opened, a run ended): counted from its sending to its reply.
# Presses made meanwhile wait, counted, and go to the server once the last reply has landed, from
# the step it painted: sent at once, the server could draw them first and the late reply paint over
# the step they asked for (the page keeps the step asked for last).
DRAWING_JS = """(...args) => { const f = window.__logitspecFetching = window.__logitspecFetching || {};
  f['%(group)s'] = (f['%(group)s'] || 0) + 1; return args; }"""
FETCHED_JS = """() => { const f = window.__logitspecFetching || {};
  f['%(group)s'] = Math.max(0, (f['%(group)s'] || 0) - 1);
  if (!f['%(group)s'] && (window.__logitspecMoves || {})['%(group)s']) {
    f['%(group)s'] = 1;
    requestAnimationFrame(() => document.getElementById('%(group)s-fetch')?.click());
  } }"""


class HeldSteps:
    """The hidden store of one tab's held steps. `group`: the tab's press count (ui/keys.py);
    `position`: the box showing the step; `shown`: what differs from step to step, in order."""

    def __init__(self, group: str, position: gr.components.Component, shown: list) -> None:
        self.group, self.position, self.shown = group, position, shown
        self.store = gr.HTML(None, html_template="<div></div>", js_on_load=STORE_JS % group, container=False,
                             apply_default_css=False, elem_id=f"{group}-held", elem_classes=["held-steps"])
        # Pressed by the page after it showed a held step, and for a move to a step it does not
        # hold (hidden by CSS: an invisible button is not on the page to be pressed).
        self.sync = gr.Button(elem_id=f"{group}-sync", elem_classes=["held-steps"])
        self.fetch = gr.Button(elem_id=f"{group}-fetch", elem_classes=["held-steps"])
        self._asks = itertools.count(1)

    def ask(self) -> str:
        """The store's value when the steps it held no longer hold (another run, a step drawn by
        the server): none held, and a request for those around the step shown (each differs from
        the last, so the store's change always reaches the server)."""
        return json.dumps({"ask": next(self._asks)})

    def pack(self, at: int, last: int, draw: Callable[[int], dict]) -> str:
        """The steps around `at` (of 0..`last`), each drawn by `draw(step)` as {component: value},
        as the page receives each of `shown`."""
        steps = {}
        for j in range(max(0, at - AROUND), min(last, at + AROUND) + 1):
            values = draw(j)  # once a step: a step's parts are drawn together
            steps[str(j)] = [c.postprocess(values[c]) for c in self.shown]
        return json.dumps({"at": at, "last": last, "steps": steps})

    def wire(self, prev: gr.Button, nxt: gr.Button, moves: gr.Number, fns: "HeldFns", inputs: list,
             outputs: list, step_kw: dict, hold_kw: dict) -> None:
        """Previous/Next: a held step shown on the page, then (after the paint) `fns.sync(*inputs,
        position)` tells the server which step the page shows (into `fns.synced`: few outputs, since Gradio copies
        every output's state around a server event); a step not held is `fns.move(*inputs,
        position, presses)`'s to draw, from the step the page shows (`moves` carries the presses),
        into all of `outputs`. After each
        move, and whenever the store asks, `fns.hold(*inputs)` sends the steps around the one
        shown (unless it sent them already), with `hold_kw` (beside other visitors' moves:
        whichever step it was sent for, each step held is that step)."""
        group = self.group
        ask = dict(fn=fns.hold, inputs=inputs, outputs=[self.store], trigger_mode="always_last",
                   show_progress="hidden", **hold_kw)
        gr.on([prev.click, nxt.click], None, [self.position], [self.position, *self.shown],
              js=SHOW_JS % {"group": group, "n": 1 + len(self.shown)}, show_progress="hidden")
        self.sync.click(fns.sync, [*inputs, self.position], fns.synced, trigger_mode="always_last",
                        show_progress="hidden", **step_kw).then(**ask)
        self.fetch.click(fns.move, [*inputs, self.position, moves], outputs, js=take_moves(group),
                         trigger_mode="always_last", **step_kw).then(None, None, None, js=FETCHED_JS % {"group": group})
        self.store.change(**ask)

    def drawn(self, trigger, fn: Callable, inputs: list, outputs: list, step_kw: dict) -> None:
        """`trigger` has the server draw a step of the group with `fn`, in the step queue (`step_kw`):
        presses made before its reply lands wait for it, so it never paints over a step they asked for."""
        names = {"group": self.group}
        trigger(fn, inputs, outputs, js=DRAWING_JS % names, **step_kw).then(None, None, None, js=FETCHED_JS % names)


@dataclass
class HeldFns:
    """A tab's handlers for its held steps (see HeldSteps.wire)."""

    sync: Callable  # (*inputs, step the page shows) -> the view takes it up
    synced: list  # what sync fills
    move: Callable  # (*inputs, presses) -> every output, the server's own move
    hold: Callable  # (*inputs) -> the store's steps
