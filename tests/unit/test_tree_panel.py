"""The panel beside the draft tree starts blank at every step and run.

The browser fills the panel when a box is clicked, and the page redraws a component only when
the value the server sends changes; so the value sent with each step's tree must differ from
one step (and one run) to the next, or a box clicked earlier keeps describing itself there.
"""
from __future__ import annotations

import dataclasses

from helpers.figures import load
from ui import trie_view
from ui.figures import NODE_HINT, TreeSlot


def _panel(trace, step: int, view: str = "lanes") -> str:
    slot = TreeSlot("caption", "plot", side="side")  # the dict's keys stand for the components
    return slot.fill_tree(trie_view.figure(trace, step, view), trace)["side"]


def test_each_step_and_each_run_gets_a_fresh_panel():
    t = load("summarization-241")
    first = _panel(t, 3)
    assert NODE_HINT in first and 'id="tree-node"' in first
    assert _panel(t, 3) == first and _panel(t, 3, "trie") == first  # the same step of the same run
    assert _panel(t, 4) != first
    rerun = dataclasses.replace(t, prefill_seconds=t.prefill_seconds + 0.01)  # same text, another run
    assert _panel(rerun, 3) != first
    # Another run that copied the same prefill (runtime/prefills.py): only its steps' timings differ.
    steps = [dataclasses.replace(t.steps[0], forward_seconds=t.steps[0].forward_seconds + 0.01), *t.steps[1:]]
    assert _panel(dataclasses.replace(t, steps=steps, prefill_reused=True), 3) != first
    assert _panel(load("coding-121"), 3) != first
