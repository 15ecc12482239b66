"""What a step's drafts held: the longest stretch of the true continuation on any chain.

Pure Python over the trace types (no torch), shared by the bench and the pictures. Set
beside what the step accepted, it tells a retrieval miss (the drafts never held the right
tokens) from a sizing miss (they held them, the tree did not verify them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.trace import StepRecord


@dataclass
class DraftedMatch:
    """The best drafted chain of a step, measured against the true continuation."""

    length: int  # true tokens after the root found in a row on the chain (0: none)
    kind: str | None  # "g1" | "g2" | "pld" for the chain that held them; None if none did
    rank: int | None  # for g2: the rank of the candidate that starts the chain


def drafted_chains(step: StepRecord) -> list[tuple[str, int | None, list[int]]]:
    """Every chain the step drafted after its root: g1's or PLD's continuation, and each
    candidate followed by its g2 continuation. (kind, candidate rank, tokens)."""
    cands = {c.rank: c.token for c in step.candidates}
    out = []
    for q in step.queries:
        if q.kind == "g2":
            if q.candidate_rank in cands:
                out.append(("g2", q.candidate_rank, [cands[q.candidate_rank], *q.continuation]))
        else:
            out.append((q.kind, None, list(q.continuation)))
    return out


def best_drafted_match(step: StepRecord, after: Sequence[int]) -> DraftedMatch:
    """The chain holding the longest prefix of `after`, the true tokens after the root.
    Ties go to the chain drafted first (g1 before the candidates, by rank)."""
    best = DraftedMatch(0, None, None)
    for kind, rank, chain in drafted_chains(step):
        n = 0
        while n < len(chain) and n < len(after) and chain[n] == after[n]:
            n += 1
        if n > best.length:
            best = DraftedMatch(n, kind, rank)
    return best


def truth_after(steps: Sequence[StepRecord], i: int) -> list[int]:
    """The output tokens after step i's root, to the end of the run."""
    start = sum(len(s.tokens) for s in steps[:i])
    return [t for s in steps for t in s.tokens][start + 1:]


def drafted_per_step(steps: Sequence[StepRecord]) -> list[int]:
    """Each step's share of `drafted_bound`: a forward step's root plus its best drafted match;
    a final step that needed no forward pass, what it committed."""
    output = [t for s in steps for t in s.tokens]
    counts, pos = [], 0
    for s in steps:
        counts.append(1 + best_drafted_match(s, output[pos + 1:]).length if s.forward else len(s.tokens))
        pos += len(s.tokens)
    return counts


def drafted_bound(steps: Sequence[StepRecord]) -> int:
    """Tokens the steps could have committed had each verified every token it drafted:
    per forward step, the root plus its best drafted match; a final step that needed no
    forward pass counts what it committed, as in tokens per pass."""
    return sum(drafted_per_step(steps))
