"""Two runs of one prompt side by side, aligned by output position: which steps covered each output
token in each run, and the first position where one run drafted a token the other had to decode
alone (where they part in retrieval), with each side's outcome there. Pure: traces only."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.trace import RunTrace
from .failures import FAILED
from .parting import Choices, Parting, parting


@dataclass
class Span:
    """One forward step's share of the output: positions [start, start + length)."""

    step: int
    start: int
    length: int
    outcome: str


@dataclass
class SideBySide:
    names: tuple[str, str]
    spans: tuple[list[Span], list[Span]]
    compared: int  # output tokens both runs reached
    output_parting: Parting | None  # where the outputs themselves differ (None: identical, as lossless runs are)
    parts_at: int | None  # first output position one run drafted and the other decoded as a root
    drafted_by: str | None  # the run that drafted the token there
    # Each run's outcome at the step that could draft parts_at: the drafter's step covering it, and the
    # other run's step just before it (its draft ended there)
    outcomes_there: tuple[str, str] | None

    def words(self) -> str:
        """One line: whether the outputs agree, and where and why the runs part."""
        a, b = self.names
        same = (f"The outputs agree for all {self.compared} tokens both reached." if self.output_parting is None
                else f"The outputs differ from token {self.output_parting.index}.")
        if self.parts_at is None:
            return f"{same} {a} and {b} took the same steps."
        oa, ob = self.outcomes_there
        other, its = (b, ob) if self.drafted_by == a else (a, oa)
        why = "its lookup found nothing" if its in FAILED else "its draft stopped short of it or was rejected"
        return (f"{same} They part at output token {self.parts_at}: {self.drafted_by} drafted it and {other} "
                f"decoded it alone ({other}'s step: {its}, {why}; {self.drafted_by}'s: {oa if other == b else ob}).")


def spans_of(trace: RunTrace) -> list[Span]:
    """Each step's output positions; a final commit with no forward pass included."""
    out, pos = [], 0
    for i, s in enumerate(trace.steps):
        out.append(Span(i, pos, len(s.tokens), s.outcome))
        pos += len(s.tokens)
    return out


def _root_positions(spans: list[Span]) -> set[int]:
    """Positions a step decoded as its root: the first token of each step."""
    return {s.start for s in spans if s.length}


def _covering(spans: list[Span], pos: int) -> Span:
    return next(s for s in spans if s.start <= pos < s.start + s.length)


def side_by_side(a_name: str, a: RunTrace, b_name: str, b: RunTrace) -> SideBySide:
    """The two runs aligned by output position, over the tokens both reached."""
    sa, sb = spans_of(a), spans_of(b)
    n = min(len(a.tokens), len(b.tokens))
    part = parting(Choices.of(a), Choices.of(b), n)
    ra, rb = _root_positions(sa), _root_positions(sb)
    at = next((p for p in range(n) if (p in ra) != (p in rb)), None)
    if at is None:
        return SideBySide((a_name, b_name), (sa, sb), n, part, None, None, None)
    drafted = b_name if at in ra else a_name
    oa = (_covering(sa, at) if drafted == a_name else _covering(sa, at - 1)).outcome
    ob = (_covering(sb, at) if drafted == b_name else _covering(sb, at - 1)).outcome
    return SideBySide((a_name, b_name), (sa, sb), n, part, at, drafted, (oa, ob))
