"""The retrieval debugger's table: one row per forward step, its columns in the method's own
words (visual/method_words.py), as HTML that never needs a sideways scroll, and the line over it."""
from __future__ import annotations

from typing import Any

from logitspec.core.trace import NO_RETRIEVAL, ONE_QUERY_KINDS, QueryRecord, RunTrace, StepRecord

from .counts import passes_words, run_counts
from .data import ngram_before, ngram_text, outcome, query_tail, tok, token_labels
from .method_words import Column, pool_words, source_cell, ticked, words_of
from .pieces import split_note
from .retrieval import _e, recycled_row
from .style import PALETTE


def failure_rows(trace: RunTrace) -> list[dict[str, Any]]:
    """One row per forward step for the retrieval debugger (filter on "outcome"); "lookup" and
    "matched n" are the step's first lookup, headed in its method's words (method_words)."""
    rows = []
    out = list(trace.prompt_tokens)
    for i, s in enumerate(trace.steps):
        ctx, out = out[-8:], out + list(s.tokens)  # the few tokens before the step: enough to join a character
        if not s.forward:
            continue
        first = next((q for q in s.queries if q.kind in ("g1", *ONE_QUERY_KINDS)), None)
        g2 = [q for q in s.queries if q.kind == "g2"]
        rows.append({
            "step": i,
            "outcome": outcome(s),
            "root": tok(trace, s.root, ctx),
            "lookup": _lookup_cell(trace, s, first, ctx) if first else source_cell(s),
            "matched n": first.matched_n if first else None,
            "g2 matches": sum(q.matched for q in g2),
            "g2 queries": len(g2),
            "drafts accepted": s.drafts_accepted,
            "recycled": recycled_cell(trace, s, ctx),
        })
    return rows


def _lookup_cell(trace: RunTrace, s: StepRecord, q: QueryRecord, ctx: list[int]) -> str:
    """The n-grams a query tried, ✓ on the one that matched; REST's suffixes (up to 16 tokens, a
    dozen of them) as the one found, or the lengths tried when none was; Lookahead's pool, the
    n-grams it held for the root, or why none."""
    if q.kind == "lookahead":
        return pool_words(trace, s).split(" (")[0]  # "3 n-grams held", or "none: …" and why
    attempts, seq = q.attempts, query_tail(s, q, ctx)
    if q.kind == "rest":
        if not q.matched:
            return f"suffixes of {q.tried[0]}…{q.tried[-1]} tokens ✗" if q.tried else ""
        attempts = [a for a in attempts if a.matched]
    return " · ".join(f"{a.n}-{'token suffix' if q.kind == 'rest' else 'gram'} "
                      f"{ngram_text(trace, a.ngram, ngram_before(seq, a.ngram))} {'✓' if a.matched else '✗'}"
                      for a in attempts)


def recycled_cell(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """The root's recycled successors in a row of the debugger: 'rank token ✓' for the one accepted,
    ✗ for the others; "" when the step drafted none."""
    row = recycled_row(s)
    labels = token_labels(trace, [n.token for n in row], ctx + [s.root])
    marks = ["✓" if n.id in s.accepted_path else "✗" for n in row]
    return " · ".join(f"{n.rank} {label} {mark}" for n, label, mark in zip(row, labels, marks))


# The debugger's columns: (column, key of failure_rows, shown on a phone). On a phone the lookup
# gets a line of its own under its row, and root and the matched length are left out: the root
# ends each n-gram and ✓ marks the one that matched. A method's own columns (None: it has none)
# come from visual/method_words.py.
_STEP = Column("step", "the step (forward pass); select the row to open it")
_ROOT = Column("root", "x_{i+1}: the token the step committed first")
# "accepted" alone: "drafts accepted" would not fit a phone's row; the tip says what it counts.
_ACCEPTED = Column("accepted", "draft tokens the step accepted; its root x_{i+1}, committed whatever the drafts, "
                   "is not counted")
# Shown when a row holds recycled successors (Token Recycling, or the hybrid's extra candidates).
_RECYCLED = Column("recycled", "the root's successors drafted from Token Recycling's matrix: rank in its row, "
                   "token, ✓ accepted")


def debug_columns(method: str, recycled: bool = False) -> list[tuple[Column, str, bool]]:
    """The debugger's columns for a run of `method`, in its own words."""
    w = words_of(method)
    outcome_tip = " / ".join(words for words, _ in w.filters) or "this decoder looks nothing up"
    cols = [(_STEP, "step", True), (Column("outcome", outcome_tip), "outcome", True), (_ROOT, "root", False),
            (w.lookup, "lookup", False), (w.matched, "matched n", False), (w.second, "g2 matches", True),
            (_ACCEPTED, "drafts accepted", True), (_RECYCLED if recycled else None, "recycled", False)]
    return [(c, key, phone) for c, key, phone in cols if c is not None]


_NUM = {"step", "matched n", "g2 matches", "drafts accepted"}
_TOK = {"root", "lookup", "recycled"}
# The table's own look (scoped to its component by gr.HTML): it never needs a sideways scroll.
DEBUG_TABLE_CSS = """
.dbg-scroll { max-height: 560px; overflow-y: auto; overflow-x: hidden; }
table.dbg { width: 100%; border-collapse: collapse; font-size: .92rem; }
.dbg th, .dbg td { padding: 4px 6px; text-align: left; vertical-align: top;
  border-bottom: 1px solid var(--border-color-primary, rgba(128,128,128,.4)); }
.dbg th { white-space: nowrap; font-weight: 600; position: sticky; top: 0; z-index: 1;
  background: var(--background-fill-primary, #fff); }
.dbg td.tok { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.dbg .num, .dbg .word { text-align: right; white-space: nowrap; }
.dbg .word { text-align: left; }
.dbg tbody tr { cursor: pointer; }
.dbg tbody tr:hover, .dbg tbody tr:focus { background: var(--background-fill-secondary, rgba(128,128,128,.12)); }
.dbg tr.below { display: none; }
@media (max-width: 640px) {
  .dbg .wide { display: none; }
  .dbg tr.below { display: table-row; }
  .dbg tr.main td { border-bottom: none; padding-bottom: 0; }
  .dbg th, .dbg td { padding: 3px 4px; }
  .dbg .word { white-space: normal; }
}
"""


def _debug_cell(key: str, value: str, phone: bool) -> str:
    kind = "num" if key in _NUM else "word" if key in ("outcome", "root") else "tok" if key in _TOK else ""
    cls = " ".join(c for c in (kind, "tok" if key == "root" else "", "" if phone else "wide") if c)
    return f'<td class="{cls}">{value}</td>'


def debugger_html(rows: list[dict[str, Any]], method: str = "logitspec") -> str:
    """The rows of a `method` run as an HTML table in its words (empty when there are none); each
    row carries its step for a click."""
    if not rows:
        return ""
    recycled = any(r.get("recycled") for r in rows)
    columns = debug_columns(method, recycled)
    head = "".join(f'<th scope="col" title="{_e(c.tip)}" class="{"num" if key in _NUM else ""}{"" if phone else " wide"}">'
                   f"{_e(c.header)}</th>" for c, key, phone in columns)
    phone_cols = sum(phone for *_, phone in columns)
    said = {value: words for words, value in words_of(method).filters}
    lookup = words_of(method).lookup
    body = []
    for r in rows:
        shown = {k: _e(str(v)) for k, v in r.items()}
        shown["g2 matches"] = f"{r['g2 matches']}/{r['g2 queries']}" if r["g2 queries"] else "–"
        shown["matched n"] = "–" if r["matched n"] is None else str(r["matched n"])
        color = PALETTE.get(r["outcome"], PALETTE[NO_RETRIEVAL])
        shown["outcome"] = f'<span style="color:{color}">■</span> {_e(said.get(r["outcome"], r["outcome"]))}'
        step = int(r["step"])
        below = " · ".join(([f'{_e(lookup.header)}: {shown["lookup"]}'] if lookup else [])
                           + ([f'recycled: {shown["recycled"]}'] if recycled else []))
        body.append(f'<tr class="main" data-step="{step}" tabindex="0">'
                    + "".join(_debug_cell(key, shown.get(key, ""), phone) for _, key, phone in columns) + "</tr>"
                    f'<tr class="below" data-step="{step}"><td class="tok" colspan="{phone_cols}">{below}</td></tr>')
    note = split_note(*body)
    return (f'<div class="dbg-scroll"><table class="dbg"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            + (f'<p class="split-note">{_e(note)}</p>' if note else ""))


def debugger_rows(trace: RunTrace | None, outcomes: list[str] | None) -> list[dict[str, Any]]:
    """failure_rows of the trace, kept to the outcomes its filter keeps (method_words.ticked; None: all)."""
    if trace is None:
        return []
    keep = set(ticked(trace.method, outcomes))
    return [r for r in failure_rows(trace) if r["outcome"] in keep]


def debugger_note(trace: RunTrace | None, outcomes: list[str] | None, shown: int) -> str:
    """One line over the debugger's table: how many steps it lists, or why it lists none."""
    if trace is None:
        return "No run or trace is open: run the race or open a trace."
    w = words_of(trace.method)
    if shown and trace.method == "recycling":
        return (f"{shown} of {passes_words(run_counts(trace).passes)}. Token Recycling looks only in its matrix: each row "
                "lists the root's successors from its matrix (✓ the one accepted) · select a row to open its step.")
    if shown:
        return f"{shown} of {passes_words(run_counts(trace).passes)} · select a row to open its step."
    if not any(s.queries or s.outcome != NO_RETRIEVAL for s in trace.steps):
        return f"This {w.name} run does no lookups, so no step has a retrieval outcome."
    if outcomes is not None and not outcomes:
        return "No outcome is ticked: tick one above to list its steps."
    kept = set(ticked(trace.method, outcomes))
    return f"No step of this run is {' or '.join(f'“{words}”' for words, v in w.filters if v in kept)}."
