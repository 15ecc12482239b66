"""The race: tokens generated against compute time, and against forward passes, one line per lane.

Compute time is what each lane measured on the machine it ran on; forward passes are counts
(visual.counts), the same on any hardware: what the paper's tokens per pass are about.

Drawn for a page or a slide (each lane's end labelled in the right margin) or for the app (`fit=True`,
visual.fit: the container's width, each lane's result in its legend entry, the words in an
HTML caption, a 16:9 slide inside).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import plotly.graph_objects as go

from logitspec.analysis.lanes import label as lane_label, lane
from logitspec.analysis.race import RaceResult, result_of
from logitspec.core.trace import RunTrace

from .counts import run_counts, run_words
from .data import is_finished
from .fit import SLIDE_H, SLIDE_W, for_app, frame
from .style import MIN_FONT, base_layout, lane_color, pretty, theme_colors
from .verdict import compared_rates, cut_short, per_pass

PAGE_SIZE = (1240, 560)
APP_HEIGHT = 460
# The app's plot keeps this height however many lanes its legend lists: the page grows the figure by
# the legend's height (ui/figures.js), so nine lanes' entries never take the plot's room nor scroll.
APP_PLOT_PX = 300
LEGEND_MAX_PX = 4000  # past Plotly's default (half the figure), which scrolled the legend and hid entries
# A legend line's height, over-estimated: the app's figure is first drawn tall enough for its whole
# legend in one column (a phone's), since a legend taller than the figure leaves Plotly a plot of
# negative height ("axis scaling" error), which left the old lines on screen; the page then shrinks it.
LEGEND_LINE_PX = 24
END_LABELS_PX = 360  # a page's right margin, where each lane's end is labelled
LABEL_LINE_PX = 20  # one line of an end label; labels are stacked at least their half-heights apart
LABEL_PAD_PX = 10  # between stacked end labels
LONG_LABEL = 16  # characters: a longer lane label ends its line, or a phone's legend entry runs past the figure


@dataclass(frozen=True)
class Axis:
    """What the race is drawn against: measured compute seconds, or forward passes (counts)."""

    key: str  # "seconds" or "passes"
    title: str
    x_title: str
    hover: str  # the x part of a point's hover text
    name_sep: str  # between a lane's name and what it made, in its label


SECONDS = Axis("seconds", "Race: tokens generated against compute time", "Compute time (s)", "%{x:.3f} s", ": ")
# "N tokens in M forward passes" on a line of its own: a name before it would not fit a phone's legend.
PASSES = Axis("passes", "Race: tokens generated against forward passes", "Forward passes",
              "%{x} forward passes", ":<br>")


@dataclass
class LaneEnd:
    """Where a lane's line ends, and what is said about it."""

    name: str
    seconds: float  # the line's last x: compute seconds, or forward passes
    tokens: int
    color: str
    label: str


def race_points(trace: RunTrace) -> tuple[list[float], list[int]]:
    """(seconds, tokens) after the prefill and after every step."""
    xs, ys = [trace.prefill_seconds], [0]
    t, n = trace.prefill_seconds, 0
    for s in trace.steps:
        t += s.clock_seconds  # the compute clock: one-off measuring counts
        n += len(s.tokens)
        xs.append(t)
        ys.append(n)
    return xs, ys


def pass_points(trace: RunTrace) -> tuple[list[int], list[int]]:
    """(forward passes, tokens) at the start and after every step; a final commit that needed no
    pass adds its tokens at the same count of passes."""
    xs, ys = [0], [0]
    for s in trace.steps:
        xs.append(xs[-1] + bool(s.forward))
        ys.append(ys[-1] + len(s.tokens))
    return xs, ys


def points(trace: RunTrace, axis: Axis) -> tuple[list[float], list[int]]:
    return race_points(trace) if axis.key == "seconds" else pass_points(trace)


def lane_note(name: str, trace: RunTrace) -> str:
    """What a lane stands for, under its label: its row's note (the paper's tree's size, Token
    Recycling's source), the trace's capacity in it; "" for a lane the table lacks."""
    # Short lines (the rows' notes): a page's end labels have a narrow margin, and so has a phone's legend.
    ln = lane(name)
    return ln.note.format(capacity=trace.settings.get("capacity", 64)) if ln else ""


def _vanilla(lanes: dict[str, RunTrace]) -> str | None:
    if "vanilla" in lanes:
        return "vanilla"
    return next((k for k, t in lanes.items() if t.method == "vanilla"), None)


def _result(lanes: dict[str, RunTrace], stopped: bool) -> RaceResult | None:
    """The verdict's numbers once every lane is over (or the race was stopped), else None."""
    van = _vanilla(lanes)
    over = all(is_finished(t) for t in lanes.values()) or stopped
    return result_of(lanes, van) if van is not None and over else None


def _ends(lanes: dict[str, RunTrace], res: RaceResult | None, stopped: bool, axis: Axis) -> list[LaneEnd]:
    """Each lane's end point and its label: tokens, seconds or passes, and its speed-up or
    tokens per pass once known."""
    van = _vanilla(lanes)
    rates = per_pass(res) if res is not None and res.compared_tokens else {}
    # On a line of its own: after the figure, a phone's legend cut it ("over 19 token…"). Where the
    # speed-up compares fewer tokens than the label's own, the tokens/s it is the ratio of.
    cut = res is not None and res.compared_tokens > 0 and cut_short(res)
    rated = compared_rates(res) if cut else {}
    scope = f"<br>over the first {res.compared_tokens} tokens" if cut else ""
    out = []
    for name, tr in lanes.items():
        xs, ys = points(tr, axis)
        said = f"{ys[-1]} tokens in {xs[-1]:.2f} s" if axis is SECONDS else run_words(run_counts(tr))
        shown = lane_label(name, tr)
        sep = axis.name_sep if len(shown) <= LONG_LABEL else ":<br>"
        label = f"{html.escape(shown, quote=False)}{sep}{said}"
        if not is_finished(tr):
            label += " (stopped)" if stopped else " (running)"
        label += lane_note(name, tr)
        if axis is SECONDS and res is not None and name != van and res.speedups.get(name):
            label += f"<br><b>{res.speedups[name]:.2f}× vanilla's speed</b>{scope}"
            if cut:
                label += f": {rated[name]:.1f} against {rated[van]:.1f} tokens/s"
        if axis is PASSES and name in rates:  # over the lane's own run, as the counters' table gives it
            label += f"<br><b>{rates[name]:.2f} tokens per pass</b>"
        out.append(LaneEnd(name, xs[-1], ys[-1], lane_color(name, tr.method), label))
    return out


def _lines(fig: go.Figure, lanes: dict[str, RunTrace], ends: list[LaneEnd], mode: str, axis: Axis) -> None:
    """One line per lane (dotted while it runs) and a dot at its end; in the app the legend
    entry carries the end's label."""
    for (name, tr), end in zip(lanes.items(), ends):
        xs, ys = points(tr, axis)
        done = is_finished(tr)
        legend_name = end.label if mode == "app" else html.escape(lane_label(name, tr), quote=False)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=legend_name, line=dict(color=end.color, width=4,
                                                                  dash="solid" if done else "dot"),
            hovertemplate=f"{html.escape(lane_label(name, tr), quote=False)}<br>%{{y}} tokens after {axis.hover}<extra></extra>",
        ))
        fig.add_trace(go.Scatter(
            x=[xs[-1]], y=[ys[-1]], mode="markers", showlegend=False, hoverinfo="skip",
            marker=dict(size=12, color=end.color, symbol="circle" if done else "circle-open",
                        line=dict(color=end.color, width=2)),
        ))


def _end_labels(fig: go.Figure, ends: list[LaneEnd], c: dict[str, str], plot_h: float, ymax: float) -> None:
    """End labels in the right margin, stacked so they never overlap."""
    last_px = None
    for end in sorted(ends, key=lambda e: (-e.tokens, e.seconds)):
        at = end.tokens / (ymax * 1.08) * plot_h
        half = (end.label.count("<br>") + 1) * LABEL_LINE_PX / 2 + LABEL_PAD_PX / 2
        # Centred on its line's end, unless the label above (or the plot's top) reaches down there.
        top = plot_h - half if last_px is None else last_px - half
        px = min(at, top)
        last_px = px - half
        fig.add_annotation(x=1.01, xref="paper", y=end.tokens, yref="y", yshift=px - at, text=end.label,
                           showarrow=False, xanchor="left", align="left", font=dict(size=MIN_FONT + 1, color=c["text"]),
                           bgcolor=c["bg"], bordercolor=end.color, borderwidth=2)


def _pass_words(lanes: dict[str, RunTrace], res: RaceResult | None) -> tuple[str, str]:
    """The passes figure's title and its subtitle: each lane's tokens per pass once known."""
    plain = "counts, not time: the same on any hardware"
    if res is None or not res.compared_tokens:
        return PASSES.title, f"{plain}; a steeper line makes more tokens per forward pass"
    rates = per_pass(res)
    scope = "" if res.complete else ", each over its own run in a stopped race"
    said = "; ".join(f"{html.escape(lane_label(name, lanes[name]), quote=False)}: {r:.2f}" for name, r in rates.items())
    return PASSES.title, f"tokens per forward pass: {said} ({plain}{scope})"


def _words(lanes: dict[str, RunTrace], res: RaceResult | None, axis: Axis = SECONDS) -> tuple[str, str]:
    if axis is PASSES:
        return _pass_words(lanes, res)
    title = SECONDS.title
    van = _vanilla(lanes)
    results = [(n, sp) for n, sp in (res.speedups.items() if res else ()) if n != van and sp]
    if not results:
        return title, "prefill included as the start; lossless decoders end with the same text"
    best = max(results, key=lambda r: r[1])
    same = "same output" if res.lossless else (
        f"output equal to vanilla's up to {res.near_ties} near-tie{'s' if res.near_ties > 1 else ''}"
        if res.near_ties == len(res.partings) else "output DIFFERENT from vanilla")
    scope = "" if res.complete else f", over the first {res.compared_tokens} tokens of a stopped race"
    return title, (f"{html.escape(lane_label(best[0], lanes[best[0]]), quote=False)} ran at {best[1]:.2f}× vanilla's speed "
                   f"(tokens per second of compute, {same}{scope})")


def _draw(lanes: dict[str, RunTrace], theme: str, stopped: bool, mode: str, size: tuple[int, int],
          axis: Axis = SECONDS) -> go.Figure:
    c = theme_colors(theme)
    res = _result(lanes, stopped)
    ends = _ends(lanes, res, stopped, axis)
    words = _words(lanes, res, axis)
    height = size[1] if mode != "app" else size[1] + LEGEND_LINE_PX * sum(e.label.count("<br>") + 1 for e in ends)
    layout = base_layout(theme, words[0], height=height, hovermode="closest")
    framed = mode != "app"  # a page or slide labels each lane's end in its right margin
    frame(layout, mode, *words, [] if framed else list(lanes), c, size)
    if framed:
        layout.update(margin=dict(layout["margin"], r=END_LABELS_PX), showlegend=False)
    else:
        layout["legend"].update(maxheight=LEGEND_MAX_PX)
    ymax = max((e.tokens for e in ends), default=1) or 1
    xmax = max((e.seconds for e in ends), default=1.0) or 1.0
    layout["xaxis"].update(title=dict(text=axis.x_title), range=[0, xmax * 1.04])
    layout["yaxis"].update(title=dict(text="Tokens generated"), range=[0, ymax * 1.08])
    fig = go.Figure(layout=layout)
    _lines(fig, lanes, ends, mode, axis)
    if framed:
        _end_labels(fig, ends, c, size[1] - layout["margin"]["t"] - layout["margin"]["b"], ymax)
    return pretty(fig)


def race_figure(lanes: dict[str, RunTrace], theme: str = "light", width: int | None = None,
                stopped: bool = False, fit: bool = False) -> go.Figure:
    """Tokens generated against elapsed compute time (prefill included), one line per lane.

    Speed-ups are those of the race's verdict: over the tokens every lane reached, so a race
    `stopped` before its end compares equal counts (and its unfinished lanes say "stopped").
    fit: drawn for the app, with its 16:9 slide (visual.fit).
    """
    return _figure(lanes, theme, width, stopped, fit, SECONDS)


def passes_figure(lanes: dict[str, RunTrace], theme: str = "light", width: int | None = None,
                  stopped: bool = False, fit: bool = False) -> go.Figure:
    """Tokens generated against forward passes, one line per lane: counts, not time, so the same
    on any hardware (vanilla's line makes one token a pass). Each lane's tokens per pass are
    those of the verdict (visual.verdict.per_pass), over the tokens every lane reached."""
    return _figure(lanes, theme, width, stopped, fit, PASSES)


def _figure(lanes: dict[str, RunTrace], theme: str, width: int | None, stopped: bool, fit: bool,
            axis: Axis) -> go.Figure:
    if not fit:
        return _draw(lanes, theme, stopped, "page", (width or PAGE_SIZE[0], PAGE_SIZE[1]), axis)
    app = _draw(lanes, theme, stopped, "app", (PAGE_SIZE[0], APP_HEIGHT), axis)
    slide = _draw(lanes, theme, stopped, "slide", (SLIDE_W, SLIDE_H), axis)
    return for_app(app, slide, *_words(lanes, _result(lanes, stopped), axis), {"legend": {"plot_px": APP_PLOT_PX}})
