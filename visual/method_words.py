"""Each method's own words for what a step looked up, defined once: the debugger's intro, filter
and column headers, and the sentence the step's summary and retrieval view say of its lookup.

LogitSpec speaks of g1 and g2; prompt lookup of its one n-gram query over the context; REST of
the suffix it searched its datastore for; Lookahead of the n-grams its pool held (made by its
Jacobi window); Token Recycling of its matrix, RACER of its automaton and copied logits, SuffixDecoding of its
suffix trees: each of those sources offers nodes or does not (StepRecord.lookups). A new method's words are its
lane row's `words` (logitspec/analysis/lanes.py), or one entry here in WORDS (and its drafter's StepRecord
says what it did)."""
from __future__ import annotations

from logitspec.analysis import lanes
from logitspec.analysis.lanes import Column, MethodWords
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import (BOTH_FAILED, G1_MATCHED, G2_RESCUED, NO_RETRIEVAL, PLD_FAILED, PLD_MATCHED,
                                  RunTrace, SourceLookup, StepRecord)

from .baselines import drafted_paths, window_levels
from .counts import plural
from .data import match_text, ngram_text, query_tail


_ROW = " Select a row to open the step."
_LOGITSPEC_OUTCOMES = {
    G1_MATCHED: "g1 matched: the root's own lookup found a continuation",
    G2_RESCUED: "g2 rescued: g1 found nothing, a candidate's lookup did",
    BOTH_FAILED: "both failed: no lookup found a continuation",
}
LOGITSPEC = MethodWords(
    name="LogitSpec",
    intro=("Steps by retrieval outcome: **g1 matched**, **g2 rescued** (g1 failed, a candidate's g2 query "
           "matched) or **both failed**." + _ROW),
    filters=((G1_MATCHED, G1_MATCHED), (G2_RESCUED, G2_RESCUED), (BOTH_FAILED, BOTH_FAILED)),
    outcomes=_LOGITSPEC_OUTCOMES,
    lookup=Column("g1 n-grams tried", "the n-grams g1 looked up, longest first"),
    matched=Column("g1 n", "the n-gram length that matched"),
    second=Column("g2 hits", "candidates whose g2 lookup matched / candidates looked up"),
    guesses=("copies what followed the last few words earlier in the text, and asks the same scores that chose "
             "the next token for the token after it, copying on after each of those guesses too."),
)
WORDS: dict[str, MethodWords] = {
    "logitspec": LOGITSPEC,
    "logitspec+recycling": MethodWords(**{**LOGITSPEC.__dict__, "name": "LogitSpec + recycling", "guesses": (
        "grows LogitSpec's guesses and Token Recycling's remembered followers into one tree.")}),
    "pld": MethodWords(
        name="prompt lookup",
        intro=("Steps by prompt lookup's one query: the longest n-gram ending the text (x<sub>i+1</sub> last, "
               "up to 3 tokens) **matched** earlier in the context, whose continuation it drafted, or "
               "**found no match**." + _ROW),
        filters=(("n-gram matched", PLD_MATCHED), ("no match", PLD_FAILED)),
        outcomes={PLD_MATCHED: "prompt lookup matched: an n-gram ending the text occurred earlier in the context",
                  PLD_FAILED: "prompt lookup failed: no n-gram ending the text occurred earlier in the context"},
        lookup=Column("n-grams tried", "the n-grams ending the text that prompt lookup looked up, longest first"),
        matched=Column("n", "the n-gram length that matched"),
        guesses="copies what followed the last few words earlier in the text: one guess, no second chance.",
    ),
    "rest": MethodWords(
        name="REST",
        intro=("Steps by REST's one search: the longest suffix of the text (x<sub>i+1</sub> last) **found** in its "
               "datastore, whose most frequent continuations it drafted, or **no suffix found**." + _ROW),
        filters=(("suffix found", PLD_MATCHED), ("no suffix found", PLD_FAILED)),
        outcomes={PLD_MATCHED: "REST found a suffix of the context in its datastore",
                  PLD_FAILED: "REST found no suffix of the context in its datastore"},
        lookup=Column("suffix searched", "the longest suffix of the text found in REST's datastore, or the "
                      "suffix lengths searched for when none was"),
        matched=Column("suffix length", "tokens in the suffix found"),
        guesses=("looks the end of the text up in a datastore of other texts built beforehand and copies what "
                 "most often followed it there."),
    ),
    "lookahead": MethodWords(
        name="Lookahead decoding",
        intro=("Steps by Lookahead's one lookup: its pool, filled by the Jacobi window in earlier passes, "
               "**held n-grams** starting with x<sub>i+1</sub>, drafted as the verification branch, or "
               "**held none**." + _ROW),
        filters=(("pool held n-grams", PLD_MATCHED), ("pool held none", PLD_FAILED)),
        outcomes={PLD_MATCHED: "Lookahead's pool held n-grams starting with x_{i+1}",
                  PLD_FAILED: "Lookahead's pool held no n-gram starting with x_{i+1}"},
        lookup=Column("pool n-grams", "the n-grams starting with x_{i+1} that Lookahead's pool held and "
                      "drafted, or why it held none"),
        guesses=("guesses several positions ahead at once in a side window of each pass, keeps the runs of words "
                 "those guesses made, and offers the ones that start with the next token."),
    ),
    "recycling": MethodWords(
        name="Token Recycling",
        intro=("Token Recycling looks in one place: its matrix of the successors past passes predicted. Steps by "
               "whether the matrix held **a row for x_{i+1}** (it drafted from it) or **no row yet** (no pass "
               "had run on that token, so it drafted nothing)." + _ROW),
        filters=(("row held", PLD_MATCHED), ("no row yet", PLD_FAILED)),
        outcomes={PLD_MATCHED: "Token Recycling's matrix held x_{i+1}'s successors from an earlier pass",
                  PLD_FAILED: "Token Recycling's matrix held no row for x_{i+1}: no pass had run on it yet"},
        lookup=Column("matrix", "whether the matrix held a row for x_{i+1}; ✓ it offered nodes"),
        guesses=("remembers, for every token, the likeliest tokens the model gave after it in earlier passes, and "
                 "grows a tree of those remembered followers."),
    ),
    "racer": MethodWords(
        name="RACER",
        intro=("RACER joins its automaton's matches (frequent continuations of the text's suffixes, the root "
               "included, among the context's n-grams) with logits copied from the last pass that ran on each "
               "token. Steps by whether **a source offered nodes** or **neither did**; the tree's colours say "
               "which of the two drafted each node." + _ROW),
        filters=(("a source offered nodes", PLD_MATCHED), ("neither offered any", PLD_FAILED)),
        outcomes={PLD_MATCHED: "RACER: its automaton or its copied logits offered draft nodes",
                  PLD_FAILED: "RACER offered nothing: no automaton match and no logits to copy for x_{i+1}"},
        lookup=Column("automaton · copied", "the automaton's longest match ending in x_{i+1} (tokens) and whether an "
                      "earlier pass left x_{i+1}'s logits to copy; ✓ the source offered nodes"),
        guesses=("joins what most often followed the end of the text earlier in it with the scores the model gave "
                 "the last time it read the same token: old scores reused, where LogitSpec uses this pass's own."),
    ),
    "suffix": MethodWords(
        name="SuffixDecoding",
        intro=("SuffixDecoding matches the text's suffixes in its prompt tree and in the tree of this model's "
               "earlier outputs, and drafts the likeliest continuations of the better match by their counts, "
               "as a tree (the paper's tree mode; vLLM's `suffix` drafts one chain). "
               "Steps by whether **a tree offered a draft** or **neither did** (no match, or no continuation "
               "likely enough); the tree's colours say which tree drafted." + _ROW),
        filters=(("a tree offered a draft", PLD_MATCHED), ("neither offered one", PLD_FAILED)),
        outcomes={PLD_MATCHED: "SuffixDecoding: its prompt tree or its output tree offered a draft",
                  PLD_FAILED: "SuffixDecoding offered nothing: no tree matched a suffix with a likely continuation"},
        lookup=Column("prompt · output tree", "the longest suffix of the text, x_{i+1} last, each tree matched "
                      "(tokens); ✓ the tree offered a draft"),
        guesses=("copies what followed the end of the text in this prompt and in this model's earlier answers, "
                 "kept across requests, as many words as those counts make likely."),
    ),
    "vanilla": MethodWords(
        name="vanilla",
        intro="Vanilla decoding drafts nothing and looks nothing up: one token per forward pass.",
        filters=(),
        outcomes={NO_RETRIEVAL: "no retrieval (this decoder drafts nothing)"},
    ),
}


def words_of(method: str) -> MethodWords:
    """A method's words: its lane row's, else its WORDS entry; LogitSpec's for a method neither has
    (a trace from a newer version)."""
    row = next((ln for ln in lanes.LANES if ln.method == method and ln.words), None)
    return row.words if row else WORDS.get(method, LOGITSPEC)


def outcome_words(method: str, outcome: str) -> str:
    """What a step's retrieval outcome means for `method`."""
    said = words_of(method).outcomes.get(outcome)
    return said or {**_LOGITSPEC_OUTCOMES, **WORDS["vanilla"].outcomes}.get(outcome, outcome)


def ticked(method: str, chosen: list[str] | None) -> list[str]:
    """The outcomes of `method`'s filter that `chosen` keeps: all of them for None, or for a choice
    made in another method's filter (it names none of this one's); else those chosen."""
    own = [value for _, value in words_of(method).filters]
    if chosen is None:
        return own
    kept = [v for v in own if v in chosen]
    return kept if kept or not chosen else own


def pool_words(trace: RunTrace, s: StepRecord) -> str:
    """What Lookahead's pool held for the step's root, or why it held nothing yet."""
    paths = drafted_paths(s, "pool")
    levels = [lv for lv in window_levels(s) if lv]
    n = trace.settings.get("lookahead_ngram", 5)
    if paths:
        return (f"{plural(len(paths), 'n-gram')} held (the pool keeps at most "
                f"{trace.settings.get('lookahead_guesses', 7)} for a token, the least recently seen dropped first)")
    if len(levels) < n - 1:
        return f"none: the Jacobi window is still warming up ({len(levels)} of its {n - 1} levels) and has made no n-gram yet"
    return "none: the Jacobi window has made no n-gram starting with this token yet"


def _reason(said: str) -> str:
    """A sentence of pool_words after an outcome that already says the pool held none."""
    return said.removeprefix("none: ")


def rest_words(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """What REST's search found: the suffix and how many continuations it drafted, or the lengths tried."""
    q = next(q for q in s.queries if q.kind == "rest")
    if not q.matched:
        return (f"suffixes of {q.tried[0]} down to {q.tried[-1]} tokens searched for, none in the datastore"
                if q.tried else "no suffix searched for (too few tokens)")
    seq = query_tail(s, q, ctx)
    found = ngram_text(trace, seq[-q.matched_n:], seq[:-q.matched_n])
    drafted = len(drafted_paths(s, "retrieved"))
    return f"the {q.matched_n}-token suffix {found} found; {plural(drafted, 'continuation')} drafted"


def lookup_line(trace: RunTrace, s: StepRecord, ctx: list[int]) -> str:
    """The step's lookups in one line, in its method's words ("" for a step that made none)."""
    if not s.queries:
        return f"{words_of(trace.method).name}: {source_words(trace, s)}" if s.lookups else ""
    first = s.queries[0]
    said = outcome_words(trace.method, s.outcome)
    if first.kind == "lookahead":
        return f"{said}: {_reason(pool_words(trace, s))}"
    if first.kind == "rest":
        return f"{said}: {rest_words(trace, s, ctx)}"
    if first.kind == "pld":
        return f"{words_of(trace.method).name}: {match_text(trace, first, query_tail(s, first, ctx))}"
    g1 = next((q for q in s.queries if q.kind == "g1"), None)
    g2 = [q for q in s.queries if q.kind == "g2"]
    detail = [f"g1: {match_text(trace, g1, query_tail(s, g1, ctx))}"] if g1 is not None else []
    if g2:
        detail.append(f"g2: {sum(q.matched for q in g2)} of {len(g2)} candidates matched")
    return f"{s.outcome} ({'; '.join(detail)})" if detail else said  # the filter's own words first


# RACER's and SuffixDecoding's sources (StepRecord.lookups), as their papers name them.
SOURCE_NAMES = {"automaton": "automaton", "copied": "copied logits", "prompt-tree": "prompt tree",
                "output-tree": "output tree", "recycled": "matrix"}


def _setting(trace: RunTrace, name: str):
    return trace.settings.get(name, getattr(DecodeSettings(), name))


def _last(n: int) -> str:
    return "x_{i+1} alone" if n == 1 else f"the last {n} tokens (x_{{i+1}} last)"


def source_found(trace: RunTrace, lk: SourceLookup) -> str:
    """What one source found, in its method's words."""
    nodes = plural(lk.offered, "node")
    if lk.source == "automaton":
        if not lk.matched:
            return (f"automaton: no suffix of the text ending in x_{{i+1}}, {_setting(trace, 'racer_min_depth')} tokens "
                    f"or more, among the context's {_setting(trace, 'racer_ngram')}-grams")
        return f"automaton: {_last(lk.matched)} matched, {nodes} offered"
    if lk.source == "recycled":
        if not lk.matched:
            return "matrix: no row for x_{i+1} yet (no pass has run on it)"
        return f"matrix: x_{{i+1}}'s row of successors from an earlier pass, {nodes} offered"
    if lk.source == "copied":
        if not lk.matched and lk.offered:  # racer_unseen_rows="zeros": the reference's matrix starts all zeros
            return f"copied logits: no pass has run on x_{{i+1}} yet; its row reads as zeros (token 0), {nodes} offered"
        if not lk.matched:
            return "copied logits: no pass has run on x_{i+1} yet, so it has no logits to copy"
        return f"copied logits: x_{{i+1}}'s top-{_setting(trace, 'racer_breadth')} from the last pass on it, {nodes} offered"
    name = SOURCE_NAMES.get(lk.source, lk.source)
    if not lk.matched:
        return f"{name}: x_{{i+1}} does not occur in it"
    if not lk.offered:
        return (f"{name}: {_last(lk.matched)} matched, but no continuation had a probability of "
                f"{_setting(trace, 'suffix_min_prob'):g} or more")
    return f"{name}: {_last(lk.matched)} matched, {nodes} offered"


def nothing_drafted(s: StepRecord) -> str:
    """Why a step whose sources ran drafted no node ("" when it drafted one)."""
    if any(not n.pruned for n in s.tree if n.depth > 0):
        return ""
    offered = sum(lk.offered for lk in s.lookups)
    if offered:
        return f"nothing drafted: the cost tree kept none of the {plural(offered, 'node')} offered, none paid for its time"
    return "nothing drafted: no source offered a node"


def source_words(trace: RunTrace, s: StepRecord) -> str:
    """What each source of the step found, and why the step drafted nothing when it drafted nothing."""
    said = "; ".join(source_found(trace, lk) for lk in s.lookups)
    why = nothing_drafted(s)
    return f"{said}; {why}" if why else said


def source_cell(s: StepRecord) -> str:
    """The debugger's cell: each source's match length (copied logits: held or not), ✓ when it offered nodes."""
    cells = []
    for lk in s.lookups:
        got = ("held" if lk.matched else "none") if lk.source in ("copied", "recycled") else str(lk.matched)
        cells.append(f"{SOURCE_NAMES.get(lk.source, lk.source)} {got} {'✓' if lk.offered else '✗'}")
    return " · ".join(cells)
