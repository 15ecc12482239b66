"""The paper's table from a bench report (logitspec.bench.paper): its cells are the report's
figures, a method the run lacks leaves its columns out, and the paper's figures come with it."""
from __future__ import annotations

import copy
import json

from helpers.paths import ROOT
from logitspec.bench.paper import PAPER, markdown, paper_table

REPORT = json.loads((ROOT / "docs" / "bench" / "report.json").read_text())


def test_each_cell_is_the_reports_figure_for_its_method_and_category():
    t = paper_table(REPORT)
    assert list(t["rows"]) == REPORT["settings"]["categories"] + ["overall"]
    m = REPORT["methods"]
    for cat, row in t["rows"].items():
        e = {k: (v["overall"] if cat == "overall" else v["per_category"][cat]) for k, v in m.items()}
        assert row["tok/pass, cost tree"] == e["logitspec"]["mean_accepted_tokens"]
        assert row["tok/pass, prompt lookup"] == e["pld"]["mean_accepted_tokens"]
        assert row["retrieval success, prompt lookup"] == e["pld"]["retrieval_success_rate"]
        assert row["g2 rescues"] == e["logitspec"]["g2_rescue_rate"]
        assert row["speed, cost tree"] == e["logitspec"]["speedup_vs_vanilla"]
    # the run had no static tree: its columns are left out rather than shown empty
    assert not any("static" in c for c in t["columns"]) and t["paper"] == PAPER


def test_a_static_lane_adds_its_columns_and_the_markdown_names_model_machine_and_paper():
    r = copy.deepcopy(REPORT)
    r["methods"]["logitspec-static"] = copy.deepcopy(r["methods"]["logitspec"])
    r["methods"]["logitspec-static"]["overall"]["mean_accepted_tokens"] = 2.99
    md = markdown(r)
    head, _, *body = md.splitlines()
    assert "tok/pass, static tree" in head and "speed, static tree" in head
    overall = next(line for line in body if line.startswith("| **overall**"))
    assert "| 2.99 |" in overall and overall.count("|") == head.count("|")
    assert "Vicuna-7B" in md and r["settings"]["model"] in md and "2.26×" in md
