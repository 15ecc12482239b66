"""The lesson's sixth stage, why it pays on a GPU: the lesson's own step priced on measured pass costs.

A pass of n rows (the next token and each guess it checks) costs c(n)/c(1) one-token passes on a
machine whose forward costs c(n) were measured; it pays there only if it commits more tokens than
that. The step is priced on the costs of the machine the run ran on (its own passes' times, with
its race's lanes: logitspec.analysis.pays.measured_in) and on every recorded curve of the run's
dtype, such as the H200's. A curve that is missing is said so. Pure: the lesson's Facts in, HTML
and a Plotly figure out.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logitspec.analysis.pays import HERE, PassCosts, break_even, curves_for, price, rows_of

from .counts import plural
from .data import step_position
from .glossary import term
from .style import PALETTE

if TYPE_CHECKING:
    from .lesson import Facts

TITLE = "6 · Why it pays on a GPU"


@dataclass(frozen=True)
class StepPrice:
    """The lesson's step on one machine's curve."""

    curve: PassCosts
    rows: int  # rows of the step's forward pass
    committed: int  # tokens it wrote
    cost: float | None  # c(rows)/c(1); None past the largest pass the curve measured

    @property
    def paid(self) -> bool:
        return self.cost is not None and self.committed > self.cost

    @property
    def where(self) -> str:
        return "where this run ran" if self.curve.name == HERE else f"on the {html.escape(self.curve.name)}"


def lanes_of(f: Facts) -> dict:
    """The race the lesson's run ran in (its vanilla lane times one-token passes), else the run alone."""
    return f.lanes or {f.trace.method: f.trace}


def step_prices(f: Facts) -> list[StepPrice]:
    """The step on its own machine's costs (when the run timed a one-token pass), then on each
    recorded curve of its dtype."""
    rows, committed = rows_of(f.s), len(f.s.tokens)
    return [StepPrice(c, rows, committed, break_even(c, rows)) for c in curves_for(lanes_of(f), f.curves)]


def missing_words(f: Facts, prices: list[StepPrice]) -> list[str]:
    """A sentence for each curve the step cannot be priced on."""
    out = []
    if not any(p.curve.name == HERE for p in prices):
        out.append("The machine this run ran on has no measured costs: no one-token pass of it was timed.")
    if not any(p.curve.name != HERE for p in prices):
        out.append(f"No other machine's costs were measured in {html.escape(f.trace.dtype)}."
                   if f.curves else "No other machine's measured costs are at hand.")
    for p in prices:
        if p.cost is None:
            out.append(f"The {html.escape(p.curve.name)} was never measured at {plural(p.rows, 'row')} "
                       f"(its largest pass: {max(p.curve.sizes)}).")
    return out


def _priced_words(prices: list[StepPrice]) -> str:
    """'In one-token passes it cost 1.31 where this run ran, so it paid; 1.00 on the NVIDIA H200, so it paid.'"""
    said = [f"{p.cost:.2f} {p.where}, so it {'paid' if p.paid else 'did not pay'}"
            for p in prices if p.cost is not None]
    return f"In one-token passes it cost {'; '.join(said)}." if said else ""


def _verdict(prices: list[StepPrice]) -> str:
    """What the step's prices add up to; why rows are cheap on a GPU, when a GPU's curve priced it cheapest."""
    known = sorted((p for p in prices if p.cost is not None), key=lambda p: p.cost)
    won = [p.where for p in known if p.paid]
    lost = [p.where for p in known if not p.paid]
    why = (" A GPU (the graphics chip the paper ran on) checks many rows in about the time of one."
           if len(known) > 1 and known[0].curve.device.startswith("cuda") else "")
    if won and lost:
        return f"The same pass and the same tokens pay {' and '.join(won)}, not {' and '.join(lost)}.{why}"
    if won and len(won) > 1:
        return f"It paid most {won[0]}, where a row costs least.{why}"
    if lost:
        return "Guessing only pays when the model keeps enough of the guesses."
    return ""


def _run_words(f: Facts) -> str:
    """The whole run, priced the same way, when its race has a vanilla lane to compare with."""
    lanes = lanes_of(f)
    mine = next((p for p in price(lanes, f.curves) if lanes[p.lane] is f.trace), None)
    if mine is None or not mine.predicted:
        return ""
    said = ", ".join(f"{sp:.2f}× {'where it ran' if name == HERE else 'on the ' + html.escape(name)}"
                     for name, sp in mine.predicted.items())
    return f"Over the whole run, priced the same way: {said} ({mine.measured:.2f}× measured)."


def pays_words(f: Facts) -> str:
    prices = step_prices(f)
    s = f.s
    first = (f"Step {step_position(f.trace, f.step)}'s {term('forward pass')} read {plural(rows_of(s), 'row')}, "
             f"one for the next token and one per guess, and wrote {plural(len(s.tokens), 'token')}. "
             f"A pass pays when it writes more tokens than the one-token ({term('vanilla')}) passes it costs.")
    said = (_priced_words(prices), *missing_words(f, prices), _verdict(prices), _run_words(f))
    second = " ".join(w for w in said if w)
    return f"<p>{first}</p><p>{second}</p>"


def pays_bars(f: Facts) -> tuple[list[str], list[float], list[str], str, list[str]]:
    """The stage's bars (names, values, colours, unit, texts): the tokens the step wrote, then what
    its pass cost on each machine in one-token passes, green where it paid and red where not."""
    known = [p for p in step_prices(f) if p.cost is not None]
    names = [f"tokens step {step_position(f.trace, f.step)} wrote"] + [f"cost {p.where}" for p in known]
    values = [float(len(f.s.tokens))] + [p.cost for p in known]
    colors = [PALETTE["accepted"]] + [PALETTE["accepted"] if p.paid else PALETTE["rejected"] for p in known]
    texts = [str(len(f.s.tokens))] + [f"{p.cost:.2f} {'✓' if p.paid else '✗'}" for p in known]
    return names, values, colors, "tokens, or one-token passes", texts
