"""The workbench's tables and their CSV, counted from a set file's summaries (analysis/sets.py):
the rows the app shows and `python -m logitspec workbench --csv` writes."""
from __future__ import annotations

import csv
import io
from typing import Any

from ..core.trace import BOTH_FAILED, DRAFT_OUTCOMES, G1_MATCHED, G2_RESCUED, PLD_FAILED, PLD_MATCHED
from .failures import RunSummary, summarise_set
from .marks import visible
from .sets import SetEntry, SetFile

# Outcomes in the order a reader takes them: found by g1, rescued by g2, nothing found.
OUTCOME_ORDER = (G1_MATCHED, G2_RESCUED, BOTH_FAILED, PLD_MATCHED, PLD_FAILED)
# How a method's outcomes are named in a column: prompt lookup's "matched" is not LogitSpec's g1.
OUTCOME_COLUMN = {G1_MATCHED: "g1 matched %", G2_RESCUED: "g2 rescued %", BOTH_FAILED: "both failed %",
                  PLD_MATCHED: "lookup matched %", PLD_FAILED: "lookup failed %"}
DRAFT_COLUMN = {o: o + " %" for o in DRAFT_OUTCOMES}
NGRAM_CHARS = 24  # a failed n-gram's text in a cell


def outcomes_of(entries: list[SetEntry]) -> list[str]:
    """The outcomes any run of the set recorded, in OUTCOME_ORDER."""
    seen = {o for e in entries for o in e.summary.outcomes}
    return [o for o in OUTCOME_ORDER if o in seen]


def drafts_counted(entries: list[SetEntry]) -> bool:
    """Whether the set's summaries count what each step's draft came to (older set files do not)."""
    return any(e.summary.drafts for e in entries)


def _counts(s: RunSummary | Any, outcomes: list[str], drafts: bool) -> dict[str, Any]:
    """The columns every row shares: steps, tokens, tokens per pass, the outcome shares, failures and
    what the drafts came to. A run that looks nothing up has no failure share: empty, not 0."""
    row: dict[str, Any] = {"steps": s.steps, "tokens": s.tokens, "tokens/pass": round(s.tokens_per_pass, 2)}
    row.update({OUTCOME_COLUMN[o]: round(100 * s.share(o), 1) if s.looks_up else None for o in outcomes})
    row["failed %"] = round(100 * s.failed_steps / s.steps, 1) if s.steps and s.looks_up else None
    row["longest failed run"] = s.longest_failed if s.looks_up else None
    if drafts:
        row.update({DRAFT_COLUMN[o]: round(100 * s.draft_share(o), 1) if s.drafts else None
                    for o in DRAFT_OUTCOMES})
    return row


def ngram_cell(pairs: list[tuple[str, int]]) -> str:
    """The most failed n-grams as '"text" ×n', visible whitespace."""
    return " · ".join(f"“{visible(text)[:NGRAM_CHARS]}” ×{n}" for text, n in pairs)


def prompt_rows(s: SetFile) -> list[dict[str, Any]]:
    """One row per run (a prompt under a method), in the order written."""
    outcomes, drafts, rows, names = outcomes_of(s.entries), drafts_counted(s.entries), [], s.names()
    for e in s.entries:
        r = e.summary
        rows.append({"prompt": e.prompt + 1, "id": str(e.question_id), "category": e.category, "method": names[e.label],
                     **_counts(r, outcomes, drafts),
                     "opens at step": r.worst_step, "most failed n-grams": ngram_cell(r.top_ngrams(3))})
    return rows


def overall_rows(s: SetFile) -> list[dict[str, Any]]:
    """One row per run (a method, or a method under one of its settings): every prompt's runs pooled."""
    outcomes, drafts, rows, names = outcomes_of(s.entries), drafts_counted(s.entries), [], s.names()
    for m in s.runs:
        pooled = summarise_set([e.summary for e in s.entries if e.label == m])
        rows.append({"method": names[m], "prompts": pooled.runs, **_counts(pooled, outcomes, drafts),
                     "most failed n-grams": ngram_cell(pooled.failed_ngrams[:5])})
    return rows


def position_rows(s: SetFile) -> list[dict[str, Any]]:
    """Per method that looks something up, and bucket of output positions: the steps there and the
    share that failed."""
    rows, names = [], s.names()
    for m in s.runs:
        pooled = summarise_set([e.summary for e in s.entries if e.label == m])
        if not pooled.looks_up:
            continue
        for start, failed, steps in pooled.by_position:
            rows.append({"method": names[m], "output tokens": f"{start}–{start + 15}", "steps": steps, "failed": failed,
                         "failed %": round(100 * failed / steps, 1) if steps else 0.0})
    return rows


def rows_csv(rows: list[dict[str, Any]]) -> str:
    """Rows as CSV text, the first row's keys as the header."""
    if not rows:
        return ""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def summary_csv(s: SetFile) -> str:
    """The failure summary as one CSV: a row per run, then a row per method over every prompt
    ('all' in the prompt column)."""
    runs = prompt_rows(s)
    pooled = [{**{k: "" for k in runs[0]}, "prompt": "all", "method": r["method"],
               **{k: v for k, v in r.items() if k in runs[0]}} for r in overall_rows(s)]
    return rows_csv(runs + pooled)
