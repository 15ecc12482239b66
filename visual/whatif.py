"""What-if retrieval drawn: the run's own lookups beside a replay at another setting.

Drawn from logitspec.whatif.WhatIf (pure data): a figure with the tokens the drafts held per
step and the retrieval outcome of every step for both, and an HTML summary of the totals.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.trace import RunTrace
from logitspec.whatif import Replay, WhatIf

from .data import NO_RETRIEVAL, OUTCOMES_LOGITSPEC, OUTCOMES_PLD
from .style import MIN_FONT, PALETTE, base_layout, pretty, style_axes, theme_colors, top_legend

OWN_COLOR = PALETTE["logitspec"]
NEW_COLOR = PALETTE["root"]  # reddish purple: apart from the outcome colours in the strip
OUTCOMES_ORDER = (*OUTCOMES_LOGITSPEC, *OUTCOMES_PLD, NO_RETRIEVAL)
_FAILED = (OUTCOMES_LOGITSPEC[-1], OUTCOMES_PLD[-1], NO_RETRIEVAL)


def _runs(w: WhatIf) -> list[tuple[str, Replay, str, str]]:
    """(name, replay, colour, dash) of this run and the what-if."""
    return [(f"this run · {w.own.setting.label()}", w.own, OWN_COLOR, "solid"),
            (f"what-if · {w.new.setting.label()}", w.new, NEW_COLOR, "dash")]


def whatif_figure(w: WhatIf, theme: str = "light") -> go.Figure:
    """Per step: tokens of the output the drafts held (and what the run committed), then each
    run's retrieval outcome as a strip."""
    c = theme_colors(theme)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.72, 0.28], vertical_spacing=0.16, shared_xaxes=True)
    layout = base_layout(theme, "What-if retrieval on this run's steps", height=620,
                         margin=dict(l=110, r=30, t=150, b=70), hovermode="x unified")
    layout.pop("xaxis")
    layout.pop("yaxis")
    top_legend(layout, theme)
    fig.update_layout(layout)
    style_axes(fig, theme)
    xs = w.own.steps
    fig.add_trace(go.Bar(x=xs, y=w.accepted, name="committed by the run", marker=dict(color=PALETTE["vanilla"]),
                         opacity=0.45, hovertemplate="committed %{y}<extra></extra>"), row=1, col=1)
    for name, r, color, dash in _runs(w):
        fig.add_trace(go.Scatter(
            x=r.steps, y=r.drafted, name=name, mode="lines+markers", line=dict(color=color, width=3, dash=dash),
            marker=dict(size=7, symbol="circle" if dash == "solid" else "diamond"),
            hovertemplate=f"{name.split(' · ')[0]}: drafts held %{{y}}<extra></extra>"), row=1, col=1)
    fig.update_yaxes(title_text="Tokens held", rangemode="tozero", row=1, col=1)
    _outcome_strip(fig, w, c)
    fig.update_xaxes(title_text="Step", row=2, col=1)
    fig.update_layout(title_subtitle=dict(
        text="drafts held: x_{i+1} + the longest run of the true continuation on any drafted chain",
        font=dict(size=MIN_FONT + 1, color=c["muted"])))
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


def _pct(r: Replay) -> str:
    return f"{sum(r.retrieved)} of {len(r.retrieved)} steps ({100 * r.success_rate:.0f}%)"


def whatif_html(w: WhatIf, trace: RunTrace) -> str:
    """The totals of both runs and what they say, in a few lines."""
    rows = "".join(
        f'<tr><th scope="row" style="text-align:left;padding:3px 8px;color:{color}">{html.escape(name.split(" · ")[0])}'
        f'</th><td style="padding:3px 8px">{html.escape(r.setting.label())}</td>'
        f'<td style="padding:3px 8px">{_pct(r)}</td><td style="padding:3px 8px">{r.bound}</td></tr>'
        for name, r, color, _ in _runs(w))
    table = ('<div style="overflow-x:auto;max-width:100%"><table class="whatif-table" style="border-collapse:collapse">'
             '<thead><tr><th></th><th style="text-align:left;padding:3px 8px">setting</th>'
             '<th style="text-align:left;padding:3px 8px">a lookup found a continuation</th>'
             '<th style="text-align:left;padding:3px 8px">drafts held (tokens)</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></div>")
    return f'<div id="whatif-summary-body">{table}<p>{" ".join(_sentences(w, trace))}</p></div>'


def _sentences(w: WhatIf, trace: RunTrace) -> list[str]:
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
    if not any(s.candidates for s in trace.steps):
        says.append(f"This {trace.method} run recorded no next-next candidates, so the replay runs LogitSpec's g1 "
                    "lookup alone (k = 0).")
    if w.temperature > 0:
        says.append(f"The run was sampled at temperature {w.temperature:g}: its output is fixed all the same "
                    "(by its seed), so the replay holds as for greedy decoding.")
    says.append(f"The run committed {sum(w.accepted)} tokens in {len(w.accepted)} forward steps. The steps are "
                "the run's: with another setting a real run would build other trees and could split the text "
                "into other steps.")
    return [html.escape(s) for s in says]


def _steps(steps: list[int], most: int = 8) -> str:
    shown = ", ".join(map(str, steps[:most]))
    return f"step{'s' if len(steps) > 1 else ''} {shown}" + (f" and {len(steps) - most} more" if len(steps) > most else "")
