"""Plain facts read off a trace, shared by the figures, the tables and the tests."""
from __future__ import annotations

from collections.abc import Sequence

from logitspec.trace import QueryRecord, RunTrace, StepRecord, TreeNode

from .style import visible

# Retrieval outcome of one forward step.
G1_MATCHED, G2_RESCUED, BOTH_FAILED = "g1 matched", "g2 rescued", "both failed"
PLD_MATCHED, PLD_FAILED = "matched", "failed"
NO_RETRIEVAL = "no retrieval"
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


def tok(trace: RunTrace, token: int) -> str:
    """A token as visible text: spaces ·, newlines ⏎."""
    return visible(trace.text_of(token))


def ngram_text(trace: RunTrace, tokens: Sequence[int]) -> str:
    """An n-gram as «tok|tok|tok», whitespace visible, token boundaries marked."""
    return "«" + "|".join(tok(trace, t) for t in tokens) + "»"


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
    """Retrieval outcome of a step: g1 matched / g2 rescued / both failed (pld: matched / failed)."""
    if not step.queries:
        return NO_RETRIEVAL
    first = step.queries[0]
    if first.kind == "pld":
        return PLD_MATCHED if first.matched else PLD_FAILED
    g1 = next((q for q in step.queries if q.kind == "g1"), None)
    if g1 is not None and g1.matched:
        return G1_MATCHED
    if any(q.matched for q in step.queries if q.kind == "g2"):
        return G2_RESCUED
    return BOTH_FAILED


def forward_steps(trace: RunTrace) -> list[StepRecord]:
    return [s for s in trace.steps if s.forward]


def is_finished(trace: RunTrace) -> bool:
    """A run is over when its last step has no bonus (EOS or the token budget reached)."""
    return bool(trace.steps) and trace.steps[-1].bonus is None


def candidate_by_rank(step: StepRecord) -> dict[int, object]:
    return {c.rank: c for c in step.candidates}


def g2_query_of_rank(step: StepRecord) -> dict[int, QueryRecord]:
    return {q.candidate_rank: q for q in step.queries if q.kind == "g2" and q.candidate_rank is not None}


def query_name(trace: RunTrace, step: StepRecord, qi: int | None) -> str:
    if qi is None or not 0 <= qi < len(step.queries):
        return "none (the root is the previous pass's argmax)"
    q = step.queries[qi]
    if q.kind == "g1":
        return "g1: look up what followed x_{i+1} before"
    if q.kind == "pld":
        return "prompt lookup: what followed the last tokens before"
    c = candidate_by_rank(step).get(q.candidate_rank)
    ctext = f" {ngram_text(trace, [c.token])}" if c is not None else ""
    return f"g2 for candidate rank {q.candidate_rank}{ctext}"


def match_text(trace: RunTrace, q: QueryRecord) -> str:
    a = matched_attempt(q)
    if a is None:
        tried = ", ".join(f"{x.n}-gram" for x in q.attempts) or "nothing to try"
        return f"no match (tried {tried})"
    return f"matched the {a.n}-gram {ngram_text(trace, a.ngram)} at context position {q.match_pos}"


def node_status(step: StepRecord, node: TreeNode) -> str:
    if node.pruned:
        return "pruned"
    return "accepted" if node.id in set(step.accepted_path) else "rejected"


def branch_nodes(step: StepRecord, qi: int) -> list[tuple[int, TreeNode | None]]:
    """The tokens a query's continuation put into the tree, each with its node (None: not used).

    For g2 the candidate itself comes first. Follows the trie from the root, so prefixes
    shared with another branch are found too.
    """
    q = step.queries[qi]
    child = {(n.parent, n.token): n for n in step.tree if n.parent >= 0}
    if q.kind == "g2":
        cand = candidate_by_rank(step).get(q.candidate_rank)
        branch = ([cand.token] if cand is not None else []) + list(q.continuation)
    else:
        branch = list(q.continuation)
    out: list[tuple[int, TreeNode | None]] = []
    parent: int | None = 0
    for t in branch:
        node = child.get((parent, t)) if parent is not None else None
        out.append((t, node))
        parent = node.id if node is not None else None
    return out
