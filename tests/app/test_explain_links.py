"""The Explain tab names the run it reads as it is: a shipped trace that shares the recorded race's
file name is "the trace you opened", not the recorded race; and a link's step, which waits under
"In detail" while the lesson teaches its own step, is named on the lesson. The app's own handlers,
no server."""
from __future__ import annotations

import re

import pytest

from ui.debugger import OUTCOMES
from ui.files import RECORDED_RACE, TRACES_DIR
from ui.page import Page
from ui.services import Services
from visual.lesson import lesson_step
from logitspec.core.trace import RunTrace


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


def _opened(ui: Page, query: dict) -> dict:
    """The first view and the Explain tab's drawing, as a visitor following the link gets them."""
    class Request:  # the parts of gr.Request a link is read from
        query_params = query
        headers: dict = {}

    first = ui.files.initial_view(OUTCOMES, Request())
    view, picked = first[ui.state], first[ui.explain.picked]
    return ui.explain.on_link(view, picked, Request())


def _intro(ui: Page, out: dict) -> str:
    return re.sub(r"<[^>]+>", "", out[ui.explain.lesson.intro])


def test_a_shipped_trace_named_like_the_recorded_race_is_the_trace_opened(ui):
    assert (TRACES_DIR / RECORDED_RACE.name).is_file()  # the two files this is about share a name
    out = _opened(ui, {"trace": RECORDED_RACE.stem, "tab": "explain"})
    intro = _intro(ui, out)
    assert "the trace you opened" in intro and "have not run one yet" not in intro, intro
    assert "have not run one yet" not in out[ui.explain.head]


def test_the_recorded_race_itself_is_still_called_so(ui):
    view = ui.files.initial_view(OUTCOMES, None)[ui.state]
    out = ui.explain.show(view, None)
    assert "you have not run one yet" in _intro(ui, out)


@pytest.mark.parametrize("step", [5, None])
def test_a_links_step_is_named_on_the_lesson(ui, step):
    query = {"trace": "coding-122", "tab": "explain"} | ({"step": str(step)} if step is not None else {})
    out = _opened(ui, query)
    intro = _intro(ui, out)
    if step is None:
        assert "Your link named" not in intro
        return
    taught = lesson_step(RunTrace.load(TRACES_DIR / "coding-122.json"))
    assert f"**Step {step}** of" in out[ui.explain.head]
    if taught == step:
        assert f"Your link named step {step}: the step this lesson teaches" in intro
    else:
        assert f"Your link named step {step}: it is taken apart in the In detail tab" in intro, intro
        assert f"This lesson teaches step {taught}" in intro


def test_the_lessons_last_stage_prices_the_step_on_the_races_costs_and_the_h200s(ui):
    """The page hands the lesson the race on screen (its vanilla lane times the one-token pass) and
    the machines' curves it ships: the stage is the one visual.lesson draws from them."""
    from ui.files import recorded_pass_costs, recorded_race
    from visual.lesson import lesson

    view = ui.files.initial_view(OUTCOMES, None)[ui.state]
    out = ui.explain.show(view, None)
    lanes = recorded_race()[0]
    want = next(st for st in lesson(lanes["logitspec"], lanes=lanes, curves=recorded_pass_costs()) if st.key == "pays")
    shown = out[ui.explain.lesson.texts["pays"]]
    assert want.html in shown and "on the NVIDIA H200" in shown and "Over the whole run" in shown, shown
