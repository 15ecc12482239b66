"""The retrieval view of one step (HTML for gr.HTML); the debugger's table is visual/debug_table.py.

Inline styles only (no <style> block), neutral colours and translucent highlights, so it
reads on light and dark themes and survives any HTML sanitising.
"""
from __future__ import annotations

import html

from logitspec.core.trace import NO_RETRIEVAL, QueryRecord, RunTrace, StepRecord, TreeNode

from .baselines import MAX_ROWS, drafted_paths, taken_paths
from .counts import plural
from .data import (
    branch_nodes,
    candidate_by_rank,
    candidate_words,
    context_before,
    get_step,
    ngram_text,
    ngram_before,
    outcome,
    query_tail,
    step_position,
    token_labels,
    token_pieces,
)
from .method_words import SOURCE_NAMES, nothing_drafted, outcome_words, pool_words, rest_words, source_found, words_of
from .pieces import split_note
from .style import PALETTE, sub_x

SNIPPET_BEFORE = 12  # context tokens shown before a match
SNIPPET_AFTER = 4  # context tokens shown after the continuation

_TEXT = "color:var(--body-text-color, inherit)"
_MUTED = "color:var(--body-text-color-subdued, #888)"
_BORDER = "var(--border-color-primary, rgba(128,128,128,0.45))"
_RGBA = {
    "match": "rgba(0,114,178,0.28)",  # blue: the matched n-gram
    "cont": "rgba(230,159,0,0.30)",  # orange: the continuation taken
    "hit": "rgba(0,158,115,0.25)",
    "miss": "rgba(213,94,0,0.22)",
    "accepted": "rgba(0,158,115,0.35)",
    "verified": "rgba(128,128,128,0.22)",
}
_SOLID = {"match": "#0072B2", "cont": "#E69F00", "hit": "#009E73", "miss": "#D55E00",
          "accepted": "#009E73", "verified": "#8C8C8C", "pruned": "#8C8C8C", "unused": "#8C8C8C"}
_MONO = "font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace"

def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _chip(text: str, kind: str, title: str = "") -> str:
    bg = _RGBA.get(kind, "transparent")
    border = _SOLID.get(kind, "#8C8C8C")
    dash = "dashed" if kind in ("pruned", "unused") else "solid"
    extra = "opacity:0.75;" if kind == "unused" else ""
    t = f' title="{_e(title)}"' if title else ""
    return (f'<span{t} style="{_MONO};display:inline-block;padding:1px 5px;margin:1px 2px;border-radius:4px;'
            f'background:{bg};border:1.5px {dash} {border};{_TEXT};white-space:pre;{extra}">{_e(text)}</span>')


def _snippet_text(text: str) -> str:
    return text.replace("\n", "⏎").replace("\t", "⇥")


def _snippet(trace: RunTrace, ctx: list[int], q: QueryRecord) -> str:
    """The matched n-gram and the continuation inside a window of the context."""
    if q.match_pos is None or q.matched_n is None:
        return ""
    a, b = q.match_pos, q.match_pos + q.matched_n
    c_end = min(len(ctx), b + len(q.continuation))
    lo, hi = max(0, a - SNIPPET_BEFORE), min(len(ctx), c_end + SNIPPET_AFTER)
    # Decoded as one text, so a character split across tokens shows whole where it ends.
    pieces = [p.text for p in token_pieces(trace, ctx[lo:hi], ctx[:lo], final=False)]

    def run(lo_: int, hi_: int, kind: str | None) -> str:
        text = _snippet_text("".join(pieces[lo_ - lo:hi_ - lo]))
        if not text:
            return ""
        if kind is None:
            return f'<span style="{_MUTED}">{_e(text)}</span>'
        return (f'<span style="background:{_RGBA[kind]};border-bottom:2px solid {_SOLID[kind]};{_TEXT}">'
                f"{_e(text)}</span>")

    where = f"context tokens {a}..{c_end - 1} of {len(ctx)}"
    return (f'<div style="margin:4px 0 2px 0;padding:6px 8px;border-left:3px solid {_BORDER};'
            f'white-space:pre-wrap;line-height:1.6;{_TEXT}" title="{_e(where)}">'
            + ("…" if lo > 0 else "") + run(lo, a, None) + run(a, b, "match") + run(b, c_end, "cont")
            + run(c_end, hi, None) + ("…" if hi < len(ctx) else "") + "</div>")


def _attempts(trace: RunTrace, q: QueryRecord, seq: list[int]) -> str:
    parts = []
    for at in q.attempts:
        mark = "✓ matched" if at.matched else "✗"
        text = ngram_text(trace, at.ngram, ngram_before(seq, at.ngram))
        parts.append(_chip(f"{at.n}-gram {text} {mark}", "hit" if at.matched else "miss"))
    if not parts:
        return f'<span style="{_MUTED}">nothing to try (too few tokens)</span>'
    verdict = (f"<b>matched at length {q.matched_n}</b>" if q.matched
               else f'<b style="color:{_SOLID["miss"]}">no match</b>')
    return " ".join(parts) + f" → {verdict}"


def _continuation(trace: RunTrace, s: StepRecord, qi: int, ctx: list[int]) -> str:
    q = s.queries[qi]
    if not q.continuation:
        return ""
    on_path = set(s.accepted_path)
    chips = []
    pairs = branch_nodes(s, qi)
    # The branch follows x_{i+1}: decoded after it, a character it completes shows whole.
    labels = token_labels(trace, [t for t, _ in pairs], ctx + [s.root])
    if q.kind == "g2":
        pairs, labels = pairs[1:], labels[1:]  # the candidate itself is shown in the header
    for (t, node), label in zip(pairs, labels):
        if node is None:
            kind, why = "unused", "not put in the tree"
        elif node.pruned:
            kind, why = "pruned", f"pruned ({node.prune_reason})"
        elif node.id in on_path:
            kind, why = "accepted", "verified and accepted"
        else:
            kind, why = "verified", "verified, rejected"
        chips.append(_chip(label, kind, why))
    return (f'<div style="margin-top:3px">continuation taken: {"".join(chips)}</div>')


def _query_block(trace: RunTrace, s: StepRecord, qi: int, ctx: list[int]) -> str:
    q = s.queries[qi]
    if q.kind == "g1":
        head = f"g1 · what followed x<sub>i+1</sub> = {_e(ngram_text(trace, [s.root], ctx))} before?"
    elif q.kind == "pld":
        head = "prompt lookup · what followed the last tokens before?"
    else:
        cd = candidate_by_rank(s).get(q.candidate_rank)
        ctext = _e(ngram_text(trace, [cd.token], ctx + [s.root])) if cd else "?"
        p = f", p = {cd.prob:.4f}" if cd else ""
        head = f"g2 · {candidate_words(trace, q.candidate_rank)}: {ctext}{p}"
    color = _SOLID["hit"] if q.matched else _SOLID["miss"]
    return (
        f'<div style="margin:8px 0;padding:8px 10px;border:1px solid {_BORDER};border-left:6px solid {color};'
        f'border-radius:6px;{_TEXT}">'
        f'<div style="font-weight:600;margin-bottom:4px">{head}</div>'
        f"<div>{_attempts(trace, q, query_tail(s, q, ctx))}</div>{_snippet(trace, ctx, q)}"
        f"{_which_occurrence(trace, s, q, ctx)}{_continuation(trace, s, qi, ctx)}</div>"
    )


def _which_occurrence(trace: RunTrace, s: StepRecord, q: QueryRecord, ctx: list[int]) -> str:
    """Which occurrence of the matched n-gram the pool continued, and why: the run's pool setting,
    told against the n-gram's other occurrences in the context."""
    if not q.matched or q.match_pos is None or q.kind not in ("g1", "pld"):
        return ""
    pool = trace.settings.get("pool", "recent")  # runs from before the setting used the latest occurrence
    span = int(trace.settings.get("continuation", 20))
    gram = query_tail(s, q, ctx)[-q.matched_n:]
    why = occurrence_words(pool, span, occurrences(ctx, gram), q.match_pos, len(ctx) - q.matched_n)
    return f'<div style="margin-top:3px">continued from position {q.match_pos}: {_e(why)} (pool: {pool})</div>'


def occurrences(ctx: list[int], gram: list[int]) -> list[int]:
    """Where `gram` starts in the context with a token after it (what the pool can continue), in order."""
    n = len(gram)
    return [i for i in range(len(ctx) - n) if ctx[i:i + n] == gram]


def occurrence_words(pool: str, span: int, starts: list[int], chosen: int, end: int) -> str:
    """Why the pool continued the occurrence at `chosen` among `starts` (tokens after one at i: end - i,
    up to `span`): the latest ("recent"), or the latest with `span` tokens after it, else the
    earliest ("longest", the paper's)."""
    after = {i: min(span, end - i) for i in starts}
    rule = ("the occurrence with the longest continuation (up to {span} tokens), the latest among equals"
            if pool == "longest" else "the latest occurrence").format(span=span)
    if chosen not in after:  # a trace whose context the lookup did not see whole: the rule alone
        return rule
    k, latest = len(starts), starts[-1]
    if k == 1:
        return f"the only occurrence, {plural(after[chosen], 'token')} after it"
    if pool != "longest":
        best = max(starts, key=lambda i: (after[i], i))
        if after[best] <= after[chosen]:
            return f"the latest of {k} occurrences, {plural(after[chosen], 'token')} after it"
        return (f"the latest of {k} occurrences, with only {plural(after[chosen], 'token')} after it; position "
                f"{best} has {after[best]} (the longest pool would continue that one)")
    if after[chosen] >= span:
        said = f"of {k} occurrences, the latest with the full {span} tokens after it"
        return said + (f"; the latest, at position {latest}, has only {after[latest]}" if chosen != latest else "")
    return f"of {k} occurrences none has {span} tokens after it, so the earliest, with the most ({after[chosen]})"


def _drafts_html(trace: RunTrace, s: StepRecord, paths: list[list[TreeNode]], ctx: list[int], name: str) -> str:
    """Each drafted branch under the root, one a line, every token with its fate (at most MAX_ROWS)."""
    lines = []
    for j, path in enumerate(paths[:MAX_ROWS]):
        labels = token_labels(trace, [n.token for n in path], ctx + [s.root], final=False)
        chips = "".join(_chip(label, *_fate(s, n)) for n, label in zip(path, labels))
        lines.append(f'<div style="margin-top:2px">{name} {j + 1}: {chips}</div>')
    if len(paths) > MAX_ROWS:
        lines.append(f'<div style="{_MUTED}">and {len(paths) - MAX_ROWS} more (the draft tree shows them)</div>')
    return "".join(lines)


def _drafts_why(trace: RunTrace, s: StepRecord, paths: list[list[TreeNode]], ctx: list[int], name: str) -> str:
    """Which drafted branch the model went on along, or the token it wanted that none held."""
    taken = taken_paths(s, paths)
    if taken:
        which = " and ".join(str(j + 1) for j in taken)
        return f"the model went on along {name} {which} for {plural(s.drafts_accepted, 'token')}"
    want = s.tokens[1] if len(s.tokens) > 1 else s.bonus
    if want is None:
        return "the run ended at the root"
    said = ngram_text(trace, [want], ctx + [s.root])
    return f"the model went on with {said}, which no {name} held after x_{{i+1}}" if paths else ""


def _lookahead_block(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """Lookahead's lookup: the pool's n-grams for the root, their fates, and why it missed."""
    paths = drafted_paths(s, "pool")
    said = pool_words(trace, s)
    why = _drafts_why(trace, s, paths, ctx, "n-gram")
    return _baseline_box(s.queries[0].matched, "Lookahead · the pool's n-grams that start with x<sub>i+1</sub> = "
                         + _e(ngram_text(trace, [s.root], ctx)), _e(said) + _drafts_html(trace, s, paths, ctx, "n-gram"), why)


def _rest_block(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """REST's lookup: the suffixes tried, the one found, the continuations drafted and why it missed."""
    q = next(q for q in s.queries if q.kind == "rest")
    if q.matched:
        longer = f" (longer suffixes, up to {q.tried[0]} tokens, not found)" if len(q.tried) > 1 else ""
        said = _chip(f"{rest_words(trace, s, ctx)} ✓", "hit") + _e(longer)
    else:
        tried = f"suffixes of {q.tried[0]} down to {q.tried[-1]} tokens" if q.tried else "no suffix (too few tokens)"
        said = _chip(f"{tried} ✗", "miss") + " → none occurs in the datastore"
    paths = drafted_paths(s, "retrieved")
    why = _drafts_why(trace, s, paths, ctx, "continuation")
    return _baseline_box(q.matched, "REST · the longest suffix of the context (x<sub>i+1</sub> included) found in "
                         "the datastore, and its most frequent continuations",
                         said + _drafts_html(trace, s, paths, ctx, "continuation"), why)


def _baseline_box(matched: bool, head: str, body: str, why: str) -> str:
    color = _SOLID["hit"] if matched else _SOLID["miss"]
    return (f'<div style="margin:8px 0;padding:8px 10px;border:1px solid {_BORDER};border-left:6px solid {color};'
            f'border-radius:6px;{_TEXT}"><div style="font-weight:600;margin-bottom:4px">{head}</div>'
            f"<div>{body}</div>" + (f'<div style="{_MUTED};margin-top:3px">{sub_x(_e(why))}</div>' if why else "")
            + "</div>")


def _sources_block(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """What each of the step's sources found (its method's words), and why it drafted nothing or
    which drafted branch the model took."""
    chips = [_chip(SOURCE_NAMES.get(lk.source, lk.source) + (" ✓" if lk.offered else " ✗"), "hit" if lk.offered else "miss")
             for lk in s.lookups]
    said = "".join(f"<div>{chip} {sub_x(_e(source_found(trace, lk)))}</div>" for chip, lk in zip(chips, s.lookups))
    paths = [p for lk in s.lookups for p in drafted_paths(s, lk.source)]
    why = nothing_drafted(s) or _drafts_why(trace, s, paths, ctx, "branch")
    return _baseline_box(any(lk.offered for lk in s.lookups), f"{_e(words_of(trace.method).name)} · what its sources "
                         f"found for x<sub>i+1</sub> = {_e(ngram_text(trace, [s.root], ctx))}", said, why)


def recycled_row(s: StepRecord) -> list[TreeNode]:
    """The root's successors the step drafted from Token Recycling's matrix, by their rank in its row."""
    return sorted((n for n in s.tree if n.origin == "recycled" and n.depth == 1), key=lambda n: n.rank or 0)


def _fate(s: StepRecord, node: TreeNode) -> tuple[str, str]:
    """A drafted node's chip kind and words: accepted, verified and rejected, or pruned."""
    if node.pruned:
        return "pruned", f"pruned ({node.prune_reason})"
    if node.id in s.accepted_path:
        return "accepted", "verified and accepted"
    return "verified", "verified, rejected"


def _recycled_block(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """What Token Recycling proposed after the root (its row's successors, with their fates), how
    many more nodes came from deeper rows, and why it missed when nothing was accepted."""
    row = recycled_row(s)
    deeper = sum(n.origin == "recycled" and n.depth > 1 for n in s.tree)
    labels = token_labels(trace, [n.token for n in row], ctx + [s.root])
    chips = "".join(_chip(f"{n.rank} · {label}", *_fate(s, n)) for n, label in zip(row, labels))
    hit = next((n for n in row if n.id in s.accepted_path), None)
    want = s.tokens[1] if len(s.tokens) > 1 else s.bonus
    if hit is not None:
        why = f"the model went on with rank {hit.rank}"
    elif want is None:
        why = "the run ended at the root"
    else:
        said = _e(ngram_text(trace, [want], ctx + [s.root]))
        held = next((n for n in row if n.token == want), None)
        why = (f"the model went on with {said}, which the row held at rank {held.rank} but the tree cut"
               if held is not None else f"the model went on with {said}, which this row did not hold")
    more = f" · {deeper} more recycled node{'s' if deeper != 1 else ''} from deeper rows (the draft tree shows them)"
    return (f'<div style="margin:8px 0;padding:8px 10px;border:1px solid {_BORDER};border-left:6px solid '
            f'{PALETTE["recycled"]};border-radius:6px;{_TEXT}">'
            f'<div style="font-weight:600;margin-bottom:4px">Token Recycling · the matrix row of x<sub>i+1</sub> = '
            f"{_e(ngram_text(trace, [s.root], ctx))}: {len(row)} successor{'s' if len(row) != 1 else ''} drafted "
            f"(rank · token)</div><div>{chips or _e('none: the matrix held no row for this token yet')}</div>"
            f'<div style="{_MUTED};margin-top:3px">{why}{more if deeper else ""}</div></div>')


def retrieval_html(trace: RunTrace, step: int) -> str:
    """Every lookup of the step: n-grams tried, the match in its context, the continuation taken;
    and what Token Recycling proposed, for a step that drafted from its matrix."""
    s = get_step(trace, step)
    i = step_position(trace, step)
    ctx = context_before(trace, step)
    out = outcome(s) if s.forward else NO_RETRIEVAL
    drafts = trace.method == "recycling" or any(n.origin == "recycled" for n in s.tree)
    recycled = _recycled_block(trace, s, ctx) if drafts and s.forward else ""
    gen = len(ctx) - len(trace.prompt_tokens)
    head = (
        f'<div style="{_TEXT};font-size:1rem;line-height:1.45">'
        f'<div style="font-size:1.25rem;font-weight:700;margin-bottom:4px">Retrieval at step {i} of 0–'
        f"{len(trace.steps) - 1}: x<sub>i+1</sub> = {_e(ngram_text(trace, [s.root], ctx))}</div>"
        f'<div style="{_MUTED};margin-bottom:6px">searched {len(ctx)} context tokens '
        f"(prompt {len(trace.prompt_tokens)} + generated {gen}) · "
        f"{sub_x(_e(outcome_words('recycling' if recycled and not s.queries else trace.method, out)))}</div>"
        f'<div style="margin-bottom:6px">{_legend()}</div>'
    )
    if s.lookups and s.forward and not recycled:  # RACER's and SuffixDecoding's sources: what each found, or why nothing
        return _noted(head + _sources_block(trace, s, ctx)) + "</div>"
    if not s.queries:
        why = ("no forward pass was needed: the root was the last token" if not s.forward
               else "" if recycled else "the matrix held no row for x_{i+1} yet: no pass had run on it"
               if trace.method == "recycling" else "this decoder does no lookups")
        return _noted(head + recycled + (f'<div style="{_MUTED}">{_e(why)}</div>' if why else "")) + "</div>"
    blocks = [_query_block(trace, s, qi, ctx) for qi, q in enumerate(s.queries) if q.kind in ("g1", "pld")]
    blocks += [BASELINE_BLOCKS[q.kind](trace, s, ctx) for q in s.queries[:1] if q.kind in BASELINE_BLOCKS]
    g2 = [qi for qi, q in enumerate(s.queries) if q.kind == "g2"]
    body = "".join(blocks)
    if g2:
        hit_ranks = [s.queries[qi].candidate_rank for qi in g2 if s.queries[qi].matched]
        which = f" (rank{'s' if len(hit_ranks) > 1 else ''} {', '.join(map(str, hit_ranks))})" if hit_ranks else ""
        body += (f'<details open><summary style="font-weight:600;cursor:pointer;margin-top:6px">'
                 f"g2 · one lookup per candidate x̂<sub>i+2</sub>: {len(hit_ranks)} of {len(g2)} matched{which}"
                 "</summary>"
                 + "".join(_query_block(trace, s, qi, ctx) for qi in g2) + "</details>")
    return _noted(head + body + recycled) + "</div>"


def _noted(drawn: str) -> str:
    """`drawn`, with a line saying what ‹hex› is when it shows any."""
    note = split_note(drawn)
    return drawn + (f'<div class="split-note" style="{_MUTED};margin-top:6px">{_e(note)}</div>' if note else "")


# The one lookup a step of the paper's baselines makes, drawn by its own block.
BASELINE_BLOCKS = {"lookahead": _lookahead_block, "rest": _rest_block}


def _legend() -> str:
    return " ".join([
        _chip("matched n-gram", "match"), _chip("continuation", "cont"), _chip("accepted", "accepted"),
        _chip("verified, rejected", "verified"), _chip("pruned", "pruned"), _chip("not used", "unused"),
    ])
