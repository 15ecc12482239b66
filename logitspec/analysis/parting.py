"""Where a decoder's output parts from vanilla's, and whether a near-tie explains it.

Two decoders that compute the same logits choose the same tokens. Kernels that sum a row in
another order (a tree pass's stock kernels, or a GPU's) change the logits' last bits, and at a
near-tie (two tokens whose scores lie a few units in the last place apart) that can flip the
choice. A parting is a near-tie when, at the first token that differs, each decoder's runner-up
is the other's choice and the two leads add up to at most NEAR_TIE_ULPS: the two swapped the
top two by no more than their kernels' rounding. Anything else is a real difference (a bug).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.trace import RunTrace, StepRecord

# How far apart, in ulps of the logits' dtype, two runs' leads may add up to at a near-tie:
# twice the largest difference measured between two kernels' logits (a tree pass on the stock
# kernels against one-token passes, bundled model): 24 ulps in float32, 4 in bfloat16 and
# float16 (docs/exactness.md). A swap of the top two moves both logits by at most that much.
NEAR_TIE_ULPS = {"float32": 48.0, "bfloat16": 8.0, "float16": 8.0}


@dataclass(frozen=True)
class Parting:
    """The first output token at which a lane's choice was not the baseline's."""

    index: int  # 0-based token index; equal to the shorter output's length when one just ended sooner
    near_tie: bool
    lead: float | None = None  # the baseline's lead at `index`, ulps
    lane_lead: float | None = None  # the lane's lead there
    dtype: str = "float32"


def first_difference(a: list[int], b: list[int], n: int) -> int | None:
    """The first index below `n` where the two token lists differ, or None."""
    return next((i for i in range(n) if a[i] != b[i]), None)


@dataclass(frozen=True)
class Choices:
    """A run's output tokens with each one's lead and runner-up when it was chosen."""

    tokens: list[int]
    leads: list[float | None]  # empty when the run did not record them (older traces)
    runners_up: list[int]
    dtype: str = "float32"

    @classmethod
    def of_steps(cls, steps: list[StepRecord], dtype: str) -> "Choices":
        tokens = [t for s in steps for t in s.tokens]
        if any(len(s.leads) != len(s.tokens) for s in steps):
            return cls(tokens, [], [], dtype)
        return cls(tokens, [x for s in steps for x in s.leads], [r for s in steps for r in s.runners_up], dtype)

    @classmethod
    def of(cls, trace: RunTrace) -> "Choices":
        return cls.of_steps(trace.steps, trace.dtype)


def parting(lane: Choices, base: Choices, n: int, both_ended: bool = False) -> Parting | None:
    """Where `lane` parts from `base` within their first `n` tokens; None where they agree. With
    `both_ended`, two runs that agree but end at different lengths part at the shorter's end."""
    n = min(n, len(lane.tokens), len(base.tokens))
    at = first_difference(lane.tokens, base.tokens, n)
    if at is None:
        if both_ended and len(lane.tokens) != len(base.tokens):
            return Parting(n, False, dtype=base.dtype)
        return None
    return Parting(at, *_near_tie(lane, base, at), dtype=base.dtype)


def _near_tie(lane: Choices, base: Choices, at: int) -> tuple[bool, float | None, float | None]:
    if at >= min(len(lane.leads), len(base.leads)):
        return False, None, None
    mine, theirs = lane.leads[at], base.leads[at]
    tol = NEAR_TIE_ULPS.get(base.dtype, NEAR_TIE_ULPS["float32"])
    swapped = lane.runners_up[at] == base.tokens[at] and base.runners_up[at] == lane.tokens[at]
    close = mine is not None and theirs is not None and mine + theirs <= tol
    return swapped and close, theirs, mine


def near_tie_words(p: Parting) -> str:
    """'a near-tie: the top two tokens there were 0 and 1 units in the last place of bfloat16
    apart in the two runs, ...' (the baseline's lead first, each rounded to a whole ulp)."""
    ulps = " and ".join(f"{x:.0f}" for x in (p.lead, p.lane_lead) if x is not None)
    return (f"a near-tie: the top two tokens there were {ulps} units in the last place of {p.dtype} "
            "apart in the two runs, which summing in another order can swap")
