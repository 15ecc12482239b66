"""Where each method wins: a recorded race's winner and the one sentence that says why, read off
its traces. Tokens per pass decide the winner (counts, the same on any hardware), and the sentence
ends with the speed it measured where it ran, beside the fastest lane's: the most tokens a pass is
not the fastest lane on a CPU. A race where no lane beat vanilla's measured speed is said so first,
with the pass size that did not pay.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.trace import G2_RESCUED, RunTrace, StepRecord
from .failures import failed
from .lanes import label
from .pays import measured_in, passes, rows_of
from .race import result_of

BASELINE = "vanilla"
COPIERS = ("pld",)  # lanes that copy from the prompt and the output alone
RIVALS = ("suffix", "racer", "recycling", "lookahead", "rest")


@dataclass(frozen=True)
class Showcase:
    """A race's winner, what kind of win it is and why, in one sentence."""

    kind: str  # "next-next" | "copy" | "rival" | "none"
    winner: str  # the lane with the most tokens per pass
    sentence: str


def tokens_per_pass(t: RunTrace) -> float:
    return len(t.tokens) / t.forward_steps if t.forward_steps else 0.0


def g2_kept(s: StepRecord) -> int:
    """The tokens a step kept from a next-next guess (g2) and the branch it led."""
    by_id = {n.id: n for n in s.tree}
    return sum(by_id[i].origin == "g2" for i in s.accepted_path[1:] if i in by_id)


def next_next_kept(t: RunTrace) -> int:
    """Passes that kept tokens a guess for the token after next (g2) led to."""
    return sum(g2_kept(s) > 0 for s in passes(t))


def rescued(t: RunTrace) -> int:
    """Passes where copying (g1) found nothing and a next-next lookup still offered a draft."""
    return sum(s.outcome == G2_RESCUED for s in passes(t))


def longest_copy(t: RunTrace) -> int:
    """The most draft tokens one pass kept."""
    return max((s.drafts_accepted for s in passes(t)), default=0)


def _said(lanes: dict[str, RunTrace], name: str) -> str:
    return f"{label(name, lanes[name])} ({tokens_per_pass(lanes[name]):.2f})"


def _none_won(lanes: dict[str, RunTrace], winner: str, machine: str) -> str:
    """Why the lane with the most tokens a pass still lost: its passes' price here, else its drafting."""
    t = lanes[winner]
    rows = sum(rows_of(s) for s in passes(t)) / max(1, t.forward_steps)
    here, made = measured_in(lanes), tokens_per_pass(t)
    cost = here.ratio(rows) if here else None
    if cost is not None and cost >= made:
        why = f"a pass of its {rows:.0f} rows cost {cost:.2f} one-token passes, more than the {made:.2f} tokens it made"
    else:
        drafting = sum(s.draft_seconds + s.bookkeeping_seconds for s in t.steps)
        share = drafting / t.decode_seconds if t.decode_seconds else 0.0
        why = f"its drafting took {share:.0%} of its time, more than its extra tokens saved"
    where = f" on {machine}" if machine else ""
    return f"No method beat vanilla's speed{where}: {_said(lanes, winner)} made the most tokens a pass, but {why}."


def speed_words(lanes: dict[str, RunTrace], winner: str, speed: dict[str, float], machine: str) -> str:
    """The winner's measured speed against vanilla's, and the fastest lane's where that is another."""
    if winner not in speed:
        return ""
    fastest = max((n for n in speed if n != BASELINE), key=speed.get)
    mine = f" It ran at {speed[winner]:.2f}x vanilla's speed{f' on {machine}' if machine else ''}"
    if fastest == winner:
        return mine + ", the fastest lane."
    return f"{mine}; the fastest lane was {label(fastest, lanes[fastest])} at {speed[fastest]:.2f}x."


def showcase(lanes: dict[str, RunTrace], machine: str = "") -> Showcase:
    """The race's winner by tokens per pass, and why, from its traces alone."""
    shown = _showcase(lanes, machine)
    if shown.kind == "none":
        return shown
    said = speed_words(lanes, shown.winner, result_of(lanes).speedups, machine)
    return Showcase(shown.kind, shown.winner, shown.sentence + said)


def _showcase(lanes: dict[str, RunTrace], machine: str) -> Showcase:
    rates = {n: tokens_per_pass(t) for n, t in lanes.items() if n != BASELINE}
    winner = max(rates, key=rates.get)
    t = lanes[winner]
    others = sorted((n for n in rates if n != winner), key=rates.get, reverse=True)
    against = f", ahead of {_said(lanes, others[0])}" if others else ""
    speed = result_of(lanes).speedups
    if speed and all(v <= 1.0 for n, v in speed.items() if n != BASELINE):
        return Showcase("none", winner, _none_won(lanes, winner, machine))
    if winner.startswith("logitspec"):
        pld = f" where prompt lookup made {tokens_per_pass(lanes['pld']):.2f}" if "pld" in lanes else ""
        return Showcase("next-next", winner, (
            f"{_said(lanes, winner)} made the most tokens a pass{pld}: {next_next_kept(t)} of its {t.forward_steps} "
            f"passes kept tokens that a guess for the token after next led to, and at {rescued(t)} where copying "
            f"found nothing a next-next lookup still offered a draft."))
    if winner in COPIERS:
        hits = sum(not failed(s) for s in passes(t))
        return Showcase("copy", winner, (
            f"{_said(lanes, winner)} made the most tokens a pass{against}: {hits} of its {t.forward_steps} passes "
            f"found the text to copy, and one kept {longest_copy(t)} draft tokens at once: the answer repeats its prompt."))
    hits = sum(not failed(s) for s in passes(t))
    return Showcase("rival", winner, (
        f"{_said(lanes, winner)} made the most tokens a pass{against}: its sources offered a draft at {hits} of its "
        f"{t.forward_steps} passes, and one pass kept {longest_copy(t)} draft tokens."))
