"""The paper's table, reproduced from a bench report: per Spec-Bench category and overall,
retrieval success, tokens per pass, g2's rescues, drafting overhead and speed, beside the
figures the paper reports for its own model and hardware."""
from __future__ import annotations

# The paper's figures (Vicuna-7B on a GPU, Spec-Bench; its own measurements, not re-run here).
PAPER = {
    "model": "Vicuna-7B on a GPU",
    "speedup": 2.26,  # LogitSpec over vanilla, averaged over Spec-Bench
    "pld_speedup": 1.78,  # prompt lookup over vanilla on the same runs
    "cnndm_speedup": 2.61,  # summarisation (CNN/DM), its best category
    "cnndm_tokens_per_pass": 3.28,
    "retrieval_success": 0.9776,
    "overhead": 0.0117,  # drafting as a share of wall time
}

COLUMNS = (
    ("retrieval success, prompt lookup", "pld", "retrieval_success_rate", "pct"),
    ("retrieval success, LogitSpec", "logitspec", "retrieval_success_rate", "pct"),
    ("g2 rescues", "logitspec", "g2_rescue_rate", "pct"),
    ("tok/pass, prompt lookup", "pld", "mean_accepted_tokens", "num"),
    ("tok/pass, static tree", "logitspec-static", "mean_accepted_tokens", "num"),
    ("tok/pass, cost tree", "logitspec", "mean_accepted_tokens", "num"),
    ("drafting share of decoding, cost tree", "logitspec", "draft_bookkeeping_share", "pct"),
    ("speed, prompt lookup", "pld", "speedup_vs_vanilla", "x"),
    ("speed, static tree", "logitspec-static", "speedup_vs_vanilla", "x"),
    ("speed, cost tree", "logitspec", "speedup_vs_vanilla", "x"),
)


def _entry(report: dict, method: str, category: str) -> dict | None:
    m = report["methods"].get(method)
    if m is None:
        return None
    return m["overall"] if category == "overall" else m["per_category"].get(category)


def paper_table(report: dict) -> dict:
    """Rows per category and overall, each a column name -> value (None where the run lacks the
    method), with the columns the report can fill and the paper's figures."""
    cols = [c for c in COLUMNS if c[1] in report["methods"]]
    rows = {}
    for cat in report["settings"]["categories"] + ["overall"]:
        rows[cat] = {name: (_entry(report, m, cat) or {}).get(key) for name, m, key, _ in cols}
    return {"columns": [c[0] for c in cols], "rows": rows, "paper": PAPER}


def _cell(value, kind: str) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}%" if kind == "pct" else f"{value:.2f}×" if kind == "x" else f"{value:.2f}"


def markdown(report: dict) -> str:
    """The table as Markdown, then the paper's figures and what differs, in one paragraph."""
    table = report.get("paper_table") or paper_table(report)
    kinds = {c[0]: c[3] for c in COLUMNS}
    lines = ["| category | " + " | ".join(table["columns"]) + " |",
             "| --- |" + " --- |" * len(table["columns"])]
    for cat, row in table["rows"].items():
        cells = [_cell(row[c], kinds[c]) for c in table["columns"]]
        name = f"**{cat}**" if cat == "overall" else cat
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    p, s = table["paper"], report["settings"]
    lines += ["", (f"The paper ({p['model']}): {p['speedup']:.2f}× vanilla on average against prompt lookup's "
                   f"{p['pld_speedup']:.2f}× (a ratio of {p['speedup'] / p['pld_speedup']:.2f}); "
                   f"{p['cnndm_speedup']:.2f}× and {p['cnndm_tokens_per_pass']:.2f} tokens per pass on CNN/DM "
                   f"summaries; retrieval success {100 * p['retrieval_success']:.2f}%; drafting "
                   f"{100 * p['overhead']:.2f}% of the time. Here: {s['model']} ({s['dtype']}) on "
                   f"{s.get('hardware') or s['device']}, where a pass of many tree tokens costs several "
                   "one-token passes, so the speeds differ while tokens per pass compare.")]
    return "\n".join(lines)
