"""One step of a run in words: which step is worth explaining (`choose_step`, and by which
rule), and each of its six panels' title and two sentences (`title_of`, `sentences`), every
number read off the step's trace (`StepFacts`), so no sentence can say what the step did not do.
"""
from __future__ import annotations

from dataclasses import dataclass

from logitspec.analysis.drafts import drafted_chains
from logitspec.core.trace import G2_RESCUED, QueryRecord, RunTrace, StepRecord

from .counts import drafts_accepted_words, plural, run_counts
from .data import (
    branch_nodes, candidate_by_rank, context_before, g2_query_of_rank, get_step, matched_attempt, ngram_before,
    ngram_text, outcome, query_tail, step_position, true_next_next,
)
from .trie import drafted_graph

MIN_ACCEPTED = 3  # the chooser's bar: tokens one step committed (root included)


@dataclass
class StepChoice:
    """The step to explain and the rule that picked it, in words."""

    step: int
    rule: str
    preferred: bool  # False when no step met the preferred rule and a fallback chose


# ---------------------------------------------------------------- choosing the step

PREFERRED_RULE = (f"g1 found nothing, a g2 lookup rescued the step, and it committed ≥ {MIN_ACCEPTED} tokens "
                  f"(x_{{i+1}} + ≥ {MIN_ACCEPTED - 1} draft tokens accepted)")


def _most(trace: RunTrace, steps: list[int]) -> int:
    """The step that committed the most tokens; the earliest on a tie."""
    return max(steps, key=lambda i: (len(trace.steps[i].tokens), -i))


def _committed(s: StepRecord) -> str:
    """'7: x_{i+1} + 6 draft tokens accepted', as every tab counts a step."""
    return f"{len(s.tokens)}: x_{{i+1}} + {drafts_accepted_words(s.drafts_accepted)}"


def choose_step(trace: RunTrace) -> StepChoice:
    """A step where g2 rescued a failed g1 and ≥ 3 tokens were committed (the most, if several);
    else the g2-rescued step that accepted the most drafts; else the step that committed the most."""
    forward = [i for i, s in enumerate(trace.steps) if s.forward] or list(range(len(trace.steps)))
    if not forward:
        raise IndexError("the trace holds no steps yet")
    rescued = [i for i in forward if outcome(trace.steps[i]) == G2_RESCUED]
    strong = [i for i in rescued if len(trace.steps[i].tokens) >= MIN_ACCEPTED]
    if strong:
        i = _most(trace, strong)
        return StepChoice(i, f"picked by the rule: {PREFERRED_RULE} ({plural(len(strong), 'step')} qualified; this "
                             f"one committed the most, {_committed(trace.steps[i])})", True)
    accepting = [i for i in rescued if trace.steps[i].drafts_accepted >= 1]
    if accepting:
        i = _most(trace, accepting)
        return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}); shown instead: the step where g2 rescued a "
                             f"failed g1 and the most tokens were committed ({_committed(trace.steps[i])})", False)
    i = _most(trace, forward)
    return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}), and {_rescues(run_counts(trace).g2_rescued)}; "
                         f"shown instead: the step that committed the most tokens ({_committed(trace.steps[i])})",
                      False)


def _rescues(n: int) -> str:
    """What the run's g2 rescues came to, when none of them accepted a draft token."""
    if not n:
        return "g2 never rescued a failed g1 in this run"
    return (f"g2 rescued a failed g1 at {plural(n, 'step')} of this run, but {'it' if n == 1 else 'none of them'} "
            "accepted a draft token")


# ---------------------------------------------------------------- facts and sentences


@dataclass
class StepFacts:
    """What the sentences say, read once from the step."""

    trace: RunTrace
    i: int
    s: StepRecord
    ctx: list[int]
    truth: int | None  # the true x_{i+2}, when known
    truth_rank: int | None
    g1: QueryRecord | None
    g1_index: int | None
    truth_query: QueryRecord | None
    truth_query_index: int | None

    def t(self, tokens: list[int], before: list[int] | None = None) -> str:
        return ngram_text(self.trace, tokens, self.ctx if before is None else before)

    @property
    def after_root(self) -> list[int]:
        return self.ctx + [self.s.root]


def step_facts(trace: RunTrace, step: int) -> StepFacts:
    s = get_step(trace, step)
    truth = true_next_next(trace, step)
    rank = next((c.rank for c in s.candidates if c.token == truth), None) if truth is not None else None
    g1i = next((qi for qi, q in enumerate(s.queries) if q.kind in ("g1", "pld")), None)
    tq = g2_query_of_rank(s).get(rank) if rank is not None else None
    return StepFacts(trace=trace, i=step_position(trace, step), s=s, ctx=context_before(trace, step), truth=truth,
                     truth_rank=rank, g1=s.queries[g1i] if g1i is not None else None, g1_index=g1i,
                     truth_query=tq, truth_query_index=s.queries.index(tq) if tq is not None else None)


def _tried(f: StepFacts, q: QueryRecord) -> str:
    seq = query_tail(f.s, q, f.ctx)
    parts = [f"the {a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))}" for a in q.attempts]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _branch_counts(f: StepFacts, qi: int) -> tuple[int, int]:
    """(verified, accepted) tokens of a query's branch in the tree."""
    on_path = set(f.s.accepted_path)
    nodes = [nd for _, nd in branch_nodes(f.s, qi) if nd is not None and not nd.pruned]
    return len(nodes), sum(nd.id in on_path for nd in nodes)


def logits_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    p = f" (probability {s.root_prob:.3g})" if s.root_prob is not None else ""
    temp = f.trace.settings.get("temperature") or 0
    how = f"drew x_{{i+1}} = {f.t([s.root])} (sampling at temperature {temp:g})" if temp else \
        f"chose x_{{i+1}} = {f.t([s.root])} as their argmax"
    first = f"The last forward pass's logits {how}{p}, so step {f.i} commits it whatever happens to the drafts."
    k = len(s.candidates)
    if not k:
        return first, "This step took no next-next guesses from the logits (no forward pass drafted any)."
    head = f"The {k} most likely other tokens in the same logits are guesses for the token after it"
    if f.truth is None:
        return first, head + "; which one was right is not known, as the run ended here."
    if f.truth_rank is None:
        return first, head + f"; the true x_{{i+2}}, {f.t([f.truth], f.after_root)}, was not among them."
    c = candidate_by_rank(s)[f.truth_rank]
    return first, head + (f"; the true x_{{i+2}}, {f.t([f.truth], f.after_root)}, was guess {f.truth_rank} "
                          f"(probability {c.prob:.3g}).")


def lookup_sentences(f: StepFacts, q: QueryRecord | None, qi: int | None, name: str) -> tuple[str, str]:
    """g1's (or prompt lookup's) sentences; `name` says which lookup it was."""
    if q is None or qi is None:
        return f"This step made no {name} lookup.", "So nothing was retrieved for it."
    if not q.attempts:
        return f"{name} had nothing to try: the context was too short.", "So it drafted nothing."
    a = matched_attempt(q)
    if a is None:
        g2 = [x for x in f.s.queries if x.kind == "g2"]
        first = f"{name} looked for {_tried(f, q)}; none had occurred earlier in the {len(f.ctx)}-token context."
        if not g2:
            return first, f"So {name} drafted nothing, and the tree holds the root alone."
        return first, (f"So {name} drafted nothing: every branch of this step's tree starts with a next-next "
                       f"guess, and {sum(x.matched for x in g2)} of the {len(g2)} g2 lookups found a continuation.")
    seq = query_tail(f.s, q, f.ctx)
    first = (f"{name} looked for the n-grams ending in x_{{i+1}}, longest first, and the {a.n}-gram "
             f"{ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))} matched at position {q.match_pos} of the "
             f"{len(f.ctx)}-token context.")
    ver, acc = _branch_counts(f, qi)
    return first, (f"The {plural(len(q.continuation), 'token')} that followed it there, "
                   f"{f.t(q.continuation, f.after_root)}, became {name}'s branch: {ver} verified, {acc} accepted.")


def g2_sentences(f: StepFacts) -> tuple[str, str]:
    if f.truth is None:
        return ("The run ended at this step, so which guess was right is not known.",
                "The g2 lookups are listed in the Step explorer's retrieval panel.")
    truth = f.t([f.truth], f.after_root)
    if f.truth_rank is None:
        g2 = [q for q in f.s.queries if q.kind == "g2"]
        on = {nd.origin for nd in f.s.tree if nd.id in set(f.s.accepted_path[1:])}
        where = ("; the accepted drafts came from g1's branch" if on & {"g1", "pld"}
                 else "; no draft could be accepted")
        return (f"The true x_{{i+2}}, {truth}, was not among the {len(f.s.candidates)} guesses, so no g2 lookup "
                "could draft it.", f"Of the {len(g2)} g2 lookups, {sum(q.matched for q in g2)} found a "
                                   f"continuation{where}.")
    q, qi = f.truth_query, f.truth_query_index
    if q is None:
        return (f"The right guess, {truth}, was rank {f.truth_rank}, but the trace records no g2 lookup for it.",
                "So its branch, if any, is the guess alone.")
    ver, acc = _branch_counts(f, qi)
    a = matched_attempt(q)
    if a is None:
        return (f"The right guess, {truth} (rank {f.truth_rank}), got its own lookup g2, which tried "
                f"{_tried(f, q)}; none had occurred earlier.",
                f"So its branch is the guess alone: {ver} verified, {acc} accepted.")
    seq = query_tail(f.s, q, f.ctx)
    return (f"The right guess, {truth} (rank {f.truth_rank}), got its own lookup, g2, over the n-grams ending "
            f"with it after x_{{i+1}}: the {a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))} "
            f"matched at position {q.match_pos}.",
            f"Its branch, the guess and the {plural(len(q.continuation), 'token')} that followed it there, put "
            f"{ver} tokens into the verified tree, {acc} of them accepted.")


def tree_sentences(f: StepFacts) -> tuple[str, str]:
    if not f.s.tree or not f.s.forward:
        return ("This step drafted no tree: it needed no forward pass.", "So nothing was pruned.")
    d = drafted_graph(f.trace, f.i)
    drafted = d.number_of_nodes()
    fetched = sum(len(c) for _, _, c in drafted_chains(f.s))
    verified = sum(not n.pruned for n in f.s.tree)
    saved = fetched - (drafted - 1)
    first = (f"The lookups' branches hold {plural(fetched, 'draft token')} in all; merged under the root into a "
             f"trie they make {drafted} nodes, root included" +
             (f": branches that share a prefix share its nodes, saving {saved}." if saved
              else "; no two branches shared a prefix."))
    mode = f.s.sizing.mode if f.s.sizing is not None else f.trace.settings.get("tree", "static")
    how = ("by expected gain per modelled second (cost-aware sizing)" if mode == "cost"
           else f"by the paper's rule (branch length by rank, capacity {f.trace.settings.get('capacity', '?')})")
    return first, (f"Pruning {how} kept {verified} of the {drafted} for the one forward pass and cut "
                   f"{drafted - verified}.")


def verify_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    if not s.forward:
        return ("This step needed no forward pass: its root was the last token the run wanted.",
                "So nothing was verified.")
    verified = [n for n in s.tree if not n.pruned]
    first = (f"One forward pass scored all {plural(len(verified), 'verified token')} at once: each saw the "
             f"{s.context_len}-token cache and its own ancestors only (a tree attention mask), at position id "
             f"{s.context_len} + its depth.")
    drafts = s.drafts_accepted
    if s.bonus is None:
        return first, (f"Walking from the root, the model agreed with {plural(drafts, 'drafted token')} "
                       f"({drafts_accepted_words(drafts)}); the run ended after them.")
    last = s.accepted_path[-1] if s.accepted_path else 0
    kids = [n for n in s.tree if n.parent == last]
    held = [n for n in kids if n.token == s.bonus]
    after = f"after {f.t([s.tokens[-1]], f.ctx + list(s.tokens[:-1]))} it chose {f.t([s.bonus], f.ctx + list(s.tokens))}"
    ver = [n for n in kids if not n.pruned]
    if held and held[0].pruned:
        why = "which was drafted there but pruned before verification"
    elif not ver:
        why = "where no verified draft token followed"
    elif len(ver) == 1:
        why = "which the one verified token drafted there was not"
    else:
        why = f"which none of the {len(ver)} verified tokens drafted there was"
    if not drafts:
        return first, (f"At the root the model chose {f.t([s.bonus], f.ctx + list(s.tokens))}, {why}, so no draft "
                       f"was accepted ({drafts_accepted_words(0)}).")
    return first, (f"Walking from the root, the model's own choice matched a drafted token {plural(drafts, 'time')} "
                   f"in a row ({drafts_accepted_words(drafts)}); {after}, {why}.")


def accept_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    n = len(s.tokens)
    if n == 1:
        first = (f"Step {f.i} committed 1 token, x_{{i+1}} alone ({drafts_accepted_words(0)}), so this pass did "
                 "what plain decoding does.")
    else:
        first = (f"Step {f.i} committed {n} tokens (x_{{i+1}} + {drafts_accepted_words(s.drafts_accepted)}), "
                 f"{f.t(s.tokens)}, in one forward pass, where plain decoding would need {n} passes.")
    if s.bonus is None:
        return first, "There is no bonus token: the run ended with this step."
    return first, (f"The model's choice after the last accepted token, {f.t([s.bonus], f.ctx + list(s.tokens))}, "
                   f"comes free with the same pass: it is the root of step {f.i + 1}.")


def sentences(trace: RunTrace, step: int) -> dict[str, tuple[str, str]]:
    """The two sentences of every panel, by panel key."""
    f = step_facts(trace, step)
    name = "prompt lookup" if f.g1 is not None and f.g1.kind == "pld" else "g1"
    return {"logits": logits_sentences(f), "g1": lookup_sentences(f, f.g1, f.g1_index, name),
            "g2": g2_sentences(f), "tree": tree_sentences(f), "verify": verify_sentences(f),
            "accept": accept_sentences(f)}


TITLES = {
    "logits": "1 · The last logits and the next-next guesses",
    "g1": "2 · g1: what followed x_{i+1} before?",
    "g2": "3 · g2 for the guess that was right",
    "tree": "4 · The tree before and after pruning",
    "verify": "5 · Verification: one forward pass",
    "accept": "6 · The accepted path and the bonus",
}


def title_of(f: StepFacts, key: str) -> str:
    """A panel's title at this step: g2's says so when no guess was right, or none is known."""
    if key == "g2" and f.truth is None:
        return "3 · g2: which guess was right is not known"
    if key == "g2" and f.truth_rank is None:
        return "3 · g2: no guess was right"
    return TITLES[key]
