"""Moving through a trace in the step explorer: quick presses each move a step and their
replies come back in order; Play steps to the end, pauses on a second press, and ends when
another trace takes the view's place. Real shipped traces, the app's own handlers, no server."""
from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
import time

import gradio as gr
import pytest

import visual
from ui import explorer as explorer_part
from ui.debugger import OUTCOMES
from ui.drawings import Drawings
from ui.files import shipped_traces
from ui.page import Page
from ui.services import Services
from ui.view import View


@pytest.fixture(scope="module")
def ui() -> Page:
    explorer = Page(Services.create())
    explorer.build()
    return explorer


@pytest.fixture(autouse=True)
def fresh_drawings(ui, monkeypatch):
    """Every test draws its steps itself: none kept from another test, none drawn ahead."""
    monkeypatch.setattr(ui.services, "drawings", Drawings(idle=lambda: False))


@pytest.fixture(scope="module")
def files():
    shipped = shipped_traces()
    assert len(shipped) >= 2, shipped
    return shipped


def _view(ui, path, step: int) -> View:
    view = ui.files.open_trace(str(path), OUTCOMES, View())[ui.state]
    ui.explorer.step_outputs(view, step)
    return view


def _shown(ui, out: dict) -> int:
    """The step a reply's label shows."""
    return int(re.match(r"### Step (\d+) ", out[ui.explorer.step_label]).group(1))


def _label(out: dict, ui) -> str | None:
    button = out.get(ui.explorer.play_btn)
    return getattr(button, "value", None)


def _changes_nothing(out: dict, ui) -> bool:
    """A reply that leaves the page as it is (Gradio sends a loop's last reply again at its end)."""
    return bool(out) and all(v == gr.skip() for v in out.values())


def test_quick_presses_reply_in_the_order_of_their_steps(ui, files, monkeypatch):
    """Three presses arrive before the first reply; the earlier steps draw slower. Each reply
    must show one step further than the reply before it, or the page ends on the wrong step."""
    view = _view(ui, files[0], 5)
    slow = {6: 0.3, 7: 0.15}
    draw = visual.retrieval_html

    def slow_draw(trace, i):
        time.sleep(slow.get(i, 0.0))
        return draw(trace, i)

    monkeypatch.setattr(visual, "retrieval_html", slow_draw)
    replies: list[int] = []
    done = threading.Lock()

    def press():
        out = ui.explorer.move(view, None, 1)
        with done:
            replies.append(_shown(ui, out))

    presses = [threading.Thread(target=press) for _ in range(3)]
    for t in presses:
        t.start()
        time.sleep(0.02)  # in the order they were pressed
    for t in presses:
        t.join()
    assert replies == [6, 7, 8]
    assert view.step == 8


def test_a_move_carries_every_press_the_page_counted(ui, files):
    view = _view(ui, files[0], 5)
    assert _shown(ui, ui.explorer.move(view, None, 3)) == 8
    assert _shown(ui, ui.explorer.move(view, None, -2)) == 6
    last = len(view.trace.steps) - 1
    assert _shown(ui, ui.explorer.move(view, None, 10_000)) == last  # held within the run
    for nothing in (0, None, "x", float("inf")):
        assert ui.explorer.move(view, None, nothing) == gr.skip(), nothing
    assert view.step == last


def test_a_move_the_server_draws_counts_from_the_step_the_page_shows(ui, files):
    """The page may have shown held steps the server has not heard of yet (its sync comes after
    the paint): a press past them counts from the page's step, not the view's."""
    view = _view(ui, files[0], 2)
    assert _shown(ui, ui.explorer.move(view, 4, 2)) == 6 and view.step == 6
    tab = ui.explain
    pick = tab.linked(view, 2)
    assert tab.move(view, pick, 4, 2)[tab.picked].step == 6


def test_the_explain_tabs_moves_count_every_press_within_the_run(ui, files):
    view = _view(ui, files[0], 0)
    tab = ui.explain
    pick = tab.linked(view, 2)
    out = tab.move(view, pick, None, 3)
    assert out[tab.picked].step == 5
    assert tab.move(view, out[tab.picked], None, -100)[tab.picked].step == 0
    assert tab.move(view, pick, None, 0) == gr.skip() and tab.move(view, pick, None, "x") == gr.skip()


def test_a_held_step_is_what_the_servers_move_to_it_draws(ui, files, monkeypatch):
    """Previous/Next show a held step on the page: it must be what the server's own move to that
    step sends, in every part a move changes (drawn afresh, not from the same kept drawing)."""
    view = _view(ui, files[0], 5)
    held = json.loads(ui.explorer.hold(view))
    assert held["at"] == 5 and held["last"] == len(view.trace.steps) - 1 and sorted(map(int, held["steps"])) == [3, 4, 5, 6, 7]
    monkeypatch.setattr(ui.services, "drawings", Drawings(idle=lambda: False))
    for j in (3, 7):
        out = ui.explorer.step_outputs(copy.deepcopy(view), j)
        assert held["steps"][str(j)] == [c.postprocess(out[c]) for c in ui.explorer.shown], j
    assert ui.explorer.hold(view) == gr.skip()  # the page has them already
    store = ui.explorer.held.store
    assert "ask" in json.loads(ui.explorer.step_outputs(view, 5)[store])  # drawn by the server: asks again
    view.playing = 1
    assert ui.explorer.step_outputs(view, 6)[store] == gr.skip()  # Play keeps the same run's steps held
    view.playing, view.racing = 0, True
    assert ui.explorer.step_outputs(view, 5)[store] is None  # a race's steps are still coming: none held
    assert ui.explorer.hold(view) == gr.skip()


def test_after_the_page_moved_itself_the_view_takes_its_step_and_the_steps_around_it(ui, files):
    view = _view(ui, files[0], 5)
    explorer = ui.explorer
    out = explorer.sync(view, 6)
    assert view.step == 6 and set(out) == {explorer.trie_download, explorer.state}  # nothing redrawn
    assert sorted(map(int, json.loads(explorer.hold(view))["steps"])) == [4, 5, 6, 7, 8]
    assert explorer.sync(view, 7) != gr.skip() and explorer.sync(view, 7) == gr.skip()  # there already
    assert explorer.sync(view, "x") == gr.skip() and view.step == 7


def test_explains_held_steps_are_what_its_moves_draw(ui, files):
    view = _view(ui, files[0], 0)
    tab = ui.explain
    pick = tab.linked(view, 2)
    held = json.loads(tab.hold(view, pick))
    assert tab.hold(view, pick) == gr.skip() and sorted(map(int, held["steps"])) == [0, 1, 2, 3, 4]
    out = tab.move(view, pick, 2, 2)  # the server's own move to step 4
    assert held["steps"]["4"] == [c.postprocess(out[c]) for c in tab.held.shown]
    moved = tab.sync(view, pick, 4)  # the page showed step 4 itself
    assert set(moved) == {tab.picked} and moved[tab.picked].step == 4
    assert tab.sync(view, pick, 2) == gr.skip() and tab.sync(view, pick, 99) == gr.skip()


def test_each_visitor_gets_a_view_of_their_own(ui, files):
    first = _view(ui, files[0], 3)
    second = copy.deepcopy(first)
    assert second.moving is not first.moving
    assert second.step == 3 and second.trace.tokens == first.trace.tokens
    ui.explorer.move(second, None, 1)
    assert (first.step, second.step) == (3, 4)


async def _collect(gen, n: int | None = None) -> list[dict]:
    """The next n replies of a Play loop (all of them when n is None)."""
    out = []
    async for reply in gen:
        out.append(reply)
        if n is not None and len(out) == n:
            break
    return out


def test_play_steps_to_the_last_step_and_stops(ui, files, monkeypatch):
    monkeypatch.setattr(explorer_part, "PLAY_SECONDS", 0.01)
    view = _view(ui, files[0], 0)
    last = len(view.trace.steps) - 1
    ui.explorer.step_outputs(view, last - 3)
    replies = asyncio.run(_collect(ui.explorer.play(view)))
    assert _label(replies[0], ui) == "❚❚ Pause"
    assert [_shown(ui, r) for r in replies[1:-1]] == [last - 2, last - 1, last]
    assert [_label(r, ui) for r in replies[-2:]] == ["▶ Play", "▶ Play"] and view.playing == 0
    assert all(ui.state not in r for r in replies)  # the view moved in place


def test_a_second_press_pauses_and_no_step_follows(ui, files, monkeypatch):
    monkeypatch.setattr(explorer_part, "PLAY_SECONDS", 0.05)
    view = _view(ui, files[0], 2)

    async def scenario():
        playing = ui.explorer.play(view)
        first = await _collect(playing, 2)
        paused = await _collect(ui.explorer.play(view))
        rest = await _collect(playing)
        return first, paused, rest

    first, paused, rest = asyncio.run(scenario())
    assert _label(first[0], ui) == "❚❚ Pause" and _shown(ui, first[1]) == 3
    # The press itself changes nothing on the page: only the loop sets the button while it runs,
    # so a Pause label of the loop can never land after the press's Play.
    assert all(_changes_nothing(r, ui) for r in paused), paused
    assert [_label(r, ui) for r in rest] == ["▶ Play"] and ui.explorer.step_label not in rest[0]
    assert view.step == 3 and view.playing == 0


def test_opening_another_trace_ends_the_old_views_play(ui, files, monkeypatch):
    monkeypatch.setattr(explorer_part, "PLAY_SECONDS", 0.05)
    view = _view(ui, files[0], 2)

    async def scenario():
        playing = ui.explorer.play(view)
        await _collect(playing, 1)
        opened = await asyncio.to_thread(ui.files.open_trace, str(files[1]), OUTCOMES, view)
        return opened, await _collect(playing)

    opened, rest = asyncio.run(scenario())
    assert all(_changes_nothing(r, ui) for r in rest), rest
    assert view.step == 2
    assert _label(opened, ui) == "▶ Play" and opened[ui.state].playing == 0


def test_a_pause_during_a_steps_drawing_shows_that_step_paused(ui, files, monkeypatch):
    """The step was on its way: it is shown, with Play on the button, and the page and the
    view agree on where it stopped."""
    monkeypatch.setattr(explorer_part, "PLAY_SECONDS", 0.01)
    draw = visual.retrieval_html

    def slow_draw(trace, i):
        time.sleep(0.4)
        return draw(trace, i)

    monkeypatch.setattr(visual, "retrieval_html", slow_draw)
    view = _view(ui, files[0], 4)

    async def scenario():
        playing = ui.explorer.play(view)
        await anext(playing)
        step = asyncio.ensure_future(anext(playing))
        await asyncio.sleep(0.15)  # the step is being drawn
        paused = await _collect(ui.explorer.play(view))
        return await step, paused, await _collect(playing)

    shown, paused, rest = asyncio.run(scenario())
    assert _shown(ui, shown) == 5 and _label(shown, ui) == "▶ Play"
    assert all(_changes_nothing(r, ui) for r in paused), paused
    assert [_label(r, ui) for r in rest] == ["▶ Play"]
    assert view.step == 5 and view.playing == 0


def test_a_links_explain_reply_leaves_the_lesson_or_detail_as_the_visitor_picked(ui, files):
    """The page opens on the lesson; the link's reply, which can come after the visitor picked
    "In detail", fills the tab without choosing between the two."""
    from types import SimpleNamespace

    view = _view(ui, files[0], 0)
    tab = ui.explain
    out = tab.on_link(view, tab.linked(view, 5), SimpleNamespace(query_params={"tab": "explain", "step": "5"}))
    assert out[tab.picked].step == 5 and tab.levels not in out
    assert tab.on_link(view, None, SimpleNamespace(query_params={})) == gr.skip()
