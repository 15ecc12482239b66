"""What-if retrieval drawn: the run's own lookups beside a replay at another setting.

Drawn from logitspec.analysis.whatif.WhatIf (pure data): a figure with the tokens the drafts held per
step and the retrieval outcome of every step for both (for a page, or for the app with its
16:9 slide, visual.fit), and an HTML summary of the totals that wraps at any width.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.core.trace import NO_RETRIEVAL, RunTrace
from logitspec.analysis.whatif import Replay, WhatIf, recorded_k

from .counts import RunCounts, held_tokens, plural, run_counts, run_words
from .data import OUTCOMES_LOGITSPEC, OUTCOMES_PLD
from .fit import SLIDE_H, SLIDE_W, for_app, frame
from .style import PALETTE, base_layout, pretty, style_axes, theme_colors

OWN_COLOR = PALETTE["logitspec"]
NEW_COLOR = PALETTE["root"]  # reddish purple: apart from the outcome colours in the strip
OUTCOMES_ORDER = (*OUTCOMES_LOGITSPEC, *OUTCOMES_PLD, NO_RETRIEVAL)
_FAILED = (OUTCOMES_LOGITSPEC[-1], OUTCOMES_PLD[-1], NO_RETRIEVAL)
WORDS = ("What-if retrieval on this run's steps",
         "drafts held: x_{i+1} + the longest run of the true continuation on any drafted chain; "
         "the settings are in the summary above")
SIZES = {"page": (1100, 640), "app": (1100, 560), "slide": (SLIDE_W, SLIDE_H)}


def _runs(w: WhatIf) -> list[tuple[str, Replay, str, str]]:
    """(name, replay, colour, dash) of this run and the what-if."""
    return [("this run", w.own, OWN_COLOR, "solid"), ("what-if", w.new, NEW_COLOR, "dash")]


def whatif_figure(w: WhatIf, theme: str = "light", fit: bool = False) -> go.Figure:
    """Per step: tokens of the output the drafts held (and what the run committed), then each
    run's retrieval outcome as a strip. fit: drawn for the app, with its 16:9 slide."""
    if not fit:
        return _draw(w, theme, "page")
    return for_app(_draw(w, theme, "app"), _draw(w, theme, "slide"), *WORDS)


def _draw(w: WhatIf, theme: str, mode: str) -> go.Figure:
    c = theme_colors(theme)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.72, 0.28], vertical_spacing=0.12, shared_xaxes=True)
    layout = base_layout(theme, WORDS[0], height=SIZES[mode][1], hovermode="x unified")
    outcomes = [o for o in OUTCOMES_ORDER if o in w.own.outcomes or o in w.new.outcomes]
    frame(layout, mode, *WORDS, ["committed", "this run", "what-if", *outcomes], c, SIZES[mode], left=100)
    layout.pop("xaxis")
    layout.pop("yaxis")
    fig.update_layout(layout)
    style_axes(fig, theme)
    fig.add_trace(go.Bar(x=w.own.steps, y=w.accepted, name="committed", marker=dict(color=PALETTE["vanilla"]),
                         opacity=0.45, hovertemplate="committed by the run: %{y}<extra></extra>"), row=1, col=1)
    for name, r, color, dash in _runs(w):
        fig.add_trace(go.Scatter(
            x=r.steps, y=r.drafted, name=name, mode="lines+markers", line=dict(color=color, width=3, dash=dash),
            marker=dict(size=7, symbol="circle" if dash == "solid" else "diamond"),
            hovertemplate=f"{name}: drafts held %{{y}}<extra></extra>"), row=1, col=1)
    fig.update_yaxes(title_text="Tokens held", rangemode="tozero", row=1, col=1)
    _outcome_strip(fig, w, c)
    fig.update_xaxes(title_text="Step", row=2, col=1)
    return pretty(fig)


def _outcome_strip(fig: go.Figure, w: WhatIf, c: dict[str, str]) -> None:
    """Each run's retrieval outcome per step, one row of marks per run."""
    shown: set[str] = set()
    for row_name, r in (("what-if", w.new), ("this run", w.own)):
        for o in OUTCOMES_ORDER:
            xs = [s for s, oo in zip(r.steps, r.outcomes) if oo == o]
            if not xs:
                continue
            fig.add_trace(go.Scatter(
                x=xs, y=[row_name] * len(xs), mode="markers", name=o, legendgroup=o, showlegend=o not in shown,
                # Failures are crosses as well as vermillion: the shape tells them apart without colour.
                marker=dict(symbol="x" if o in _FAILED else "square", size=13, color=PALETTE[o],
                            line=dict(color=c["bg"], width=1)),
                hovertemplate=f"{row_name}: {o}<extra></extra>"), row=2, col=1)
            shown.add(o)
    fig.update_yaxes(showgrid=False, categoryorder="array", categoryarray=["what-if", "this run"], row=2, col=1)


def _run_html(name: str, r: Replay, color: str, trace: RunTrace, c: RunCounts) -> str:
    found = f"{sum(r.retrieved)} of {len(r.retrieved)} steps ({100 * r.success_rate:.0f}%)"
    # Each output token counted once (visual.counts), so the total never exceeds the output.
    held = held_tokens(trace.steps, r.steps, r.drafted)
    return (f'<div class="whatif-run" style="margin:.2rem 0"><b style="color:{color}">{html.escape(name)}</b> · '
            f"{html.escape(r.setting.label())}<br>a lookup found a continuation at <b>{found}</b> · "
            f"the drafts held <b>{held}</b> of the output's {plural(c.tokens, 'token')}</div>")


def whatif_html(w: WhatIf, trace: RunTrace) -> str:
    """The totals of both runs and what they say, in a few lines that wrap at any width."""
    c = run_counts(trace)
    runs = "".join(_run_html(name, r, color, trace, c) for name, r, color, _ in _runs(w))
    return f'<div id="whatif-summary-body">{runs}<p>{" ".join(_sentences(w, trace, c))}</p></div>'


def _sentences(w: WhatIf, trace: RunTrace, c: RunCounts) -> list[str]:
    own, new = w.own, w.new
    says = []
    if new.setting == own.setting:
        same = own.outcomes == new.outcomes and own.drafted == new.drafted
        says.append("This is the run's own setting: the replay "
                    + ("gives the run's retrieval outcome and drafted tokens at every step." if same
                       else "differs from what the run recorded: the trace does not add up."))
    failed = [s for s, ok in zip(own.steps, own.retrieved) if not ok]
    rescued = [s for s, ok in zip(new.steps, new.retrieved) if ok and s in set(failed)]
    if failed:
        says.append(f"At {len(failed)} step{'s' if len(failed) > 1 else ''} the run's lookups found nothing; "
                    f"this setting finds a continuation at {len(rescued)} of them.")
    if w.text_failures:
        n = len(w.text_failures)
        says.append(f"At {n} step{'s' if n > 1 else ''} ({_steps(w.text_failures)}) no setting could: not even "
                    "the root or a recorded candidate occurs earlier in the text, so there the text, not the "
                    "setting, held nothing to find.")
    if (most := recorded_k(trace)) > 0:
        says.append(f"k is at most {most} (here {new.setting.k}): this trace recorded {most} candidates per step, "
                    "and a replay cannot invent more.")
    if not any(s.candidates for s in trace.steps):
        says.append(f"This {trace.method} run recorded no next-next candidates, so the replay runs LogitSpec's g1 "
                    "lookup alone (k = 0).")
    if w.temperature > 0:
        says.append(f"The run was sampled at temperature {w.temperature:g}: its output is fixed all the same "
                    "(by its seed), so the replay holds as for greedy decoding.")
    says.append(f"The run committed {run_words(c)}. The steps are the run's: with another "
                "setting a real run would build other trees and could split the text into other steps.")
    return [html.escape(s) for s in says]


def _steps(steps: list[int], most: int = 8) -> str:
    shown = ", ".join(map(str, steps[:most]))
    return f"step{'s' if len(steps) > 1 else ''} {shown}" + (f" and {len(steps) - most} more" if len(steps) > most else "")
