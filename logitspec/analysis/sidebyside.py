"""Two runs of one prompt side by side, aligned by output position: which steps covered each output
token in each run, and the first position where one run drafted a token the other had to decode
alone (where they part in retrieval), with each side's outcome there. Pure: traces only."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    short: str = ""  # why the other run decoded parts_at alone: "ended", "guessed other tokens" or "drafted nothing"
    differ: dict[str, tuple] = field(default_factory=dict)  # setting -> (a's value, b's) where one method ran twice

    def words(self) -> str:
        """One line: what sets the runs apart, whether the outputs agree, and where and why the runs part."""
        a, b = self.names
        setting = "; ".join(f"{k} {va} against {vb}" for k, (va, vb) in self.differ.items())
        same = ((f"One method under two settings ({setting}). " if setting else "")
                + (f"The outputs agree for all {self.compared} tokens both reached." if self.output_parting is None
                   else f"The outputs differ from token {self.output_parting.index}."))
        if self.parts_at is None:
            return f"{same} {a} and {b} took the same steps."
        oa, ob = self.outcomes_there
        other, its = (b, ob) if self.drafted_by == a else (a, oa)
        why = ("its lookup found nothing" if its in FAILED else
               {"ended": "its accepted draft ended just before it", "nothing": "it drafted nothing",
                "other": "its draft held other tokens there, which the model rejected"}.get(self.short, "its draft did not reach it"))
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


def settings_apart(a: RunTrace, b: RunTrace) -> dict[str, tuple]:
    """The settings two runs of one method ran under and differ in (none for two methods: the method differs)."""
    if a.method != b.method:
        return {}
    keys = [k for k in a.settings if k in b.settings and a.settings[k] != b.settings[k]]
    return {k: (a.settings[k], b.settings[k]) for k in keys}


def why_short(trace: RunTrace, span: Span) -> str:
    """Why a step's commit ended where it did: nothing drafted, its accepted path had no child ("ended"),
    or it had children the model did not choose ("other")."""
    step = trace.steps[span.step]
    verified = [n for n in step.tree if not n.pruned]
    if len(verified) <= 1:
        return "nothing"
    last = step.accepted_path[-1] if step.accepted_path else 0
    return "other" if any(n.parent == last for n in verified) else "ended"


def side_by_side(a_name: str, a: RunTrace, b_name: str, b: RunTrace) -> SideBySide:
    """The two runs aligned by output position, over the tokens both reached."""
    sa, sb = spans_of(a), spans_of(b)
    apart = settings_apart(a, b)
    n = min(len(a.tokens), len(b.tokens))
    part = parting(Choices.of(a), Choices.of(b), n)
    ra, rb = _root_positions(sa), _root_positions(sb)
    at = next((p for p in range(n) if (p in ra) != (p in rb)), None)
    if at is None:
        return SideBySide((a_name, b_name), (sa, sb), n, part, None, None, None, "", apart)
    drafted = b_name if at in ra else a_name
    ca = _covering(sa, at) if drafted == a_name else _covering(sa, at - 1)
    cb = _covering(sb, at) if drafted == b_name else _covering(sb, at - 1)
    short = why_short(b, cb) if drafted == a_name else why_short(a, ca)
    return SideBySide((a_name, b_name), (sa, sb), n, part, at, drafted, (ca.outcome, cb.outcome), short, apart)
