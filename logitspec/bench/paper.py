"""The paper's table, reproduced from a bench report: per Spec-Bench category and overall,
retrieval success, tokens per pass, g2's rescues, drafting overhead and speed, beside the
figures the paper reports for its own model and hardware."""
from __future__ import annotations

from ..analysis.lanes import replaying


# The paper's figures (Vicuna-7B on a GPU, Spec-Bench; its own measurements, not re-run here).
PAPER = {
    "model": "Vicuna-7B on a GPU",
    "speedup": 2.26,  # LogitSpec over vanilla, averaged over Spec-Bench
    "pld_speedup": 1.78,  # prompt lookup over vanilla on the same runs
    "rest_speedup": 1.33,  # REST over vanilla on the same runs (its own datastore)
    "rest_cnndm_tokens_per_pass": 1.64,
    "cnndm_speedup": 2.61,  # summarisation (CNN/DM), its best category
    "cnndm_tokens_per_pass": 3.28,
    "retrieval_success": 0.9776,
    "overhead": 0.0117,  # drafting as a share of wall time
}

STATIC = replaying("paper").name  # the lane of the paper's own tree, as the table's rows name it
COLUMNS = (
    ("retrieval success, prompt lookup", "pld", "retrieval_success_rate", "pct"),
    ("retrieval success, LogitSpec", "logitspec", "retrieval_success_rate", "pct"),
    ("g2 rescues", "logitspec", "g2_rescue_rate", "pct"),
    ("tok/pass, prompt lookup", "pld", "mean_accepted_tokens", "num"),
    ("tok/pass, REST", "rest", "mean_accepted_tokens", "num"),
    ("tok/pass, Lookahead", "lookahead", "mean_accepted_tokens", "num"),
    ("tok/pass, static tree", STATIC, "mean_accepted_tokens", "num"),
    ("tok/pass, cost tree", "logitspec", "mean_accepted_tokens", "num"),
    ("drafting share of decoding, cost tree", "logitspec", "draft_bookkeeping_share", "pct"),
    ("speed, prompt lookup", "pld", "speedup_vs_vanilla", "x"),
    ("speed, REST", "rest", "speedup_vs_vanilla", "x"),
    ("speed, Lookahead", "lookahead", "speedup_vs_vanilla", "x"),
    ("speed, static tree", STATIC, "speedup_vs_vanilla", "x"),
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


def headline_columns() -> list[tuple[str, str]]:
    """The headline's columns, (label, lane): every lane but vanilla, in the lane table's order."""
    from ..analysis import lanes

    return [(ln.label, ln.name) for ln in lanes.LANES if ln.name != "vanilla"]


def headline(report: dict) -> str:
    """Speed-up over vanilla (tokens per pass) per category and method, the fastest in bold,
    then a line saying where each method wins."""
    cols = [(name, m) for name, m in headline_columns() if m in report["methods"]]
    lines = ["| category | " + " | ".join(name for name, _ in cols) + " |", "| --- |" + " --- |" * len(cols)]
    fastest, most = {}, {}
    for cat in report["settings"]["categories"] + ["overall"]:
        e = {m: _entry(report, m, cat) or {} for _, m in cols}
        speed = {m: e[m].get("speedup_vs_vanilla") or 0.0 for _, m in cols}
        top = max(speed, key=speed.get)
        fastest[cat], most[cat] = top, max(e, key=lambda m: e[m].get("mean_accepted_tokens", 0.0))
        cells = [_speed_cell(e[m], bold=m == top) for _, m in cols]
        lines.append(f"| {f'**{cat}**' if cat == 'overall' else cat} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + _wins(cols, fastest, most, len(report["settings"]["categories"]))


def _speed_cell(entry: dict, bold: bool = False) -> str:
    """'1.40× (1.67)': speed-up over vanilla, then tokens per pass; the speed-up in bold if asked."""
    speed = f"{entry.get('speedup_vs_vanilla') or 0.0:.2f}×"
    return (f"**{speed}**" if bold else speed) + f" ({entry.get('mean_accepted_tokens', 0.0):.2f})"


def _wins(cols: list, fastest: dict, most: dict, n: int) -> str:
    """Which method was fastest, and which committed most per pass, in how many categories."""
    name = dict((m, label) for label, m in cols)

    def count(best: dict) -> str:
        tally = {m: sum(best[c] == m for c in best if c != "overall") for _, m in cols}
        return "; ".join(f"{name[m]} in {k}" for m, k in sorted(tally.items(), key=lambda x: -x[1]) if k)

    return (f"Fastest here, of {n} categories: {count(fastest)} (overall: {name[fastest['overall']]}). "
            f"Most tokens per pass: {count(most)} (overall: {name[most['overall']]}).")


def paper_paragraph(report: dict) -> str:
    """The run's overall retrieval, rescue and drafting figures beside the paper's, and what differs."""
    p, s = PAPER, report["settings"]
    ls, pld = _entry(report, "logitspec", "overall") or {}, _entry(report, "pld", "overall") or {}
    def pct(v):
        return _cell(v, "pct")

    here = (f"Here, overall: LogitSpec's retrieval succeeded in {pct(ls.get('retrieval_success_rate'))} of its "
            f"steps against {pct(pld.get('retrieval_success_rate'))} for prompt lookup's single query; g2 alone "
            f"rescued {pct(ls.get('g2_rescue_rate'))}; drafting and bookkeeping took "
            f"{pct(ls.get('draft_bookkeeping_share'))} of its decoding time.")
    return (f"{here} The paper ({p['model']}): {p['speedup']:.2f}× vanilla on average against prompt lookup's "
            f"{p['pld_speedup']:.2f}× (a ratio of {p['speedup'] / p['pld_speedup']:.2f}) and REST's "
            f"{p['rest_speedup']:.2f}×; {p['cnndm_speedup']:.2f}× and {p['cnndm_tokens_per_pass']:.2f} tokens per "
            f"pass on CNN/DM summaries (REST {p['rest_cnndm_tokens_per_pass']:.2f}); retrieval success {100 * p['retrieval_success']:.2f}%; drafting "
            f"{100 * p['overhead']:.2f}% of the time. Here: {s['model']} ({s['dtype']}) on "
            f"{s.get('hardware') or s['device']}{_pass_words(report)}, so the speeds differ while tokens per "
            "pass compare.")


def _pass_words(report: dict) -> str:
    """', where a 64-token pass costs 3.5 one-token passes', from the run's own measured curve."""
    curves = [c for c in report.get("cost_curves") or [] if c.get("sizes") and c["sizes"][-1] >= 64]
    if not curves:
        return ""
    sizes, secs = curves[0]["sizes"], curves[0]["seconds"]
    ratio = secs[sizes.index(64)] / secs[0] if 64 in sizes else secs[-1] / secs[0]
    return f", where a 64-token pass costs {ratio:.1f} one-token passes (measured in this run)"


def paper_markdown(report: dict) -> str:
    """The paper's table as Markdown: per category, retrieval, rescues, tokens per pass, speed."""
    table = report.get("paper_table") or paper_table(report)
    kinds = {c[0]: c[3] for c in COLUMNS}
    lines = ["| category | " + " | ".join(table["columns"]) + " |",
             "| --- |" + " --- |" * len(table["columns"])]
    for cat, row in table["rows"].items():
        cells = [_cell(row[c], kinds[c]) for c in table["columns"]]
        name = f"**{cat}**" if cat == "overall" else cat
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dtype_markdown(report: dict) -> str:
    """Each dtype's overall figures side by side, where the bench ran more than one."""
    by = report.get("by_dtype")
    if not by:
        return ""
    lines = ["| method | " + " | ".join(f"{d}: speed-up (tok/pass)" for d in by) + " |",
             "| --- |" + " --- |" * len(by)]
    for m in report["methods"]:
        cells = [_speed_cell(r["methods"][m]["overall"]) for r in by.values()]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    vanilla = ", ".join(f"{d} {r['methods']['vanilla']['overall']['tokens_per_second']:.1f}" for d, r in by.items())
    same = ", ".join(f"{d} {'yes' if r['lossless'] else 'NO'}" for d, r in by.items())
    return "\n".join(lines) + f"\n\nVanilla tokens per second: {vanilla}. Every output equal to vanilla's: {same}."


def markdown(report: dict) -> str:
    """report.md: the headline table, the paper's figures beside the run's, the paper's table per
    category, and the dtypes side by side where the run had several."""
    parts = [headline(report), paper_paragraph(report), "### The paper's table, per category", paper_markdown(report)]
    if report.get("by_dtype"):
        parts += ["### Each dtype, overall", dtype_markdown(report)]
    return "\n\n".join(parts)
