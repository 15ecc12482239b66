"""The Workbench tab's handlers (no server): a set file opens as tables, a figure and a CSV whose
columns agree with the traces; a row opens its run at its worst step; a bad file is refused in one
line; the debugger's table downloads as CSV with the rows on screen."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import gradio as gr
import pytest

from helpers.paths import FIXTURES
from logitspec.analysis.failures import FAILED
from logitspec.analysis.sets import SetWriter, read_set
from logitspec.core.trace import RunTrace
from ui.debugger import OUTCOMES
from ui.page import Page
from ui.services import Services
from ui.view import View
from visual.debug_table import failure_rows

NAMES = ("coding-121", "summarization-241", "writing-81")


@pytest.fixture(scope="module")
def traces() -> list[RunTrace]:
    return [RunTrace.load(FIXTURES / f"{n}.json.gz") for n in NAMES]


@pytest.fixture(scope="module")
def set_path(traces, tmp_path_factory) -> Path:
    """The recorded fixture traces as a set of three prompts."""
    path = tmp_path_factory.mktemp("set") / "three.jsonl"
    with SetWriter(path, {"model": traces[0].model, "machine": "AMD EPYC, 2 cores, AVX2, no AVX-512",
                          "methods": ["logitspec"]}) as w:
        for i, (name, t) in enumerate(zip(NAMES, traces)):
            cat, qid = name.split("-")
            w.add(i, {"question_id": int(qid), "category": cat}, t)
    return path


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


def _csv(button) -> list[dict]:
    value = button.value
    path = value["path"] if isinstance(value, dict) else value  # the button's file, as Gradio holds it
    return list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))


def test_a_set_opens_as_tables_agreeing_with_its_traces(ui, set_path, traces):
    wb = ui.workbench
    out = wb.open_set(str(set_path))
    assert out[wb.note].startswith("**three.jsonl**: 3 prompts × 1 run (LogitSpec (cost tree))"), out[wb.note]
    table = out[wb.table].value
    assert list(table["headers"])[:4] == ["prompt", "id", "category", "method"]
    rows = _csv(out[wb.csv])
    assert [r["prompt"] for r in rows] == ["1", "2", "3", "all"]
    for row, t in zip(rows, traces):
        fwd = [s for s in t.steps if s.forward]
        assert int(row["steps"]) == len(fwd) and int(row["tokens"]) == len(t.tokens)
        assert float(row["tokens/pass"]) == round(len(t.tokens) / len(fwd), 2)
        assert float(row["failed %"]) == round(100 * sum(s.outcome in FAILED for s in fwd) / len(fwd), 1)
        assert float(row["g1 matched %"]) == round(100 * sum(s.outcome == "g1 matched" for s in fwd) / len(fwd), 1)
    every = [s for t in traces for s in t.steps if s.forward]
    assert int(rows[-1]["steps"]) == len(every) and rows[-1]["method"] == "LogitSpec (cost tree)"
    fig = out[wb.plot].value
    assert fig is not None


def test_a_row_opens_its_run_in_the_explorer_at_its_worst_step(ui, set_path):
    wb, s = ui.workbench, read_set(set_path)
    entry = s.entries[1]
    row = [2, str(entry.question_id), entry.category, "LogitSpec (cost tree)"]
    evt = gr.SelectData(wb.table, {"index": [1, 0], "value": 2, "row_value": row})
    out = wb.open_row(s, OUTCOMES, View(), evt)
    view = out[ui.state]
    assert view.trace.prompt_text == entry.prompt_text and view.step == entry.summary.worst_step
    assert out[ui.race.status_md].startswith("**Exploring** prompt 2 (summarization 241)")
    assert out[ui.explorer.step_label].startswith(f"### Step {entry.summary.worst_step} ")
    assert out[wb.compare_md] == "" and not out[wb.compare].visible  # one method: nothing to set beside it


def test_a_prompt_of_two_methods_shows_them_side_by_side(ui):
    from ui.workbench import SETS_DIR

    wb, s = ui.workbench, read_set(SETS_DIR / "coding-64.jsonl.gz")
    e = next(e for e in s.entries if e.method == "pld")
    row = [e.prompt + 1, str(e.question_id), e.category, "prompt lookup"]
    out = wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [1, 0], "value": 1, "row_value": row}))
    words = out[wb.compare_md]
    assert words.startswith(f"**Prompt {e.prompt + 1}, side by side:** The outputs agree for all 64 tokens"), words
    assert "They part at output token" in words and out[wb.compare].visible
    # the answer box names the run it holds: prompt lookup's, not LogitSpec's
    assert out[ui.race.answer].label == "prompt lookup: the answer, as plain text", out[ui.race.answer].label
    # the results above are the row's prompt's runs, not the last race's, and no race file is offered
    counters = out[ui.race.counters]
    lanes = s.lanes(e.prompt)
    assert counters.count("data-lane=") == len(lanes) and all(f"data-lane='{n}'" in counters or f'data-lane="{n}"' in counters
                                                             for n in lanes), counters
    assert "A recorded race on" in counters and "summariz" not in counters.lower()
    assert out[ui.files.download].value is None


def test_the_workbench_names_each_run_as_every_other_view_does(ui):
    """Its tables, figure, note and status line say "prompt lookup", as the results table does, never
    the set's key "pld"."""
    from ui.workbench import SETS_DIR

    wb, s = ui.workbench, read_set(SETS_DIR / "coding-64.jsonl.gz")
    opened = wb.open_set(str(SETS_DIR / "coding-64.jsonl.gz"))
    want = {"LogitSpec (cost tree)", "prompt lookup"}
    for table in (wb.overall, wb.table, wb.positions):
        assert set(opened[table].value["data"][i][list(opened[table].value["headers"]).index("method")]
                   for i in range(len(opened[table].value["data"]))) == want, table.elem_id
    assert "(LogitSpec (cost tree), prompt lookup)" in opened[wb.note], opened[wb.note]
    from visual.workbench import outcome_figure

    assert {y.split(" · ")[-1] for d in outcome_figure(s).data for y in d.y} == want
    e = next(e for e in s.entries if e.method == "pld")
    row = [e.prompt + 1, str(e.question_id), e.category, "prompt lookup"]
    out = wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [1, 0], "value": 1, "row_value": row}))
    assert ", prompt lookup, at step" in out[ui.race.status_md] and "pld" not in out[ui.race.status_md]


@pytest.mark.parametrize("content, words", [
    (b"not json\n", "first line names no logitspec-set format"),
    (b'{"format":"logitspec-trace/2","steps":[]}', "this is a trace file, not a set file"),
])
def test_a_bad_set_file_is_refused_in_one_line(ui, tmp_path, content, words):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    out = ui.workbench.open_set(str(p))
    assert set(out) == {ui.workbench.note} and words in out[ui.workbench.note] and "\n" not in out[ui.workbench.note]


def test_the_debugger_table_downloads_as_csv_with_its_rows(ui, traces):
    t = max(traces, key=lambda t: sum(s.outcome == "both failed" for s in t.steps))
    out = ui.debugger.rows_outputs(t, ["both failed"])
    rows = _csv(out[ui.debugger.csv])
    want = [r for r in failure_rows(t) if r["outcome"] == "both failed"]
    assert [int(r["step"]) for r in rows] == [r["step"] for r in want]
    assert [int(r["step"]) for r in rows] == [i for i, s in enumerate(t.steps) if s.forward and s.outcome == "both failed"]
    assert list(rows[0]) == list(want[0]) and all(r["outcome"] == "both failed" for r in rows)
    assert [int(r["drafts accepted"]) for r in rows] == [t.steps[int(r["step"])].drafts_accepted for r in rows]


def test_a_link_opens_the_workbench_tab(ui):
    from ui.debugger import OUTCOMES

    class Request:
        query_params = {"tab": "workbench"}

    out = ui.files.initial_view(OUTCOMES, Request())
    assert out[ui.tabs].selected == "workbench" and "This link" not in out.get(ui.race.status_md, "")


def test_a_set_over_the_apps_limit_is_refused_saying_how_to_open_it_locally(ui, set_path, monkeypatch):
    from logitspec.core.limits import Limits

    assert Limits().set_bytes > 25 * 2**20 > Limits().trace_bytes  # a 25 MB set uploads where a trace would not
    monkeypatch.setenv("LOGITSPEC_SET_BYTES", str(set_path.stat().st_size - 1))
    note = ui.workbench.open_set(str(set_path))[ui.workbench.note]
    assert f"open it in the app on your own machine: LOGITSPEC_SET_BYTES={set_path.stat().st_size + 1} python app.py" \
        in note and "\n" not in note
    monkeypatch.setenv("LOGITSPEC_SET_BYTES", str(set_path.stat().st_size))
    assert ui.workbench.open_set(str(set_path))[ui.workbench.note].startswith("**three.jsonl**")


def test_a_rows_opening_step_is_said_in_words_that_hold_for_any_count():
    from ui.workbench import worst_words

    assert worst_words(0) == "no step failed, so it opens at the first"
    assert worst_words(1) == "1 failed step in a row starts there"
    assert worst_words(5) == "5 failed steps in a row start there"
    assert worst_words(0, looks_up=False) == "it looks nothing up, so it opens at the first step"


def test_the_outcome_legend_tells_every_outcome_apart():
    """LogitSpec's and prompt lookup's outcomes in one figure: "g1 matched" and "lookup matched" (and
    "both failed" and "lookup failed") share what they mean, not their look."""
    import json

    from ui.workbench import SETS_DIR
    from visual.workbench import outcome_figure

    fig = json.loads(outcome_figure(read_set(SETS_DIR / "coding-64.jsonl.gz")).to_json())
    looks = {t["name"]: (t["marker"]["color"], (t["marker"].get("pattern") or {}).get("shape", "")) for t in fig["data"]}
    assert {"g1 matched", "both failed", "lookup matched", "lookup failed"} <= set(looks), looks
    assert len(set(looks.values())) == len(looks), looks


def test_the_run_set_beside_a_row_is_the_visitors_choice(ui, tmp_path):
    """A prompt of three runs: the row's run is set beside the default one, and the visitor picks another."""
    from ui.workbench import SETS_DIR

    wb, shipped = ui.workbench, read_set(SETS_DIR / "coding-64.jsonl.gz")
    lanes = shipped.lanes(0)
    path = tmp_path / "three-runs.jsonl"
    with SetWriter(path, {"model": lanes["pld"].model, "machine": "AMD EPYC, 2 cores, AVX2, no AVX-512",
                          "methods": ["logitspec", "pld", "logitspec again"]}) as w:
        e = shipped.entries[0]
        for label, t in (("logitspec", lanes["logitspec"]), ("pld", lanes["pld"]), ("logitspec again", lanes["logitspec"])):
            w.add(0, {"question_id": e.question_id, "category": e.category}, t, label)
    s = read_set(path)
    row = [1, str(e.question_id), e.category, "prompt lookup"]
    out = wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [0, 0], "value": 1, "row_value": row}))
    beside = out[wb.beside]
    assert beside.visible and [v for _, v in beside.choices] == ["logitspec", "logitspec again"], beside.choices
    first = out[wb.compare_md]
    assert beside.value == "logitspec" and "side by side" in first
    again = wb.pick_beside(s, out[wb.row_state], "logitspec again")
    assert again[wb.beside].value == "logitspec again" and again[wb.compare].visible
    assert again[wb.compare_md] == first.replace("logitspec", "logitspec again")  # the same tokens, its label
    assert wb.pick_beside(s, out[wb.row_state], "no such run")[wb.beside].value == "logitspec"


def test_a_rows_and_a_choices_replies_fill_only_what_their_events_list():
    """Gradio refuses a reply naming a component its event does not list: the row opened nothing in the
    page when the results table and the download joined the reply but not the event's outputs."""
    from ui.workbench import SETS_DIR

    page = Page(Services.create())
    demo = page.build()
    wb, s = page.workbench, read_set(SETS_DIR / "coding-64.jsonl.gz")
    e = s.entries[0]
    out = wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [0, 0], "value": 1,
                                                                    "row_value": [1, str(e.question_id), e.category, s.names()[e.label]]}))
    picked = wb.pick_beside(s, out[wb.row_state], "pld" if e.label != "pld" else "logitspec")
    for handler, reply in ((wb.open_row, out), (wb.pick_beside, picked)):
        listed = {id(c) for fn in demo.fns.values() if getattr(fn.fn, "__func__", None) is handler.__func__
                  for c in fn.outputs}
        assert listed and {id(c) for c in reply} <= listed, [c for c in reply if id(c) not in listed]
