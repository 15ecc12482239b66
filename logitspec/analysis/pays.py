"""Where a method pays: a race's own passes priced on measured forward costs c(n).

A lane's decoding costs its passes and its drafting: Σ c(n_step) + the seconds it spent drafting
and on bookkeeping. Vanilla makes one token a pass, so its tokens cost one c(1) each plus its own
bookkeeping. Their ratio, per token, is the speed-up the same passes would make wherever c(n) was
measured: a pass of n rows pays only if it commits more than c(n)/c(1) tokens.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.trace import RunTrace, StepRecord

HERE = "this race"  # the pass costs measured in the race itself


@dataclass(frozen=True)
class PassCosts:
    """Milliseconds of one forward pass of n tree tokens, as measured on one machine."""

    name: str  # the machine, as the page names it
    sizes: tuple[int, ...]
    ms: tuple[float, ...]
    dtype: str = ""
    device: str = ""  # "cuda", "cpu", ... where the kit recorded it; "" when not said

    def c(self, n: float) -> float:
        return float(np.interp(n, self.sizes, self.ms))

    def ratio(self, n: float) -> float:
        """c(n)/c(1): the tokens a pass of n rows must commit to pay for itself."""
        return self.c(n) / self.c(1)


def break_even(curve: PassCosts, rows: int) -> float | None:
    """Tokens a pass of `rows` rows must commit to pay for itself on `curve`, c(n)/c(1); None past
    the largest pass the curve measured (interpolation would repeat its last cost there)."""
    return curve.ratio(rows) if rows <= max(curve.sizes) else None


def read_pass_costs(path: Path, name: str | None = None) -> list[PassCosts]:
    """The curves the GPU kit records (scripts/gpu_kit/curves.py: one row per dtype, c_ms by n),
    as written or wrapped with the machine they were measured on ({"machine": ..., "curves": [...]})."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = data["curves"] if isinstance(data, dict) else data
    name = name or (data.get("machine") if isinstance(data, dict) else None) or Path(path).stem
    out = []
    for row in rows:
        sizes = sorted(int(n) for n in row["c_ms"])
        out.append(PassCosts(name, tuple(sizes), tuple(float(row["c_ms"][str(n)]) for n in sizes), row.get("dtype", ""),
                             row.get("device", "")))
    return out


def rows_of(step: StepRecord) -> int:
    """The rows of a step's forward pass: its root and every node it verified."""
    return max(1, len(step.verified_nodes))


def passes(trace: RunTrace) -> list[StepRecord]:
    return [s for s in trace.steps if s.forward]


def monotone(values: list[float], weights: list[int]) -> list[float]:
    """The closest non-decreasing sequence, weighted (isotonic regression, pooling adjacent
    violators): a pass of more rows never costs less, so a noisy cheaper median is pooled with its neighbours."""
    blocks: list[list[float]] = []  # [weighted mean, weight, sizes pooled]
    for v, w in zip(values, weights):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (a, wa, na), (b, wb, nb) = blocks[-2], blocks.pop()
            blocks[-1] = [(a * wa + b * wb) / (wa + wb), wa + wb, na + nb]
    return [m for m, _, n in blocks for _ in range(n)]


def measured_in(lanes: dict[str, RunTrace], name: str = HERE) -> PassCosts | None:
    """The race's own pass costs: each pass size's median forward time over every lane's passes,
    made non-decreasing (`monotone`); None without a one-row pass (nothing to price against)."""
    seen: dict[int, list[float]] = defaultdict(list)
    for t in lanes.values():
        for s in passes(t):
            if s.forward_seconds > 0:
                seen[rows_of(s)].append(s.forward_seconds * 1e3)
    if 1 not in seen:
        return None
    sizes = sorted(seen)
    ms = monotone([statistics.median(seen[n]) for n in sizes], [len(seen[n]) for n in sizes])
    first = next(iter(lanes.values()))
    return PassCosts(name, tuple(sizes), tuple(ms), first.dtype, first.device)


def curves_for(lanes: dict[str, RunTrace], curves: list[PassCosts]) -> list[PassCosts]:
    """The race's own pass costs, then each curve measured in the race's dtype."""
    here = measured_in(lanes)
    dtype = next(iter(lanes.values())).dtype if lanes else ""
    return ([here] if here else []) + [c for c in curves if not c.dtype or c.dtype == dtype]


@dataclass(frozen=True)
class Priced:
    """One lane: its passes, its measured decoding speed-up and the speed-up its passes would make on each curve."""

    lane: str
    tokens: int
    passes: int
    mean_rows: float
    measured: float  # decoding only (prefill left out), tokens per second against vanilla's
    predicted: dict[str, float] = field(default_factory=dict)  # curve name -> speed-up

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0


def _drafting_s(trace: RunTrace) -> float:
    return sum(s.draft_seconds + s.bookkeeping_seconds for s in trace.steps)


def _per_token_ms(trace: RunTrace, costs: PassCosts) -> float:
    """Its passes priced on `costs`, its drafting as measured, per token committed."""
    ms = sum(costs.c(rows_of(s)) for s in passes(trace)) + 1e3 * _drafting_s(trace)
    return ms / len(trace.tokens)


def price(lanes: dict[str, RunTrace], curves: list[PassCosts], baseline: str = "vanilla") -> list[Priced]:
    """Every lane but the baseline, priced on the race's own pass costs and on each curve of the
    race's dtype; empty without a baseline that made tokens."""
    base = lanes.get(baseline)
    if base is None or not base.tokens:
        return []
    usable = curves_for(lanes, curves)
    base_s = base.decode_seconds / len(base.tokens)
    out = []
    for name, t in lanes.items():
        steps = passes(t)
        if name == baseline or not t.tokens or not steps:
            continue  # a lane with no decoding pass (one token, from the prefill) has nothing to price
        rows = [rows_of(s) for s in steps]
        own_s = t.decode_seconds / len(t.tokens)
        predicted = {c.name: _per_token_ms(base, c) / own for c in usable if (own := _per_token_ms(t, c)) > 0}
        out.append(Priced(name, len(t.tokens), len(steps), sum(rows) / len(rows) if rows else 0.0,
                          base_s / own_s if own_s > 0 else 0.0, predicted))
    return out


def summary_speedup(tokens_per_pass: float, mean_rows: float, share: float, base_share: float,
                    costs: PassCosts) -> float:
    """The speed-up a bench's summary predicts on `costs`: its passes at their mean size, and its
    drafting and bookkeeping at the shares of decoding time it measured (its own and vanilla's)."""
    lane_ms = costs.c(mean_rows) / (1 - share) / tokens_per_pass
    return costs.c(1) / (1 - base_share) / lane_ms
