"""A step typed into the explorer's number box past the run's ends is held to the run: no error
on every panel, and the panels keep answering. Through Gradio's own processing of the event as
the app wires it (preprocessing, the handler, postprocessing), no server."""
from __future__ import annotations

import asyncio

import gradio as gr
import pytest

from ui.debugger import OUTCOMES
from ui.files import shipped_traces
from ui.page import Page
from ui.services import Services
from ui.view import View


@pytest.fixture(scope="module")
def ui() -> Page:
    explorer = Page(Services.create())
    explorer.demo = explorer.build()
    return explorer


def _opened(ui, path) -> View:
    return ui.files.open_trace(str(path), OUTCOMES, View())[ui.state]


def _step_event(ui):
    """The event a number typed into the step box sends (its `input`), as the app wired it."""
    return next(fn for fn in ui.demo.fns.values()
                if fn.fn == ui.explorer.go_step and any(t[1] == "input" for t in fn.targets))


def _type_step(ui, view: View, value) -> dict:
    """What Gradio answers a step typed into the box: preprocessing, the handler, postprocessing."""
    from gradio.state_holder import SessionState

    state = SessionState(ui.demo)
    state[ui.state._id] = view
    return asyncio.run(ui.demo.process_api(_step_event(ui), [None, value], state))


@pytest.mark.parametrize("typed", [65, 1000, -1, -40])
def test_a_step_typed_past_the_runs_ends_is_held_to_the_run(ui, typed):
    view = _opened(ui, shipped_traces()[0])
    last = len(view.trace.steps) - 1
    ui.explorer.step_outputs(view, 5)
    out = _type_step(ui, view, typed)  # an error here is the red badge on every explorer panel
    held = last if typed > 0 else 0
    assert view.step == held
    slider = out["data"][0]
    assert slider["value"] == held and slider["maximum"] == last
    label = out["data"][1]
    assert label.startswith(f"### Step {held} (steps 0–{last})"), label
    # The tree view radio still answers after it.
    assert ui.explorer.set_tree_view(view, "trie")[ui.explorer.step_label].startswith(f"### Step {held} ")
    ui.explorer.set_tree_view(view, "lanes")


def test_a_step_typed_past_the_end_while_at_the_end_puts_the_box_back(ui):
    view = _opened(ui, shipped_traces()[0])
    last = len(view.trace.steps) - 1
    ui.explorer.step_outputs(view, last)
    out = ui.explorer.go_step(view, last + 30)
    assert list(out) == [ui.explorer.slider] and out[ui.explorer.slider].value == last and view.step == last
    assert ui.explorer.go_step(view, last) == gr.skip()


@pytest.mark.parametrize("typed", [None, "", "abc", float("nan"), float("inf")])
def test_a_box_holding_no_number_changes_nothing(ui, typed):
    view = _opened(ui, shipped_traces()[0])
    ui.explorer.step_outputs(view, 3)
    out = _type_step(ui, view, typed)
    unchanged = _type_step(ui, view, 3)["data"]  # the step shown, typed again: the handler skips
    assert view.step == 3 and out["data"] == unchanged
