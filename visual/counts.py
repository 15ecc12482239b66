"""Every count a page states about a run, read once from its trace, and the words for them.

The race's counters, the step explorer, the retrieval debugger, the Explain tab and the
verdict all say how many tokens a run made, in how many passes, how many drafts it
accepted and what its retrieval found; each takes those numbers from `run_counts`, so no
two tabs can disagree. One vocabulary throughout:

- a step *commits* its root x_{i+1} (always) and the draft tokens it *accepted*;
- a run's *tokens* are its output; its *forward passes* exclude the prefill and a final
  commit that needed no pass, so a run may have one step more than passes;
- the drafts *held* an output token when some step's drafted chain, read from that step's
  root, matched the output up to that token; each output token counts once, so what the
  drafts held never exceeds the output.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from logitspec.analysis.drafts import drafted_per_step
from logitspec.core.trace import BOTH_FAILED, G1_MATCHED, G2_RESCUED, RunTrace, StepRecord

PASSES = "forward passes"


@dataclass
class RunCounts:
    """The numbers every tab states about one run (or the steps of it decoded so far)."""

    tokens: int  # output tokens: every step's committed tokens
    passes: int  # forward passes after the prefill
    steps: int  # step records: the passes, plus a final commit that needed no pass
    drafts_accepted: int  # draft tokens accepted, each step's root left out
    drafts_held: int  # output tokens the drafts held (module docstring), at most `tokens`
    outcomes: dict[str, int] = field(default_factory=dict)  # retrieval outcome -> forward passes

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0

    @property
    def g1_matched(self) -> int:
        return self.outcomes.get(G1_MATCHED, 0)

    @property
    def g2_rescued(self) -> int:
        return self.outcomes.get(G2_RESCUED, 0)

    @property
    def both_failed(self) -> int:
        return self.outcomes.get(BOTH_FAILED, 0)


def held_tokens(steps: Sequence[StepRecord], forward: Sequence[int], drafted: Sequence[int]) -> int:
    """Output tokens the drafts held, each counted once. `forward`: indices of forward steps;
    `drafted`: each one's root + best drafted match (drafts.drafted_per_step, or a what-if replay)."""
    start, starts = 0, []
    for s in steps:
        starts.append(start)
        start += len(s.tokens)
    held: set[int] = set()
    for i, n in zip(forward, drafted):
        # A step's root is the model's own choice, not a draft: its match starts one further.
        held.update(range(starts[i] + 1, min(starts[i] + n, start)))
    return len(held)


def run_counts(trace: RunTrace, upto: int | None = None) -> RunCounts:
    """The run's counts; with `upto`, those of its steps 0..upto (what the run had by then)."""
    steps = trace.steps if upto is None else trace.steps[: upto + 1]
    fwd = [i for i, s in enumerate(steps) if s.forward]
    drafted = drafted_per_step(steps)
    return RunCounts(
        tokens=sum(len(s.tokens) for s in steps),
        passes=len(fwd),
        steps=len(steps),
        drafts_accepted=sum(s.drafts_accepted for s in steps),
        drafts_held=held_tokens(steps, fwd, [drafted[i] for i in fwd]),
        outcomes=dict(Counter(steps[i].outcome for i in fwd)),
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def passes_words(n: int) -> str:
    """'1 forward pass', '73 forward passes'."""
    return plural(n, "forward pass", PASSES)


def run_words(c: RunCounts) -> str:
    """'128 tokens in 73 forward passes': how every tab says what a run made."""
    return f"{plural(c.tokens, 'token')} in {passes_words(c.passes)}"


def drafts_accepted_words(n: int) -> str:
    """'0 draft tokens accepted', '1 draft token accepted'."""
    return f"{plural(n, 'draft token')} accepted"
