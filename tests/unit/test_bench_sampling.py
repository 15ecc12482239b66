"""The bench's sampling options: passed to every method, recorded, refused in one line."""
from __future__ import annotations

import json

import pytest

from helpers.commands import bench
from helpers.paths import ROOT
from logitspec.bench.command import build_parser, main
from logitspec.bench.run import decode_settings

QUESTIONS = str(ROOT / "data" / "spec_bench_subset.jsonl")


def test_options_reach_the_decode_settings():
    s = decode_settings(build_parser().parse_args(["--questions", QUESTIONS, "--temperature", "0.7",
                                                   "--top-p", "0.9", "--seed", "5"]))
    assert (s.temperature, s.top_p, s.seed) == (0.7, 0.9, 5)


@pytest.mark.parametrize("flag, value, words", [("--temperature", "2.5", "temperature must be"),
                                                ("--top-p", "0", "top-p must be"),
                                                ("--seed", "1.5", "seed must be a whole number")])
def test_bad_sampling_options_are_one_line(capsys, flag, value, words):
    assert main(["--questions", QUESTIONS, flag, value]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and words in err[0]


@pytest.mark.slow
def test_a_sampled_bench_is_lossless_and_records_its_sampling(tmp_path):
    out = tmp_path / "report.json"
    r = bench("--questions", QUESTIONS, "--categories", "summarization", "--limit-per-category", "1",
              "--max-new-tokens", "16", "--methods", "vanilla,pld,logitspec", "--temperature", "1.0",
              "--top-p", "0.9", "--seed", "3", "--pass-cost-dtypes", "", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["lossless"] is True
    st = report["settings"]
    assert (st["temperature"], st["top_p"], st["seed"]) == (1.0, 0.9, 3)
    assert st["decode"]["temperature"] == 1.0
