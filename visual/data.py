"""Plain facts read off a trace, shared by the figures, the tables and the tests."""
from __future__ import annotations

from collections.abc import Sequence

from logitspec.core.trace import (BOTH_FAILED, G1_MATCHED, G2_RESCUED, PLD_FAILED, PLD_MATCHED, QueryRecord, RunTrace,
                                  StepRecord, TreeNode)
from logitspec.core.tree import TreeIndex

from .pieces import TokenPiece, join_pieces, whole_characters
from .style import visible

OUTCOMES_LOGITSPEC = (G1_MATCHED, G2_RESCUED, BOTH_FAILED)
OUTCOMES_PLD = (PLD_MATCHED, PLD_FAILED)


def get_step(trace: RunTrace, step: int) -> StepRecord:
    """The step with index `step` (negative counts from the end, like a list)."""
    n = len(trace.steps)
    if not n:
        raise IndexError("the trace holds no steps yet")
    if not -n <= step < n:
        raise IndexError(f"step {step} is out of range: the trace has steps 0..{n - 1}")
    return trace.steps[step]


def step_position(trace: RunTrace, step: int) -> int:
    return step % len(trace.steps) if trace.steps else 0


def _tail_bytes(trace: RunTrace, before: Sequence[int]) -> bytes:
    """The last few bytes of `before`: enough to hold any character still unfinished there."""
    out = b""
    for t in reversed(before):
        if len(out) >= 4:
            break
        out = trace.bytes_of(t) + out
    return out


def token_pieces(trace: RunTrace, tokens: Sequence[int], before: Sequence[int] = (),
                 final: bool = True) -> list[TokenPiece]:
    """One display piece per token: the tokens' bytes joined after `before` and decoded in order,
    so a character split across tokens shows whole at the token that completes it."""
    return join_pieces([trace.bytes_of(t) for t in tokens], _tail_bytes(trace, before), final)


def has_split_characters(trace: RunTrace) -> bool:
    """Whether a token the run drew (its output, a tree node or a candidate) holds part of a
    character, which a token drawn alone shows as ‹hex›."""
    tokens = set(trace.tokens)
    for s in trace.steps:
        tokens.update(n.token for n in s.tree)
        tokens.update(c.token for c in s.candidates)
    return not all(whole_characters(trace.bytes_of(t)) for t in tokens)


def token_labels(trace: RunTrace, tokens: Sequence[int], before: Sequence[int] = (),
                 final: bool = True) -> list[str]:
    """`token_pieces` as visible labels: whitespace shown, ‹hex› for bytes of a character a later token ends."""
    return [visible(p.label()) for p in token_pieces(trace, tokens, before, final)]


def tok(trace: RunTrace, token: int, before: Sequence[int] = ()) -> str:
    """A token as visible text (spaces ·, newlines ⏎); a part of a character alone shows as ‹hex›."""
    return token_labels(trace, [token], before)[0]


def ngram_text(trace: RunTrace, tokens: Sequence[int], before: Sequence[int] = ()) -> str:
    """An n-gram as «tok|tok|tok», whitespace visible, token boundaries marked."""
    return "«" + "|".join(token_labels(trace, tokens, before)) + "»"


def ngram_before(seq: Sequence[int], ngram: Sequence[int]) -> list[int]:
    """What precedes an n-gram that is the tail of `seq` (nothing when it is not its tail)."""
    n = len(ngram)
    return list(seq[:-n]) if n and list(seq[-n:]) == list(ngram) else []


def context_before(trace: RunTrace, step: int) -> list[int]:
    """The tokens the step's lookups searched: the prompt plus everything generated before it."""
    i = step_position(trace, step)
    return list(trace.prompt_tokens) + [t for s in trace.steps[:i] for t in s.tokens]


def true_next_next(trace: RunTrace, step: int) -> int | None:
    """The token the output really has after this step's root x_{i+1}, once known."""
    i = step_position(trace, step)
    s = trace.steps[i]
    if len(s.tokens) >= 2:
        return s.tokens[1]
    if s.bonus is not None:
        return s.bonus
    if i + 1 < len(trace.steps):
        return trace.steps[i + 1].tokens[0]
    return None


def matched_attempt(q: QueryRecord):
    for a in q.attempts:
        if a.matched:
            return a
    return None


def outcome(step: StepRecord) -> str:
    """Retrieval outcome of a step (`StepRecord.outcome`)."""
    return step.outcome


def forward_steps(trace: RunTrace) -> list[StepRecord]:
    return [s for s in trace.steps if s.forward]


def is_finished(trace: RunTrace) -> bool:
    """A run is over when its last step has no bonus (EOS or the token budget reached)."""
    return bool(trace.steps) and trace.steps[-1].bonus is None


def candidate_by_rank(step: StepRecord) -> dict[int, object]:
    return {c.rank: c for c in step.candidates}


def candidate_words(trace: RunTrace, rank: int | None) -> str:
    """'candidate rank r'; the hybrid's recycled candidate (ranked past the logits' k) by its rank in the row."""
    k = trace.settings.get("k")
    if trace.method == "logitspec+recycling" and isinstance(k, int) and rank is not None and rank > k:
        return f"recycled candidate, rank {rank - k} in the root's matrix row"
    return f"candidate rank {rank}"


def g2_query_of_rank(step: StepRecord) -> dict[int, QueryRecord]:
    return {q.candidate_rank: q for q in step.queries if q.kind == "g2" and q.candidate_rank is not None}


def query_tail(step: StepRecord, q: QueryRecord, ctx: Sequence[int]) -> list[int]:
    """The tokens whose tail the query's n-grams are: context + x_{i+1} (+ the candidate, for g2)."""
    seq = list(ctx) + [step.root]
    if q.kind == "g2":
        c = candidate_by_rank(step).get(q.candidate_rank)
        seq += [c.token] if c is not None else []
    return seq


# How the baselines' one lookup a step reads (logitspec.drafters.lookahead, logitspec.drafters.rest).
BASELINE_QUERIES = {"lookahead": "Lookahead's pool: the n-grams its Jacobi window made that start with x_{i+1}",
                    "rest": "REST: the continuations of the context's longest suffix found in the datastore"}


def query_name(trace: RunTrace, step: StepRecord, qi: int | None, ctx: Sequence[int] = ()) -> str:
    if qi is None or not 0 <= qi < len(step.queries):
        return "none (the root is the previous pass's argmax)"
    q = step.queries[qi]
    if q.kind == "g1":
        return "g1: look up what followed x_{i+1} before"
    if q.kind == "pld":
        return "prompt lookup: what followed the last tokens before"
    if q.kind in BASELINE_QUERIES:
        return BASELINE_QUERIES[q.kind]
    c = candidate_by_rank(step).get(q.candidate_rank)
    ctext = f" {ngram_text(trace, [c.token], list(ctx) + [step.root])}" if c is not None else ""
    return f"g2 for candidate rank {q.candidate_rank}{ctext}"


def match_text(trace: RunTrace, q: QueryRecord, seq: Sequence[int] = ()) -> str:
    """The query's verdict in words; `seq` (see query_tail) lets the n-gram join the text before it."""
    a = matched_attempt(q)
    if q.kind == "lookahead":  # the pool is keyed by the root alone
        return "the pool held n-grams starting with it" if a else "the pool held no n-gram starting with it"
    if a is None:
        tried = ", ".join(f"{x.n}-gram" for x in q.attempts) or "nothing to try"
        return f"no match (tried {tried})"
    if q.kind == "rest":  # found in the datastore, not in the context
        return f"found the {a.n}-token suffix {ngram_text(trace, a.ngram, ngram_before(seq, a.ngram))} in the datastore"
    return f"matched the {a.n}-gram {ngram_text(trace, a.ngram, ngram_before(seq, a.ngram))} at context position {q.match_pos}"


def branch_nodes(step: StepRecord, qi: int) -> list[tuple[int, TreeNode | None]]:
    """The tokens a query's continuation put into the tree, each with its node (None: not used).

    For g2 the candidate itself comes first. Follows the trie from the root, so prefixes
    shared with another branch are found too.
    """
    q = step.queries[qi]
    if q.kind == "g2":
        cand = candidate_by_rank(step).get(q.candidate_rank)
        branch = ([cand.token] if cand is not None else []) + list(q.continuation)
    else:
        branch = list(q.continuation)
    node_of = {n.id: n for n in step.tree}
    ids = TreeIndex.of(step.tree).follow(branch)
    return [(t, None if i is None else node_of[i]) for t, i in zip(branch, ids)]
