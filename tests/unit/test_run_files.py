"""Every reader of saved files takes every kind of file the project writes (a single run's trace,
a recorded race) and refuses anything else in one line, never a traceback: `python -m visual`
as a real process (a race) and through its main() in this process, the one reader of traces and races, and the bench's questions reader."""
from __future__ import annotations

import pytest

from helpers.commands import assert_refused, in_process, visual_cli, visual_main
from helpers.figures import FIGURES
from helpers.run_files import RACE, TRACE_REFUSALS, broken_file, good_files


@pytest.mark.parametrize("kind", ["saved-trace", "shipped-trace", "race"])
def test_python_m_visual_draws_each_kind_of_file(kind, tmp_path, capsys):
    out = tmp_path / "out"
    res = visual_main(capsys, str(good_files(tmp_path)[kind]), "--step", "1", "--out", str(out), "--png", "no")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    for name in FIGURES:
        assert (out / f"{name}.html").stat().st_size > 1000, name
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("**Step 1 of ") and "LogitSpec" in summary.splitlines()[0]  # the lane as every view names it


def test_python_m_visual_draws_a_race_as_its_logitspec_lane_beside_every_lane(tmp_path):
    from logitspec.analysis.lanes import label
    from logitspec.analysis.race import load_race

    lanes, _ = load_race(RACE)
    assert set(lanes) == {"vanilla", "pld", "logitspec"}  # make record races prompt lookup too
    assert len(lanes["vanilla"].steps) != len(lanes["logitspec"].steps)
    res = visual_cli(str(RACE), "--step", "-1", "--out", str(tmp_path), "--png", "no")
    assert res.returncode == 0, res.stderr
    last = len(lanes["logitspec"].steps) - 1
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith(f"**Step {last} of 0–{last}**")
    race = (tmp_path / "race.html").read_text(encoding="utf-8")
    assert all(f'"name":"{label(name)}"' in race for name in lanes)  # each lane under the lane table's label


@pytest.mark.parametrize("kind", sorted(TRACE_REFUSALS))
def test_python_m_visual_refuses_a_broken_file_in_one_line(kind, tmp_path, capsys):
    path = broken_file(tmp_path, kind)
    res = visual_main(capsys, str(path), "--step", "1", "--out", str(tmp_path / "out"), "--png", "no")
    assert_refused(res, str(path), TRACE_REFUSALS[kind])
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize("kind", ["shipped-trace", "race"])
def test_python_m_visual_refuses_a_step_past_the_run_in_one_line(kind, tmp_path, capsys):
    res = visual_main(capsys, str(good_files(tmp_path)[kind]), "--step", "999", "--out", str(tmp_path / "out"), "--png", "no")
    assert_refused(res, "--step 999 is out of range")
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_python_m_visual_takes_a_race_file_as_a_lane(tmp_path, capsys):
    files = good_files(tmp_path)
    res = visual_main(capsys, str(files["shipped-trace"]), "--lane", f"vanilla={RACE}", "--out",
                      str(tmp_path / "out"), "--png", "no")
    assert res.returncode == 0, res.stderr
    res = visual_main(capsys, str(files["shipped-trace"]), "--lane", f"recycling={RACE}", "--out",
                      str(tmp_path / "out"), "--png", "no")
    assert_refused(res, "has no lane recycling")


@pytest.mark.parametrize("kind", sorted(TRACE_REFUSALS))
def test_the_trace_and_race_reader_refuses_in_one_line(kind, tmp_path):
    from logitspec.analysis.race import load_race
    from logitspec.core.trace import TraceFileError

    with pytest.raises(TraceFileError) as e:
        load_race(broken_file(tmp_path, kind))
    assert TRACE_REFUSALS[kind] in str(e.value) and "\n" not in str(e.value)


def test_the_trace_and_race_reader_reads_each_kind(tmp_path):
    from logitspec.analysis.race import load_race

    files = good_files(tmp_path)
    for kind in ("saved-trace", "shipped-trace"):
        lanes, machine = load_race(files[kind])
        assert list(lanes) == ["logitspec"] and machine == "" and lanes["logitspec"].steps
    lanes, machine = load_race(files["race"])
    assert list(lanes) == ["vanilla", "pld", "logitspec"] and machine


# ---------------------------------------------------------------- the bench's questions file

BENCH_REFUSALS = {  # what the bench's one line says of each file handed to it as questions
    "saved-trace": "is a LogitSpec trace, not a questions file",
    "shipped-trace": "is a LogitSpec trace, not a questions file",
    "race": "is a recorded race, not a questions file",
    "not-json": "not valid JSON",
    "empty": "is empty",
    "wrong-shape": "a question needs question_id, category and turns",
    "truncated": "not valid JSON",
    "folder": "is a folder, not a questions file",
    "missing": "questions file not found",
    "binary": "is not UTF-8 text",
}


@pytest.mark.parametrize("kind", sorted(BENCH_REFUSALS))
def test_the_bench_questions_reader_says_what_a_file_is_in_one_line(kind, tmp_path):
    from logitspec.bench.questions import QuestionFileError, load_questions

    path = good_files(tmp_path).get(kind) or broken_file(tmp_path, kind)
    with pytest.raises(QuestionFileError) as e:
        load_questions(path)
    assert BENCH_REFUSALS[kind] in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("kind", ["race", "folder"])
def test_the_bench_refuses_a_run_file_as_questions_before_loading_a_model(kind, tmp_path, capsys, monkeypatch):
    from logitspec import models
    from logitspec.bench.command import main

    def no_load(*a, **kw):
        raise AssertionError("a model was loaded before the questions were read")

    monkeypatch.setattr(models, "load_model", no_load)
    path = good_files(tmp_path).get(kind) or broken_file(tmp_path, kind)
    assert_refused(in_process(main, capsys, "--questions", str(path), "--model", "no-such-model"), BENCH_REFUSALS[kind])
