"""The Workbench's own set run (ui/set_run.py, no server): a Spec-Bench category decoded on the bundled
model under two runs shows its progress prompt by prompt and ends in the tables and a set file that
opens back; Stop keeps the finished prompts and says so; the run shares the race's queue; bad choices
are refused in one line before any model is asked for."""
from __future__ import annotations

import pytest
import torch

from logitspec.analysis.failures import summarise_run
from logitspec.analysis.sets import read_set
from logitspec.core.settings import DecodeSettings
from logitspec.runner import run_trace
from logitspec.workbench import pick_questions
from serve.model_cache import ModelCache
from ui.page import Page
from ui.services import Services

N = 12  # tokens a run: enough for a draft or two on the bundled model


class Request:
    session_hash = "workbench-test"


@pytest.fixture(scope="module")
def ui(bundled) -> Page:
    services = Services.create()
    services.models = ModelCache(loader=lambda name: bundled)  # the session's bundled model, loaded once
    page = Page(services)
    page.build()
    return page


def served(button) -> str:
    """The file a download button serves, as Gradio holds it."""
    return button.value["path"] if isinstance(button.value, dict) else button.value


def _run(ui, *form, stop_after: int | None = None) -> list[dict]:
    """Every reply of a set run; Stop pressed once `stop_after` prompts are written."""
    panel, replies = ui.workbench.runner, []
    for out in panel.run(*form, Request()):
        replies.append(out)
        if stop_after is not None and sum(ui.workbench.set_state in r for r in replies) == stop_after:
            panel.stop(Request())
    return replies


@pytest.mark.slow  # decodes on the bundled model
def test_a_category_runs_prompt_by_prompt_into_a_set_file_that_opens_back(ui, bundled, monkeypatch):
    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))
    wb, panel = ui.workbench, ui.workbench.runner
    reads = []
    monkeypatch.setattr("ui.workbench.read_set", lambda *a, **k: reads.append(a) or read_set(*a, **k))
    replies = _run(ui, "coding", None, ["logitspec", "pld"], "", N, "bundled")
    assert reads == []  # the tables follow the writer's own record of the file, never a read of it
    said = [r[panel.progress] for r in replies if panel.progress in r]
    questions = pick_questions("coding", None)
    for i, q in enumerate(questions):  # each prompt's start is shown under each run, with how many are done
        assert any(f"{i} of 3 prompts done. Prompt {i + 1} of 3 (coding {q['question_id']}), prompt lookup:" in w for w in said)
    assert "<b>Done:</b> all 3 prompts." in said[-1] and "value='3' max='3'" in said[-1]
    final = replies[-1]
    s = final[wb.set_state]
    assert s.prompts == 3 and s.runs == ["logitspec", "pld"] and not s.cut_short
    assert final[panel.download].visible and "opens back here" in final[panel.download].label
    back = read_set(served(final[panel.download]))  # the downloaded file, as the upload box reads it
    assert back.entries == s.entries and back.header == s.header  # what the run showed is what the file holds
    assert wb.open_set(served(final[panel.download]))[wb.note].startswith(f"**{back.path.name}**: 3 prompts × 2 runs")
    for e in back.entries:  # the same decoding as the command line's: lossless, summary from the trace
        t = back.trace(e)
        assert t.tokens == run_trace(bundled, t.prompt_text, "vanilla", DecodeSettings(max_new_tokens=N)).tokens
        assert e.summary == summarise_run(t) and t.settings["max_new_tokens"] == N


@pytest.mark.slow  # decodes on the bundled model
def test_stop_keeps_the_finished_prompts_and_says_so(ui, monkeypatch):
    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))
    wb, panel = ui.workbench, ui.workbench.runner
    ui.services.stops.start(Request.session_hash + "/set")  # as Run's click arms it
    replies = _run(ui, "writing", None, ["pld"], "", N, "bundled", stop_after=1)
    final = replies[-1]
    assert "the run was stopped after 1 of 3 prompts" in final[panel.progress]
    assert final[wb.note].endswith("Stopped after 1 of 3 prompts.")
    s = read_set(served(final[panel.download]))
    assert s.prompts == 1 and [e.prompt for e in s.entries] == [0] and not s.cut_short
    assert not ui.services.stops.running()  # the flag is given back


def test_a_set_run_queues_with_the_race():
    page = Page(Services.create())
    demo = page.build()
    by_name = {fn.api_name: fn for fn in demo.fns.values()}
    race, set_run = by_name["race"], by_name["run_set"]
    assert set_run.concurrency_id == race.concurrency_id == "model" and set_run.concurrency_limit == 1
    assert not by_name["stop_set"].queue  # Stop is heard while the run waits its turn


@pytest.fixture(scope="module")
def refusing() -> Page:
    """A page whose model cache fails any test that asks it for a model."""
    services = Services.create()
    services.models = ModelCache(loader=lambda name: pytest.fail("no model is asked for"))
    page = Page(services)
    page.build()
    return page


@pytest.mark.parametrize("form, words", [
    (("coding", None, [], "", N, "bundled"), "no method given"),
    (("coding", None, ["logitspec"], "pool=widest", N, "bundled"), "pool must be one of"),
    (("coding", None, ["logitspec"], "depth=3", N, "bundled"), "settings after a method look like"),
    (("coding", None, ["logitspec"], "", 0, "bundled"), "max new tokens must be a whole number"),
    (("upload", None, ["logitspec"], "", N, "bundled"), "upload a JSONL of questions"),
    (("coding", None, ["logitspec"], "", N, "/etc/passwd"), "is not offered here"),
])
def test_bad_choices_are_refused_in_one_line(refusing, form, words):
    page = refusing
    replies = list(page.workbench.runner.run(*form, Request()))
    said = replies[-1][page.workbench.runner.progress]
    assert len(replies) == 1 and "<b>Not started:</b>" in said and words in said and "\n" not in said, said


@pytest.mark.slow  # decodes on the bundled model
def test_one_method_under_two_settings_is_compared_where_its_runs_part(ui, monkeypatch):
    import re

    import gradio as gr
    from ui.debugger import OUTCOMES
    from ui.view import View

    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))
    wb = ui.workbench
    final = _run(ui, "coding", None, ["logitspec"], "pool=longest", 16, "bundled")[-1]
    s = final[wb.set_state]
    names = ["logitspec pool=recent", "logitspec pool=longest"]
    shown = ["LogitSpec (cost tree) pool=recent", "LogitSpec (cost tree) pool=longest"]  # as every view names the lane
    assert s.runs == names and list(final[wb.overall].value["data"][i][0] for i in (0, 1)) == shown
    assert [s.trace(e).settings["pool"] for e in s.entries[:2]] == ["recent", "longest"]
    for e in s.entries[1::2]:
        row = [e.prompt + 1, str(e.question_id), e.category, s.names()[e.label]]
        out = wb.open_row(s, OUTCOMES, View(), gr.SelectData(wb.table, {"index": [1, 0], "value": 1, "row_value": row}))
        words = out[wb.compare_md]
        assert words.startswith(f"**Prompt {e.prompt + 1}, side by side:** One method under two settings "
                                "(pool longest against recent)."), words
        assert [c[0] for c in out[ui.explorer.lane_pick].choices] == ["LogitSpec (cost tree) pool=recent",
                                                                     "LogitSpec (cost tree) pool=longest"]
        lanes = s.lanes(e.prompt)
        roots = {n: {sum(len(st.tokens) for st in t.steps[:i]) for i in range(len(t.steps))} for n, t in lanes.items()}
        shared = min(len(t.tokens) for t in lanes.values())
        apart = [p for p in range(shared) if (p in roots[names[0]]) != (p in roots[names[1]])]
        at = re.search(r"They part at output token (\d+): (logitspec pool=\w+) drafted it", words)
        assert (int(at.group(1)) if at else None) == (apart[0] if apart else None), words
        if at:  # the run that drafted it did not start a step there
            assert apart[0] not in roots[at.group(2)]
