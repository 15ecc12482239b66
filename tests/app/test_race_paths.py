"""Every path a race takes to the screen, checked over the matrix of paths and views: a live race that
ends, one stopped, one cut at the time limit, the first screen's recorded race, each of their
downloads uploaded into a fresh page, and a workbench row. On every path the views agree: the
results table, the lane picker and the four race figures list the same lanes; every explorer panel
names the same step of the same run; a race cut short says so wherever a lane's end is named, and
no view calls a stopped lane "running". The app's own handlers, no server; the races replay real
lanes recorded on the bundled model (tests/helpers/race.py). The same paths in a real browser:
docs/app.md, "The ways a race reaches the screen"."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from helpers.paths import FIXTURES
from helpers.race import replayed_race
from logitspec.analysis.lanes import label
from logitspec.analysis.race import load_race
from ui.debugger import OUTCOMES
from ui.page import Page
from ui.services import Services
from ui.view import View
from ui.workbench import SETS_DIR

FOUR_LANES = FIXTURES / "races" / "summarization-242-four-lanes.json"
LM = SimpleNamespace(name="SmolLM2-135M-Instruct", device="cpu")
STOP_AFTER = 30  # steps of all lanes together before a stop
LIVE = {"finished": None, "stopped": "stopped", "time limit": "time limit"}
WORKBENCH_SET = "coding-64.jsonl.gz"


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


def _live(ui: Page, reason: str | None) -> dict:
    """A live race's end, replayed as the app interleaves its lanes; cut after STOP_AFTER steps for
    `reason`, as Stop or the time limit cuts it."""
    view = replayed_race(load_race(FOUR_LANES)[0], None if reason is None else STOP_AFTER)
    if reason is not None:
        view.stop_reason = reason
    return ui.race._final_outputs(view, OUTCOMES, LM)


def _download(ui: Page, out: dict) -> Path:
    value = out[ui.files.download].value
    return Path(value if isinstance(value, str) else value["path"])


def _workbench_row(ui: Page) -> dict:
    from logitspec.analysis.sets import read_set

    wb, s = ui.workbench, read_set(SETS_DIR / WORKBENCH_SET)
    e = s.entries[0]
    row = [e.prompt + 1, str(e.question_id), e.category, s.names()[e.label]]
    return wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [0, 0], "value": 1, "row_value": row}))


def _paths(ui: Page) -> dict[str, tuple[dict, str | None]]:
    """Each path's page outputs and why its race was cut short (None: it ran to its end)."""
    out = {}
    for name, reason in LIVE.items():
        live = _live(ui, reason)
        out[f"live, {name}"] = (live, reason)
        out[f"uploaded, {name}"] = (ui.files.upload_trace(str(_download(ui, live)), OUTCOMES, View()), reason)
    out["first screen"] = (ui.files.initial_view(OUTCOMES), None)
    out["workbench row"] = (_workbench_row(ui), None)
    return out


@pytest.fixture(scope="module")
def paths(ui):
    return _paths(ui)


def _value(out: dict, component):
    got = out[component]
    return getattr(got, "value", got)


def _figure_names(out: dict, slot) -> list[str]:
    fig = _value(out, slot.outputs[-1])
    data = fig.get("data", []) if isinstance(fig, dict) else fig.data
    return [(d.get("name") if isinstance(d, dict) else d.name) or "" for d in data]


def _lanes_in(names: list[str], lanes: dict) -> list[str]:
    """The lanes a figure's trace names begin with, in order, once each."""
    said = []
    for name in names:
        lane = next((n for n, t in lanes.items() if name.startswith(label(n, t))), None)
        if lane is not None and lane not in said:
            said.append(lane)
    return said


PATHS = [*(f"live, {n}" for n in LIVE), *(f"uploaded, {n}" for n in LIVE), "first screen", "workbench row"]


@pytest.mark.parametrize("path", PATHS)
def test_every_view_lists_the_same_lanes(ui, paths, path):
    out, _ = paths[path]
    lanes = out[ui.state].traces
    table = re.findall(r"data-lane=['\"]([^'\"]+)['\"]", out[ui.race.counters])
    assert table == list(lanes), (path, table)
    picker = [value for _, value in out[ui.explorer.lane_pick].choices]
    assert picker == list(lanes), (path, picker)
    race = ui.race
    for slot in (race.race_fig, race.passes_fig, race.committed_fig):
        assert _lanes_in(_figure_names(out, slot), lanes) == list(lanes), (path, slot.outputs[-1].elem_id)
    priced = _lanes_in(_figure_names(out, race.pays_fig), lanes)
    assert priced == [n for n in lanes if n != "vanilla" and "vanilla" in lanes], (path, priced)
    if "vanilla" not in lanes:  # nothing to price against, and the figure says why
        assert "has none" in str(_value(out, race.pays_fig.outputs[0])), path


STEP_WORDS = {  # each explorer panel's words for the step it shows: (step, last step)
    "label": r"Step (\d+) \(steps 0–(\d+)\)",
    "summary": r"Step (\d+) of 0–(\d+)",
    "tree": r"step (\d+) of 0–(\d+)",
    "retrieval": r"step (\d+) of 0–(\d+)",
}


@pytest.mark.parametrize("path", PATHS)
def test_every_explorer_panel_names_the_same_step_of_the_same_run(ui, paths, path):
    out, _ = paths[path]
    ex, view = ui.explorer, out[ui.state]
    texts = {"label": out[ex.step_label], "summary": out[ex.summary_md],
             "tree": _value(out, ex.tree_fig.outputs[0]), "retrieval": out[ex.retrieval_view]}
    shown = {k: re.search(STEP_WORDS[k], re.sub(r"<[^>]+>", "", str(v))) for k, v in texts.items()}
    assert all(shown.values()), (path, {k: str(v)[:200] for k, v in texts.items() if not shown[k]})
    want = (str(view.step), str(len(view.trace.steps) - 1))
    assert {k: m.groups() for k, m in shown.items()} == dict.fromkeys(shown, want), (path, want)
    candidates = re.sub(r"<[^>]+>", "", str(_value(out, ex.cand_fig.outputs[0])))
    assert candidates.startswith(f"Step {view.step}:") or "no candidates" in candidates.lower(), (path, candidates[:200])


@pytest.mark.parametrize("path", PATHS)
def test_a_race_cut_short_says_so_and_no_lane_is_left_running(ui, paths, path):
    out, reason = paths[path]
    counters, race = out[ui.race.counters], ui.race
    legends = " ".join(_figure_names(out, race.race_fig) + _figure_names(out, race.passes_fig))
    assert "running" not in legends.lower() and "running" not in counters.lower(), (path, legends)
    if reason is None:
        assert "stopped" not in counters.lower(), path
        return
    words = {"stopped": "Stopped", "time limit": "time limit"}[reason]
    assert words in counters, (path, counters[:400])
    assert "stopped" in legends, (path, legends)  # an unfinished lane's end says it was stopped
    pays = _value(out, race.pays_fig.outputs[0])
    assert "stopped race" in str(pays), (path, str(pays)[:300])
