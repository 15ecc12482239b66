"""The paper's table from a bench report (logitspec.bench.paper): its cells are the report's
figures, a method the run lacks leaves its columns out, and the paper's figures come with it."""
from __future__ import annotations

import copy
import json

from helpers.paths import ROOT
from logitspec.bench.paper import PAPER, headline_columns, dtype_markdown, headline, markdown, paper_table

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
    assert t["paper"] == PAPER


def _without_static() -> dict:
    r = copy.deepcopy(REPORT)
    r["methods"].pop("logitspec-static", None)
    r.pop("paper_table", None)
    return r


def test_a_static_lane_adds_its_columns_and_the_markdown_names_model_machine_and_paper():
    r = _without_static()
    assert not any("static" in c for c in paper_table(r)["columns"])  # a method the run lacks leaves no column
    r["methods"]["logitspec-static"] = copy.deepcopy(r["methods"]["logitspec"])
    r["methods"]["logitspec-static"]["overall"]["mean_accepted_tokens"] = 2.99
    md = markdown(r)
    lines = md.splitlines()
    head = next(line for line in lines if "tok/pass, static tree" in line)
    assert "speed, static tree" in head
    overall = [line for line in lines if line.startswith("| **overall**")][-1]
    assert "| 2.99 |" in overall and overall.count("|") == head.count("|")
    assert "Vicuna-7B" in md and r["settings"]["model"] in md and "2.26×" in md


def test_the_headline_bolds_each_rows_fastest_and_counts_where_each_method_wins():
    r = _without_static()
    r["methods"] = {m: r["methods"][m] for m in ("vanilla", "pld", "logitspec")}
    cats = r["settings"]["categories"]
    r["methods"]["recycling"] = copy.deepcopy(r["methods"]["pld"])
    for c in cats[:2]:  # recycling made the fastest in two categories, and most per pass in one
        r["methods"]["recycling"]["per_category"][c]["speedup_vs_vanilla"] = 9.0
    r["methods"]["recycling"]["per_category"][cats[0]]["mean_accepted_tokens"] = 9.5
    table, _, wins = headline(r).partition("\n\n")
    head, _, *rows = table.splitlines()
    assert head == "| category | prompt lookup | LogitSpec (cost tree) | Token Recycling (cost tree) |"
    assert len(rows) == len(cats) + 1 and all(row.count("**") == 2 + 2 * (row.startswith("| **overall")) for row in rows)
    assert rows[0].startswith(f"| {cats[0]} |") and "**9.00×** (9.50)" in rows[0] and "**9.00×**" in rows[1]
    ls = r["methods"]["logitspec"]["per_category"][cats[2]]
    assert f"{ls['speedup_vs_vanilla']:.2f}× ({ls['mean_accepted_tokens']:.2f})" in rows[2].replace("**", "")
    assert "Token Recycling (cost tree) in 2" in wins and f"of {len(cats)} categories" in wins
    assert "Most tokens per pass:" in wins and [m for _, m in headline_columns()][:2] == ["pld", "logitspec"]


def test_each_dtype_sits_beside_the_others_with_its_own_losslessness():
    r = copy.deepcopy(REPORT)
    half = copy.deepcopy(r["methods"])
    half["logitspec"]["overall"]["speedup_vs_vanilla"] = 1.5
    r["by_dtype"] = {"float32": {"lossless": True, "methods": r["methods"]},
                     "bfloat16": {"lossless": False, "methods": half}}
    md = dtype_markdown(r)
    head, _, *rows = md.splitlines()
    assert head == "| method | float32: speed-up (tok/pass) | bfloat16: speed-up (tok/pass) |"
    ls = next(row for row in rows if row.startswith("| logitspec |"))
    assert ls.endswith(f"| 1.50× ({half['logitspec']['overall']['mean_accepted_tokens']:.2f}) |")
    assert "float32 yes, bfloat16 NO" in md and "### Each dtype, overall" in markdown(r)
    assert dtype_markdown(REPORT) == ""
