"""The bench report's figures from its timed runs: each method's medians, overall and per
category, its speed-up's range over the repetitions, and its head-to-head with prompt lookup."""
from __future__ import annotations

from ..analysis.budget import pooled


def summarise(rows: list[dict], vanilla_rows: list[dict] | None) -> dict:
    """Aggregate per-question medians into the report's figures for one method."""
    tokens = sum(r["tokens"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    tps = tokens / seconds if seconds else 0.0
    out = {
        "questions": len(rows),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_second": tps,
        "mean_accepted_tokens": tokens / steps if steps else 0.0,
        "retrieval_success_rate": _share(rows, "retrieved"),
        "draft_bookkeeping_share": sum(r["overhead"] for r in rows) / sum(r["decode_seconds"] for r in rows),
        "calibration_seconds": sum(r.get("calibration_seconds", 0.0) for r in rows),
    }
    if all("drafted_bound" in r for r in rows) and steps:
        # Mean tokens per step had every drafted token been verified (see drafted_bound).
        out["drafted_tokens_per_step"] = sum(r["drafted_bound"] for r in rows) / steps
    if any("g2_rescued" in r for r in rows):
        out["g2_rescue_rate"] = _share(rows, "g2_rescued")
    if any("tree_nodes" in r for r in rows):
        out["mean_tree_size"] = sum(r["tree_nodes"] for r in rows) / steps if steps else 0.0
    if vanilla_rows is not None:
        v = summarise(vanilla_rows, None)
        out["speedup_vs_vanilla"] = tps / v["tokens_per_second"] if v["tokens_per_second"] else None
    return out


def _share(rows: list[dict], key: str) -> float | None:
    steps = sum(r["steps"] for r in rows if key in r)
    return sum(r[key] for r in rows if key in r) / steps if steps else None


def median_row(reps: list[dict]) -> dict:
    """The repetition with the median wall time stands for the question."""
    return sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]


def method_figures(per_q: dict, methods: list[str], questions: list[dict], repeats: int) -> dict:
    """Each method's figures, overall and per category, from the timed runs; with more than one
    repetition, the speed-up's range over them, and each method's head-to-head with prompt
    lookup (`versus`)."""
    cats = sorted({q["category"] for q in questions})
    by_cat = {"overall": [q["question_id"] for q in questions],
              **{c: [q["question_id"] for q in questions if q["category"] == c] for c in cats}}
    out = {}
    medians = {m: {qid: median_row(r) for qid, r in per_q[m].items()} for m in per_q}
    v_rows = medians.get("vanilla")
    for m in methods:
        rows = medians[m]
        entry = {"per_category": {}}
        for c, ids in by_cat.items():
            e = summarise([rows[i] for i in ids], [v_rows[i] for i in ids] if v_rows else None)
            if v_rows and repeats > 1:  # noise: the speed-up within each repetition alone
                ups = by_repeat(per_q, m, "vanilla", ids, repeats)
                e["speedup_min"], e["speedup_max"] = min(ups), max(ups)
            if c == "overall":
                entry["overall"] = e
                if all("budget" in rows[i] for i in ids):  # pooled over the questions, as tokens per pass are
                    e["budget"] = pooled([rows[i]["budget"] for i in ids]).summary()
            else:
                entry["per_category"][c] = e
        if "pld" in per_q and m not in ("pld", "vanilla"):
            vs = {c: versus(per_q, medians, m, "pld", ids, repeats) for c, ids in by_cat.items()}
            entry["versus"] = {"against": "pld", "overall": vs.pop("overall"), "per_category": vs}
        out[m] = entry
    return out


def by_repeat(per_q: dict, m: str, other: str, ids: list, repeats: int) -> list[float]:
    """Method m's speed over `other`'s on these questions, within each repetition alone."""
    def speed(x: str, rep: int) -> float:
        return sum(per_q[x][i][rep]["tokens"] for i in ids) / sum(per_q[x][i][rep]["seconds"] for i in ids)

    return [speed(m, rep) / speed(other, rep) for rep in range(repeats)]


def versus(per_q: dict, medians: dict, m: str, other: str, ids: list, repeats: int) -> dict:
    """m's speed over `other`'s on these questions: from the median runs (`medians`, as the
    speed-ups are), its range over the repetitions, and in how many of them m was ahead, so
    a category's lead or lag can be told from the noise."""
    speed = {x: sum(medians[x][i]["tokens"] for i in ids) / sum(medians[x][i]["seconds"] for i in ids)
             for x in (m, other)}
    ratios = by_repeat(per_q, m, other, ids, repeats)
    return {"ratio": speed[m] / speed[other], "min": min(ratios), "max": max(ratios),
            "ahead_in": sum(r >= 1.0 for r in ratios), "repeats": repeats}
