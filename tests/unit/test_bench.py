"""The bench CLI: clear refusals of bad input, and a real end-to-end run's report."""
from __future__ import annotations

import json

import pytest

from helpers.commands import bench, visual_bench
from helpers.paths import ROOT
from logitspec.bench.command import main


def refused(capsys, *argv: str) -> str:
    """The bench's main in this process: exit status 2, nothing on stdout, no traceback; its stderr."""
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and "Traceback" not in out.err
    return out.err


@pytest.mark.parametrize("content, message", [
    (None, "not found"),
    ('{"question_id": 1, "category": "qa"\n', "not valid JSON"),
    ('{"question_id": 1, "turns": ["hi"]}\n', "needs question_id, category and turns"),
    ('{"question_id": 1, "category": "qa", "turns": []}\n', "non-empty list"),
    ("\n\n", "is empty: a questions file holds one JSON question a line"),
])
def test_bad_questions_file_is_refused_clearly(capsys, tmp_path, content, message):
    path = tmp_path / "q.jsonl"
    if content is not None:
        path.write_text(content)
    assert message in refused(capsys, "--questions", str(path))


def test_unknown_method_and_bad_counts_are_refused(capsys):
    q = str(ROOT / "data" / "spec_bench_subset.jsonl")
    assert "unknown method(s) medusa" in refused(capsys, "--questions", q, "--methods", "vanilla,medusa")
    assert "max new tokens" in refused(capsys, "--questions", q, "--max-new-tokens", "0")


def test_processor_options_reach_every_methods_settings_and_bad_ones_are_refused(capsys):
    from logitspec.bench.command import build_parser
    from logitspec.bench.run import decode_settings

    q = str(ROOT / "data" / "spec_bench_subset.jsonl")
    args = build_parser().parse_args(["--questions", q, "--repetition-penalty", "1.2", "--no-repeat-ngram-size", "4"])
    assert decode_settings(args).processors == {"repetition_penalty": 1.2, "no_repeat_ngram_size": 4}
    assert decode_settings(build_parser().parse_args(["--questions", q])).processors == {}
    assert "repetition penalty must be a number above 0" in refused(capsys, "--questions", q, "--repetition-penalty", "0")


@pytest.mark.slow
def test_a_bad_questions_file_is_refused_by_the_process(tmp_path):
    """The refusal as a user meets it: a process, exit status 2, one line, no traceback."""
    r = bench("--questions", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "not found" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


@pytest.mark.slow
def test_bench_end_to_end_reports_lossless_and_every_figure(tmp_path):
    out = tmp_path / "report.json"
    r = bench("--questions", str(ROOT / "data" / "spec_bench_subset.jsonl"), "--categories", "translation,qa",
              "--limit-per-category", "1", "--max-new-tokens", "12",
              "--methods", "vanilla,pld,logitspec,logitspec-static", "--repeats", "2",
              "--pass-cost-dtypes", "", "--out", str(out))  # c(n) to 64: test_bandwidth.py, on a tiny model
    assert r.returncode == 0, r.stderr[-2000:]
    drawn = visual_bench(str(out), "--out", str(tmp_path / "fig"))  # the figures, from the report alone
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["lossless"] is True and report["mismatches"] == []
    assert set(report["methods"]) == {"vanilla", "pld", "logitspec", "logitspec-static"}
    for name, m in report["methods"].items():
        o = m["overall"]
        assert set(m["per_category"]) == {"translation", "qa"}
        assert o["tokens"] > 0 and o["tokens_per_second"] > 0
        assert o["mean_accepted_tokens"] >= 1.0
        assert 0 < o["speedup_min"] <= o["speedup_max"]
    for name in ("logitspec", "logitspec-static"):  # each against prompt lookup, per category too
        vs, m = report["methods"][name]["versus"], report["methods"][name]
        assert vs["against"] == "pld" and set(vs["per_category"]) == {"translation", "qa"}
        for c in ("translation", "qa", "overall"):
            v, e = (vs["overall"], m["overall"]) if c == "overall" else (vs["per_category"][c], m["per_category"][c])
            pld = report["methods"]["pld"]["overall" if c == "overall" else "per_category"]
            pld = pld if c == "overall" else pld[c]
            assert v["ratio"] == pytest.approx(e["speedup_vs_vanilla"] / pld["speedup_vs_vanilla"])
            assert 0 < v["min"] <= v["max"] and 0 <= v["ahead_in"] <= v["repeats"] == 2
            assert 0 < e["speedup_min"] <= e["speedup_max"]
    assert not {"versus"} & (set(report["methods"]["pld"]) | set(report["methods"]["vanilla"]))
    assert "logitspec against pld" in r.stdout
    assert report["methods"]["vanilla"]["overall"]["speedup_vs_vanilla"] == pytest.approx(1.0)
    assert report["methods"]["vanilla"]["overall"]["mean_accepted_tokens"] == pytest.approx(1.0, abs=0.1)
    ls = report["methods"]["logitspec"]["overall"]
    for name in ("pld", "logitspec", "logitspec-static"):
        o = report["methods"][name]["overall"]  # a step accepts only what it drafted
        assert o["drafted_tokens_per_step"] >= o["mean_accepted_tokens"] - 1e-9
    assert 0.0 <= ls["g2_rescue_rate"] <= ls["retrieval_success_rate"] <= 1.0
    curve = report["cost_curves"][0]
    assert curve["sizes"][0] == 1 and all(a <= b for a, b in zip(curve["seconds"], curve["seconds"][1:]))
    figs = {p.name for p in (tmp_path / "fig").iterdir()}
    assert {"speedup.html", "accepted.html", "cost_curve.html", "drafted.html", "budget.html"} <= figs
    assert "pass_cost" not in report and "pass_cost.html" not in figs  # none asked for, none drawn
    # the paper's table, per category, beside the report (logitspec.bench.paper)
    md = (tmp_path / "report.md").read_text()
    assert "tok/pass, static tree" in md and "| **overall** |" in md and "| qa |" in md
    assert report["paper_table"]["rows"]["overall"]["tok/pass, cost tree"] == ls["mean_accepted_tokens"]
    for name in ("pld", "logitspec", "logitspec-static"):  # every run replayed at budgets 1..64 (logitspec.analysis.budget)
        o = report["methods"][name]["overall"]
        b = o["budget"]
        assert set(b["curves"]) == {"pld"} | ({"paper", "cost"} if name == "logitspec" else set()) | (
            {"paper"} if name == "logitspec-static" else set())
        assert all(len(v) == 64 and v == sorted(v) for v in b["curves"].values())
        # each pass at its own size, in its own tree's order, gives back the runs' tokens per pass
        assert b["own_replayed"] == b["tokens_per_pass"] == pytest.approx(o["mean_accepted_tokens"], abs=1e-4)
    assert "lossless: True" in r.stdout


def test_the_head_to_head_with_prompt_lookup_counts_each_repetition_alone():
    from logitspec.bench.summary import method_figures

    def row(seconds):
        return {"tokens": 10, "seconds": seconds, "steps": 5, "overhead": 0.1, "decode_seconds": seconds}

    questions = [{"question_id": 0, "category": "a"}, {"question_id": 1, "category": "a"},
                 {"question_id": 2, "category": "b"}]
    per_q = {"vanilla": {i: [row(2.0)] * 3 for i in range(3)}, "pld": {i: [row(1.0)] * 3 for i in range(3)},
             "logitspec": {0: [row(0.9), row(1.1), row(0.95)], 1: [row(0.9), row(1.1), row(0.95)],
                           2: [row(1.2), row(1.1), row(1.3)]}}
    figures = method_figures(per_q, ["vanilla", "pld", "logitspec"], questions, 3)
    a = figures["logitspec"]["versus"]["per_category"]["a"]
    # median runs 0.95 s each against 1.0; the repetitions alone 1.8, 2.2 and 1.9 s against 2.0
    assert a["ratio"] == pytest.approx(2.0 / 1.9)
    assert (a["min"], a["max"], a["ahead_in"], a["repeats"]) == (pytest.approx(2.0 / 2.2), pytest.approx(2.0 / 1.8), 2, 3)
    b = figures["logitspec"]["versus"]["per_category"]["b"]
    assert b["ratio"] == pytest.approx(1.0 / 1.2) and b["ahead_in"] == 0
    overall = figures["logitspec"]["versus"]["overall"]  # 3.0, 3.3 and 3.2 s against 3.0
    assert overall["ahead_in"] == 1 and overall["max"] == pytest.approx(1.0)
    assert figures["logitspec"]["per_category"]["a"]["speedup_min"] == pytest.approx(4.0 / 2.2)
    assert "versus" not in figures["pld"]


def test_a_calibration_inside_a_run_is_kept_out_of_its_seconds(monkeypatch):
    import time as _time

    from logitspec import decoders
    from logitspec.bench import run as bench
    from logitspec.core.settings import DecodeSettings
    from logitspec.core.trace import QueryRecord, StepRecord

    def fake_decode(model, prompt, method, settings, eos_ids):
        _time.sleep(0.3)  # c(n) re-measured while drafting this step
        yield StepRecord(0, method, len(prompt), 7, [7, 8], 9, calibration_seconds=0.3,
                         queries=[QueryRecord("g1", None, (), (), 1, 0, [8])])
        yield StepRecord(1, method, len(prompt) + 2, 9, [9], None, forward=False)

    class LM:
        model, eos_ids, dtype = None, [], "float32"

    monkeypatch.setattr(decoders, "decode", fake_decode)
    row = bench.measure(LM(), [1, 2, 3], "logitspec", DecodeSettings(max_new_tokens=3))
    assert row["calibration_seconds"] == 0.3
    assert 0 <= row["seconds"] < 0.1 and row["tokens_list"] == [7, 8, 9]


def test_background_load_spins_processes_and_stops_them():
    from logitspec.bench.run import BusyLoad

    load = BusyLoad(2).start()
    procs = list(load.procs)
    try:
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
    finally:
        load.stop()
    assert all(p.poll() is not None for p in procs) and load.procs == []
    assert BusyLoad(0).start().procs == []


def test_background_load_must_not_be_negative(capsys):
    assert "--background-load" in refused(capsys, "--questions", str(ROOT / "data" / "spec_bench_subset.jsonl"),
                                          "--background-load", "-1")


@pytest.mark.slow
def test_bench_with_background_load_times_a_loaded_phase_then_an_idle_one(tmp_path):
    out = tmp_path / "report.json"
    r = bench("--questions", str(ROOT / "data" / "spec_bench_subset.jsonl"), "--categories", "qa",
              "--limit-per-category", "1", "--max-new-tokens", "8", "--background-load", "--pass-cost-dtypes", "",
              "--methods", "vanilla,logitspec", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(out.read_text())
    assert [p["name"] for p in report["phases"]] == ["loaded", "after"]
    assert [p["background_load"] for p in report["phases"]] == [1, 0]
    assert all(p["lossless"] for p in report["phases"]) and report["lossless"] is True
    st = report["settings"]
    assert st["cpu_model"] and isinstance(st["instruction_sets"], list) and st["background_load"] == 1
    assert "phase loaded (1 busy process)" in r.stdout and "CPU: " in r.stdout


def test_isa_caps_name_the_caps_in_force(monkeypatch):
    from logitspec.bench.machine import ISA_CAP_VARIABLES, isa_caps

    for v in ISA_CAP_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    caps = isa_caps()
    assert caps.pop("MKL_ENABLE_INSTRUCTIONS") == "AVX2"
    assert list(caps) == ["torch_cpu_capability"] and isinstance(caps["torch_cpu_capability"], str)


@pytest.mark.slow
def test_the_avx2_cap_holds_torch_kernels_to_avx2():
    """`make bench-avx2` relies on torch reading ATEN_CPU_CAPABILITY at start-up."""
    import os
    import subprocess
    import sys

    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "AVX2"


def test_several_dtypes_run_one_after_another_and_sit_side_by_side(monkeypatch):
    import argparse

    from logitspec.bench import run

    seen = []

    def fake_bench(args):  # each dtype's own report, as run_bench would give it
        seen.append((args.dtype, list(args.pass_cost_dtypes)))
        r = {"lossless": args.dtype != "bfloat16", "settings": {"dtype": args.dtype, "few_row_kernel": "built"},
             "methods": {"vanilla": {"overall": {"tokens_per_second": 10.0}}},
             "mismatches": [{"question_id": 1, "method": "pld", "repeat": 0}] if args.dtype == "bfloat16" else []}
        if args.pass_cost_dtypes:
            r["pass_cost"] = [{"dtype": d} for d in args.pass_cost_dtypes]
        return r

    monkeypatch.setattr(run, "run_bench", fake_bench)
    args = argparse.Namespace(dtypes=["float32", "bfloat16"], dtype="float32", pass_cost_dtypes=["float32", "bfloat16"])
    report = run.run_dtypes(args)
    # the pass costs are timed once, after every dtype's runs
    assert seen == [("float32", []), ("bfloat16", ["float32", "bfloat16"])]
    assert report["settings"]["dtype"] == "float32" and [p["dtype"] for p in report["pass_cost"]] == ["float32", "bfloat16"]
    assert report["lossless"] is False and report["mismatches"] == [
        {"question_id": 1, "method": "pld", "repeat": 0, "dtype": "bfloat16"}]
    assert {d: v["lossless"] for d, v in report["by_dtype"].items()} == {"float32": True, "bfloat16": False}


def test_an_unknown_or_empty_dtype_is_refused_in_one_line(capsys):
    from logitspec.bench.command import main

    q = str(ROOT / "data" / "spec_bench_subset.jsonl")
    for given, message in (("float32,float8", "unknown dtype(s) float8 in --dtype"), (",", "--dtype needs a dtype")):
        assert main(["--questions", q, "--dtype", given]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_printed_sameness_says_whether_every_parting_was_a_near_tie():
    from logitspec.bench.command import sameness_note

    assert sameness_note([]) == ""
    ties = [{"near_tie": True}, {"near_tie": True}]
    assert sameness_note(ties) == " (2 runs parted from vanilla, each at a near-tie: equal up to 2 near-ties)"
    assert sameness_note(ties + [{"near_tie": False}]) == " (3 runs parted from vanilla, 1 of them not at a near-tie)"
