"""Where retrieval failed across a run, and across a set of runs: pure functions of traces.

Per run: the share of forward steps by retrieval outcome (step.outcome) and by what its draft came
to (step.draft_outcome), tokens per pass, the
longest run of failed steps and where it starts, and the n-grams whose lookup failed. Per set:
the same pooled over every run, and the failures by output position. No torch, no model.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from ..core.trace import (BOTH_FAILED, DRAFT_ACCEPTED, DRAFT_REJECTED, NO_DRAFT, NO_RETRIEVAL, PLD_FAILED, RunTrace,
                          StepRecord)

FAILED = (BOTH_FAILED, PLD_FAILED)  # a step whose every lookup found nothing
POSITION_BUCKET = 16  # output tokens per bucket of the failures-by-position count
TOP_NGRAMS = 5  # failed n-grams a run's row names


def failed(step: StepRecord) -> bool:
    return step.outcome in FAILED


def failed_ngram(trace: RunTrace, step: StepRecord) -> str:
    """The longest n-gram the step's first lookup tried (g1, or prompt lookup's), as text; "" when none."""
    q = next((q for q in step.queries if q.kind != "g2"), None)
    if q is None or not q.ngram:
        return ""
    return "".join(trace.text_of(t) for t in q.ngram)


@dataclass
class RunSummary:
    """One run's retrieval, counted from its trace."""

    method: str
    steps: int  # forward passes
    tokens: int
    outcomes: dict[str, int]  # outcome -> forward steps
    failed_steps: int
    longest_failed: int  # the most failed steps in a row
    longest_failed_at: int | None  # the step index where that run of failures starts
    worst_step: int  # the step a row opens: the start of the longest failure run, else the first step
    failed_ngrams: dict[str, int] = field(default_factory=dict)  # n-gram text -> failed lookups
    failed_positions: list[int] = field(default_factory=list)  # output position of each failed step
    positions: list[int] = field(default_factory=list)  # output position of every forward step
    drafts: dict[str, int] = field(default_factory=dict)  # draft outcome -> forward steps; empty in older set files

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.steps if self.steps else 0.0

    def share(self, outcome: str) -> float:
        return self.outcomes.get(outcome, 0) / self.steps if self.steps else 0.0

    def draft_share(self, outcome: str) -> float:
        return self.drafts.get(outcome, 0) / self.steps if self.steps else 0.0

    @property
    def looks_up(self) -> bool:
        """Whether any step looked something up (vanilla's never do: it has no retrieval to fail)."""
        return any(o != NO_RETRIEVAL for o in self.outcomes)

    @property
    def drafts_nothing(self) -> bool:
        """A run that neither looked anything up nor drafted: every pass made one token."""
        return not self.looks_up and set(self.drafts) <= {NO_DRAFT}

    @property
    def failed_share(self) -> float:
        return self.failed_steps / self.steps if self.steps else 0.0

    def words(self) -> str:
        """The run in one line: tokens, tokens per pass, where retrieval failed and what the drafts came to."""
        head = f"{self.tokens} tokens, {self.tokens_per_pass:.2f} per pass"
        if self.drafts_nothing:
            return f"{head}, no drafting (one token a pass)"
        parts = [f"retrieval found nothing on {self.failed_share:.0%} of steps"] if self.looks_up else []
        if self.drafts:
            parts.append(f"a draft accepted on {self.draft_share(DRAFT_ACCEPTED):.0%}, every draft rejected on "
                         f"{self.draft_share(DRAFT_REJECTED):.0%}, no draft on {self.draft_share(NO_DRAFT):.0%}")
        return "; ".join([head, *parts])

    def top_ngrams(self, n: int = TOP_NGRAMS) -> list[tuple[str, int]]:
        return Counter(self.failed_ngrams).most_common(n)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunSummary":
        return cls(**d)


def summarise_run(trace: RunTrace) -> RunSummary:
    """The run's retrieval counted step by step (forward steps only: a final commit looks nothing up)."""
    outcomes: Counter[str] = Counter()
    drafts: Counter[str] = Counter()
    ngrams: Counter[str] = Counter()
    positions: list[int] = []
    every: list[int] = []
    longest, longest_at, streak, streak_at, pos = 0, None, 0, 0, 0
    for i, s in enumerate(trace.steps):
        if s.forward:
            outcomes[s.outcome] += 1
            drafts[s.draft_outcome] += 1
            every.append(pos)
            if failed(s):
                streak_at = i if streak == 0 else streak_at
                streak += 1
                positions.append(pos)
                if (g := failed_ngram(trace, s)):
                    ngrams[g] += 1
                if streak > longest:
                    longest, longest_at = streak, streak_at
            else:
                streak = 0
        pos += len(s.tokens)
    steps = sum(outcomes.values())
    return RunSummary(trace.method, steps, len(trace.tokens), dict(outcomes), len(positions), longest, longest_at,
                      longest_at if longest_at is not None else 0, dict(ngrams), positions, every, dict(drafts))


@dataclass
class SetSummary:
    """Every run of a set pooled: steps by outcome, tokens per pass and failures by n-gram and position."""

    runs: int
    steps: int
    tokens: int
    outcomes: dict[str, int]
    failed_steps: int
    longest_failed: int
    failed_ngrams: list[tuple[str, int]]  # most failed first
    by_position: list[tuple[int, int, int]]  # (first output position of the bucket, failed steps, steps)
    drafts: dict[str, int] = field(default_factory=dict)  # empty when a run's summary has none (older files)

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.steps if self.steps else 0.0

    def share(self, outcome: str) -> float:
        return self.outcomes.get(outcome, 0) / self.steps if self.steps else 0.0

    def draft_share(self, outcome: str) -> float:
        return self.drafts.get(outcome, 0) / self.steps if self.steps else 0.0

    @property
    def looks_up(self) -> bool:
        return any(o != NO_RETRIEVAL for o in self.outcomes)


def summarise_set(runs: list[RunSummary]) -> SetSummary:
    """The runs pooled; failures by output position in buckets of POSITION_BUCKET tokens."""
    outcomes: Counter[str] = Counter()
    drafts: Counter[str] = Counter()
    ngrams: Counter[str] = Counter()
    failed_at: Counter[int] = Counter()
    for r in runs:
        outcomes.update(r.outcomes)
        drafts.update(r.drafts)
        ngrams.update(r.failed_ngrams)
        failed_at.update(p // POSITION_BUCKET for p in r.failed_positions)
    steps_at: Counter[int] = Counter(p // POSITION_BUCKET for r in runs for p in r.positions)
    buckets = sorted(set(failed_at) | set(steps_at))
    return SetSummary(
        runs=len(runs), steps=sum(r.steps for r in runs), tokens=sum(r.tokens for r in runs), outcomes=dict(outcomes),
        failed_steps=sum(r.failed_steps for r in runs), longest_failed=max((r.longest_failed for r in runs), default=0),
        failed_ngrams=ngrams.most_common(),
        by_position=[(b * POSITION_BUCKET, failed_at[b], steps_at[b]) for b in buckets],
        drafts=dict(drafts) if all(r.drafts for r in runs) else {})

