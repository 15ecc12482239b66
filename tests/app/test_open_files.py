"""The app's upload takes every kind of file the project writes (a trace, a recorded race) and
refuses anything else in one line beside the upload box, emptying the box and the shipped menu
and keeping the view. The app's own handlers, no server."""
from __future__ import annotations

import pytest

from helpers.run_files import TRACE_REFUSALS, broken_file, good_files
from logitspec.analysis.race import load_race
from ui.debugger import OUTCOMES
from ui.files import shipped_traces
from ui.page import Page
from ui.services import Services
from ui.view import View


@pytest.fixture(scope="module")
def ui() -> Page:
    explorer = Page(Services.create())
    explorer.build()
    return explorer


def _opened(ui, path) -> View:
    return ui.files.open_trace(str(path), OUTCOMES, View())[ui.state]


@pytest.mark.parametrize("kind", ["saved-trace", "shipped-trace", "race"])
def test_an_upload_of_each_kind_of_file_is_explored(ui, kind, tmp_path):
    path = good_files(tmp_path)[kind]
    before = _opened(ui, shipped_traces()[0])
    out = ui.files.upload_trace(str(path), OUTCOMES, before)
    view = out[ui.state]
    assert out[ui.race.status_md].startswith(f"**Exploring** {path.name}: ") and "\n" not in out[ui.race.status_md]
    assert out[ui.files.upload_note] == "" and out[ui.files.shipped] is None  # the menu does not name the old file
    assert view.lane == "logitspec" and view.trace.steps and not before.shown
    assert set(view.traces) == ({"vanilla", "pld", "logitspec"} if kind == "race" else {"logitspec"})
    assert out[ui.explorer.step_label].startswith(f"### Step 0 (steps 0–{len(view.trace.steps) - 1})")


@pytest.mark.parametrize("kind", sorted(TRACE_REFUSALS))
def test_a_refused_upload_says_why_beside_the_box_and_keeps_the_view(ui, kind, tmp_path):
    path = broken_file(tmp_path, kind)
    view = _opened(ui, shipped_traces()[0])
    ui.explorer.step_outputs(view, 4)
    out = ui.files.upload_trace(str(path), OUTCOMES, view)
    note = out[ui.files.upload_note]
    assert note.startswith(f"**Not opened:** {path.name}: ") and TRACE_REFUSALS[kind] in note, note
    assert "\n" not in note and "Traceback" not in note and out[ui.race.status_md] == note
    assert out[ui.files.upload] is None and out[ui.files.shipped] is None  # the box emptied, the menu names no file
    assert ui.state not in out and view.shown and view.step == 4  # the view stays as it was
    assert set(out) == {ui.race.status_md, ui.files.upload_note, ui.files.upload, ui.files.shipped}


def test_picking_a_shipped_trace_clears_a_refused_uploads_note(ui, tmp_path):
    view = _opened(ui, shipped_traces()[0])
    ui.files.upload_trace(str(broken_file(tmp_path, "empty")), OUTCOMES, view)
    out = ui.files.pick_shipped(shipped_traces()[1].name, OUTCOMES, view)
    assert out[ui.files.upload_note] == "" and out[ui.state].trace is not None


def _served(out, ui) -> bytes:
    button = out[ui.files.download]
    return open(button.value if isinstance(button.value, str) else button.value["path"], "rb").read()


@pytest.mark.parametrize("kind", ["shipped-trace", "race"])
def test_the_download_serves_the_file_on_screen_whole(ui, kind, tmp_path):
    path = good_files(tmp_path)[kind]
    out = ui.files.upload_trace(str(path), OUTCOMES, _opened(ui, shipped_traces()[0]))
    assert _served(out, ui) == path.read_bytes()  # a race downloads with every lane
    shipped = shipped_traces()[-1]
    out = ui.files.pick_shipped(shipped.name, OUTCOMES, out[ui.state])
    assert _served(out, ui) == shipped.read_bytes()


def test_a_refused_upload_leaves_the_download_as_it_was(ui, tmp_path):
    out = ui.files.upload_trace(str(broken_file(tmp_path, sorted(TRACE_REFUSALS)[0])), OUTCOMES,
                          _opened(ui, shipped_traces()[0]))
    assert ui.files.download not in out


def test_every_new_page_opens_the_recorded_race_read_once(ui, monkeypatch):
    from ui import files

    reads = []
    monkeypatch.setattr(files, "load_race", lambda path: reads.append(path) or load_race(path))
    files.recorded_race.cache_clear()
    try:
        first, second = (ui.files.initial_view(OUTCOMES)[ui.state] for _ in range(2))
        # The same runs, each page its own view and its own lanes: one page's lane pick or race
        # leaves the next visitor's page as it was.
        assert first is not second and first.traces is not second.traces and first.traces == second.traces
        first.traces.pop("vanilla")
        assert "vanilla" in ui.files.initial_view(OUTCOMES)[ui.state].traces
    finally:
        files.recorded_race.cache_clear()  # later tests read the file again, as a new app would
    assert reads == [files.RECORDED_RACE] and first.source == files.RECORDED_RACE.name
