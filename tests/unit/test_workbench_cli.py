"""`python -m logitspec workbench`: two short prompts on the bundled model under two methods make one
set file the app reads back (each trace lossless against vanilla, each summary its trace's); bad
questions, methods and output paths are refused in one line before any model loads."""
from __future__ import annotations

import json

import pytest
import torch

from helpers.commands import assert_refused, in_process
from logitspec.analysis.failures import summarise_run
from logitspec.analysis.sets import read_set
from logitspec.cli import main
from logitspec.core.settings import DecodeSettings
from logitspec.runner import run_trace

PROMPTS = ["List three colours of the rainbow.", "Repeat after me: one two three, one two three."]


def questions_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"question_id": i, "category": "mine", "turns": [p]}) + "\n"
                            for i, p in enumerate(PROMPTS)))
    return path


@pytest.mark.slow  # decodes on the bundled model
def test_two_prompts_two_methods_make_one_set_file(bundled, tmp_path, capsys, monkeypatch):
    import logitspec.models

    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))
    monkeypatch.setattr(logitspec.models, "load_model", lambda *a, **k: bundled)
    out, n = tmp_path / "set.jsonl", 16
    got = in_process(main, capsys, "workbench", "--questions", str(questions_file(tmp_path)),
                     "--methods", "logitspec,pld", "--max-new", str(n), "-o", str(out))
    assert got.returncode == 0, got.stderr
    s = read_set(out)
    assert s.prompts == 2 and s.runs == ["logitspec", "pld"] and not s.cut_short
    assert s.header["model"] == "SmolLM2-135M-Instruct" and s.header["settings"]["pld"]["max_new_tokens"] == n
    for e in s.entries:
        t = s.trace(e)
        assert t.prompt_text == PROMPTS[e.prompt] and e.category == "mine"
        assert t.tokens == run_trace(bundled, PROMPTS[e.prompt], "vanilla", DecodeSettings(max_new_tokens=n)).tokens
        assert e.summary == summarise_run(t)


@pytest.mark.parametrize("argv, words", [
    (["--questions", "nonsense"], "no questions file or category 'nonsense'"),
    (["--methods", "logitspec,warp"], "unknown method 'warp'"),
    (["--questions", "missing.jsonl"], "questions file not found"),
    (["--max-new", "0"], "max new tokens must be a whole number"),
])
def test_bad_input_is_refused_in_one_line(tmp_path, capsys, argv, words):
    got = in_process(main, capsys, "workbench", *argv, "-o", str(tmp_path / "set.jsonl"))
    assert_refused(got, words)
    assert not (tmp_path / "set.jsonl").exists()


def test_an_output_in_no_folder_is_refused(tmp_path, capsys):
    got = in_process(main, capsys, "workbench", "--questions", "coding", "-o", str(tmp_path / "no" / "set.jsonl"))
    assert_refused(got, "no such folder")
