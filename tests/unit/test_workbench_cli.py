"""`python -m logitspec workbench`: two short prompts on the bundled model under two methods make one
set file the app reads back (each trace lossless against vanilla, each summary its trace's); bad
questions, methods and output paths are refused in one line before any model loads."""
from __future__ import annotations

import json

import pytest
import torch

from helpers.commands import assert_refused, in_process
from logitspec.analysis.failures import summarise_run
from logitspec.analysis.set_tables import summary_csv
from logitspec.analysis.sets import read_set
from logitspec.cli import main
from logitspec.core.settings import DecodeSettings
from logitspec.runner import run_trace
from logitspec.workbench import set_runs

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
    out, table, n = tmp_path / "set.jsonl", tmp_path / "summary.csv", 16
    got = in_process(main, capsys, "workbench", "--questions", str(questions_file(tmp_path)),
                     "--methods", "logitspec,pld", "--max-new", str(n), "-o", str(out), "--csv", str(table))
    assert got.returncode == 0, got.stderr
    s = read_set(out)
    assert table.read_text(encoding="utf-8") == summary_csv(s)  # the app's download, byte for byte
    assert table.read_text(encoding="utf-8").count("\n") == len(s.entries) + len(s.runs) + 1
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
    (["--methods", "logitspec:pool=widest"], "pool must be one of recent, longest"),
    (["--methods", "logitspec:depth=3"], "settings after a method look like"),
    (["--methods", "logitspec:ngram=a-b"], "n-gram sizes look like ngram=1-3"),
    (["--csv", "/no/such/folder/summary.csv"], "cannot write the CSV /no/such/folder/summary.csv: no such folder"),
])
def test_bad_input_is_refused_in_one_line(tmp_path, capsys, argv, words):
    got = in_process(main, capsys, "workbench", *argv, "-o", str(tmp_path / "set.jsonl"))
    assert_refused(got, words)
    assert not (tmp_path / "set.jsonl").exists()


def test_an_output_in_no_folder_is_refused(tmp_path, capsys):
    got = in_process(main, capsys, "workbench", "--questions", "coding", "-o", str(tmp_path / "no" / "set.jsonl"))
    assert_refused(got, "no such folder")


def test_one_method_under_two_settings_is_named_by_the_setting_that_differs():
    runs = set_runs("logitspec,logitspec:pool=longest,pld,logitspec:ngram=2-4", {"max_new_tokens": 32})
    assert [r.label for r in runs] == ["logitspec ngram=1-3 pool=recent", "logitspec ngram=1-3 pool=longest",
                                       "pld", "logitspec ngram=2-4 pool=recent"]
    assert [(r.method, r.settings.pool, r.settings.ngram_sizes) for r in runs] == [
        ("logitspec", "recent", (1, 2, 3)), ("logitspec", "longest", (1, 2, 3)), ("pld", "recent", (1, 2, 3)),
        ("logitspec", "recent", (2, 3, 4))]
    assert all(r.settings.max_new_tokens == 32 for r in runs)
    once = set_runs("logitspec,logitspec:pool=recent,logitspec:k=16", {})  # the default pool given again: one run
    assert [r.label for r in once] == ["logitspec k=64", "logitspec k=16"]
