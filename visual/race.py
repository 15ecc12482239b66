"""The race: tokens generated against compute time, one line per decoder lane."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from logitspec.serve.race import result_of
from logitspec.trace import RunTrace

from .data import is_finished
from .style import MIN_FONT, base_layout, lane_color, pretty, theme_colors, top_legend


def race_points(trace: RunTrace) -> tuple[list[float], list[int]]:
    """(seconds, tokens) after the prefill and after every step."""
    xs, ys = [trace.prefill_seconds], [0]
    t, n = trace.prefill_seconds, 0
    for s in trace.steps:
        t += s.seconds
        n += len(s.tokens)
        xs.append(t)
        ys.append(n)
    return xs, ys


def _vanilla(lanes: dict[str, RunTrace]) -> str | None:
    if "vanilla" in lanes:
        return "vanilla"
    return next((k for k, t in lanes.items() if t.method == "vanilla"), None)


def race_figure(lanes: dict[str, RunTrace], theme: str = "light", width: int | None = None,
                stopped: bool = False) -> go.Figure:
    """Tokens generated against elapsed compute time (prefill included), one line per lane.

    Speed-ups are those of the race's verdict: over the tokens every lane reached, so a race
    `stopped` before its end compares equal counts (and its unfinished lanes say "stopped").
    """
    c = theme_colors(theme)
    fig = go.Figure()
    van = _vanilla(lanes)
    over = all(is_finished(t) for t in lanes.values()) or stopped
    res = result_of(lanes, van) if van is not None and over else None
    results = []
    ends = []
    for name, tr in lanes.items():
        xs, ys = race_points(tr)
        color = lane_color(name, tr.method)
        done = is_finished(tr)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=html.escape(name, quote=False), line=dict(color=color, width=4,
                                                                   dash="solid" if done else "dot"),
            hovertemplate=f"{html.escape(name, quote=False)}<br>%{{y}} tokens after %{{x:.3f}} s<extra></extra>",
        ))
        fig.add_trace(go.Scatter(
            x=[xs[-1]], y=[ys[-1]], mode="markers", showlegend=False, hoverinfo="skip",
            marker=dict(size=12, color=color, symbol="circle" if done else "circle-open",
                        line=dict(color=color, width=2)),
        ))
        label = f"{html.escape(name, quote=False)}: {ys[-1]} tokens in {xs[-1]:.2f} s"
        if not done:
            label += " (stopped)" if stopped else " (running)"
        if res is not None and name != van and res.speedups.get(name):
            sp = res.speedups[name]
            scope = "" if res.complete else f" over {res.compared_tokens} tokens"
            label += f"<br><b>{sp:.2f}× vanilla's speed{scope}</b>"
            results.append((name, sp))
        ends.append((ys[-1], xs[-1], label, color))
    # End labels in the right margin, stacked so they never overlap.
    ymax = max((e[0] for e in ends), default=1) or 1
    plot_h = 560 - 140 - 80
    last_px = None
    for y, x, label, color in sorted(ends, key=lambda e: (-e[0], e[1])):
        px = y / (ymax * 1.08) * plot_h
        if last_px is not None and px > last_px - 50:
            px = last_px - 50
        last_px = px
        fig.add_annotation(x=1.01, xref="paper", y=y, yref="y", yshift=px - y / (ymax * 1.08) * plot_h,
                           text=label, showarrow=False, xanchor="left", align="left",
                           font=dict(size=MIN_FONT + 1, color=c["text"]), bgcolor=c["bg"], bordercolor=color,
                           borderwidth=2)
    title = "Race: tokens generated against compute time"
    layout = base_layout(theme, title, height=560, hovermode="closest", margin=dict(l=90, r=360, t=140, b=80))
    top_legend(layout, theme)
    if width:
        layout["width"] = width
    sub = "prefill included as the start; lossless decoders end with the same text"
    if results:
        best = max(results, key=lambda r: r[1])
        same = "same output" if res.lossless else "output DIFFERENT from vanilla"
        scope = "" if res.complete else f", over the first {res.compared_tokens} tokens of a stopped race"
        sub = (f"{html.escape(best[0], quote=False)} ran at {best[1]:.2f}× vanilla's speed "
               f"(tokens per second of compute, {same}{scope})")
    layout["title"]["subtitle"] = dict(text=sub, font=dict(size=MIN_FONT + 1, color=c["muted"]))
    xmax = max((race_points(t)[0][-1] for t in lanes.values()), default=1.0) or 1.0
    layout["xaxis"].update(title=dict(text="Compute time (seconds, prefill + every step)"), range=[0, xmax * 1.04])
    layout["yaxis"].update(title=dict(text="Tokens generated"), range=[0, ymax * 1.08])
    fig.update_layout(layout)
    return pretty(fig)
