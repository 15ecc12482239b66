"""Colours, themes and the shared look of every figure.

One colour-blind-safe palette (Okabe & Ito) is used for the same meaning in every
picture. Figures take a `theme` ("light" or "dark"); both set their own opaque
background so a figure reads the same in the app, in a saved PNG and on a slide.
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from logitspec.analysis.lanes import LANES, colour, node_sources
from logitspec.analysis.marks import WHITESPACE_MARKS, visible  # noqa: F401  (visual's names for them)

# Okabe-Ito: black 000000, orange E69F00, sky blue 56B4E9, bluish green 009E73,
# yellow F0E442, blue 0072B2, vermillion D55E00, reddish purple CC79A7.

PALETTE: dict[str, str] = {
    # Where each draft node came from, x_{i+1} first: the node sources of the lane table
    # (logitspec/analysis/lanes.py), a method's own beside its lane's colour.
    **{key: src.colour for key, src in node_sources().items()},
    "g2": "#0072B2",  # g2: a branch for one next-next candidate (its rank's bucket colours the node)
    "bonus": "#F0E442",  # the model's own token after the accepted path
    "accepted": "#009E73",
    "rejected": "#D55E00",
    "pruned": "#999999",
    **{ln.name: ln.colour for ln in LANES},  # the lanes' own colours (logitspec/analysis/lanes.py)
    # retrieval outcomes
    "g1 matched": "#E69F00",
    "g2 rescued": "#0072B2",
    "both failed": "#D55E00",
    "matched": "#E69F00",
    "failed": "#D55E00",
    "no retrieval": "#8C8C8C",
    # where the time goes
    "prefill": "#8C8C8C",
    "draft": "#E69F00",
    "forward": "#0072B2",
    "bookkeeping": "#CC79A7",
}

# Labels of gr.HighlightedText: tokens accepted by the step that produced a span.
ACCEPT_COLORS: dict[str, str] = {
    "1": "#B8B8B8",  # only x_{i+1}: no draft token accepted
    "2": "#56B4E9",
    "3": "#0072B2",
    "4+": "#009E73",
}

PLOT_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "responsive": True,
    "toImageButtonOptions": {"format": "png", "filename": "logitspec", "scale": 2},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}

THEMES: dict[str, dict[str, str]] = {
    "light": {
        "bg": "#FFFFFF",
        "text": "#1A1A1A",
        "muted": "#595959",
        "grid": "#D0D0D0",
        "edge": "#8C8C8C",
        "outline": "#1A1A1A",
    },
    "dark": {
        "bg": "#0B0F19",  # Gradio's dark body colour
        "text": "#F2F2F2",
        "muted": "#B3B3B3",
        "grid": "#3A3F4B",
        "edge": "#8C8C8C",
        "outline": "#F2F2F2",
    },
}

FONT_FAMILY = "'DejaVu Sans', 'Liberation Sans', Arial, sans-serif"
MONO_FAMILY = "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace"
FONT_SIZE = 16  # body text; nothing on a figure is smaller than MIN_FONT
MIN_FONT = 14
TITLE_SIZE = 22
MONO_CHAR_EM = 0.602  # advance of one DejaVu Sans Mono glyph, in em


def theme_colors(theme: str) -> dict[str, str]:
    try:
        return THEMES[theme]
    except KeyError:
        raise ValueError(f"unknown theme {theme!r}; choose one of {', '.join(THEMES)}") from None


def lane_color(name: str, method: str | None = None) -> str:
    """Colour of a race lane: by its name, else by its decoder."""
    return colour(name, method) or PALETTE["root"]


def rank_bucket(rank: int | None) -> str:
    if rank is None:
        return "g2-top"
    if rank <= 8:
        return "g2-top"
    if rank <= 32:
        return "g2-mid"
    return "g2-tail"


def node_color_key(origin: str, rank: int | None) -> str:
    if origin == "g2":
        return rank_bucket(rank)
    return origin if origin in PALETTE else "root"


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def rgb_to_hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(v))):02X}" for v in rgb)


def blend(color: str, background: str, alpha: float) -> str:
    """`color` laid over `background` at opacity `alpha`, as an opaque colour."""
    a, b = hex_to_rgb(color), hex_to_rgb(background)
    return rgb_to_hex(tuple(alpha * x + (1 - alpha) * y for x, y in zip(a, b)))


def luminance(color: str) -> float:
    def lin(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(v) for v in hex_to_rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(c1: str, c2: str) -> float:
    l1, l2 = sorted((luminance(c1), luminance(c2)), reverse=True)
    return (l1 + 0.05) / (l2 + 0.05)


def text_on(fill: str) -> str:
    """Black or white, whichever reads better on `fill`."""
    return "#000000" if contrast(fill, "#000000") >= contrast(fill, "#FFFFFF") else "#FFFFFF"


def marks_note(shown: str, only: str = "·⏎⇥⇤") -> str:
    """'⇤ marks a carriage return': the whitespace marks among `only` that `shown` uses, explained
    ("" when it uses none)."""
    said = [f"{mark} {what}" for mark, what in WHITESPACE_MARKS.values() if mark in only and mark in shown]
    if not said:
        return ""
    return said[0].replace(" ", " marks ", 1) + "".join(", " + x for x in said[1:])




def truncate(text: str, n: int) -> str:
    if n <= 0:
        return ""
    return text if len(text) <= n else (text[: n - 1] + "…" if n > 1 else "…")


# Tick labels are kept inside by automargin; Plotly's default overflow check ("hide past div")
# measures every label once per label drawn, which was most of a step move's time in the browser.
TICK_OVERFLOW = "allow"


def base_layout(theme: str, title: str, **kw: Any) -> dict[str, Any]:
    """The layout every figure starts from: plain title, big fonts, opaque theme background."""
    c = theme_colors(theme)
    axis = dict(
        gridcolor=c["grid"], zerolinecolor=c["grid"], linecolor=c["muted"], showline=True,
        tickfont=dict(size=FONT_SIZE, color=c["text"]), title=dict(font=dict(size=FONT_SIZE + 1, color=c["text"])),
        automargin=True, ticklabeloverflow=TICK_OVERFLOW,
    )
    layout: dict[str, Any] = dict(
        template="none",
        title=dict(text=title, font=dict(size=TITLE_SIZE, color=c["text"]), x=0.01, xanchor="left"),
        font=dict(family=FONT_FAMILY, size=FONT_SIZE, color=c["text"]),
        paper_bgcolor=c["bg"],
        plot_bgcolor=c["bg"],
        xaxis=dict(axis),
        yaxis=dict(axis),
        legend=dict(font=dict(size=FONT_SIZE - 1, color=c["text"]), bgcolor="rgba(0,0,0,0)"),
        hoverlabel=dict(font=dict(family=MONO_FAMILY, size=MIN_FONT + 1), align="left"),
        margin=dict(l=80, r=40, t=90, b=70),
    )
    layout.update(kw)
    if layout.get("height"):
        # Title pinned to the top; subtitle below it; a top legend goes between them and the plot.
        layout["title"].update(yref="container", y=1 - 12 / layout["height"], yanchor="top")
    return layout


def top_legend(layout: dict[str, Any], theme: str, y_px: float = 8) -> dict[str, Any]:
    """A horizontal legend just above the plot area, left-aligned."""
    c = theme_colors(theme)
    layout["legend"] = dict(orientation="h", x=0, xanchor="left", xref="paper", y=1, yanchor="bottom",
                            yref="paper", font=dict(size=FONT_SIZE - 1, color=c["text"]), bgcolor="rgba(0,0,0,0)")
    layout["legend"]["y"] = 1 + y_px / max(1, layout["height"] - layout["margin"]["t"] - layout["margin"]["b"])
    return layout


def style_axes(fig: go.Figure, theme: str) -> go.Figure:
    """Apply the theme's axis look to every axis of a figure with subplots."""
    c = theme_colors(theme)
    fig.update_xaxes(gridcolor=c["grid"], zerolinecolor=c["grid"], linecolor=c["muted"], showline=True,
                     tickfont=dict(size=FONT_SIZE, color=c["text"]), title_font=dict(size=FONT_SIZE + 1, color=c["text"]),
                     automargin=True, ticklabeloverflow=TICK_OVERFLOW)
    fig.update_yaxes(gridcolor=c["grid"], zerolinecolor=c["grid"], linecolor=c["muted"], showline=True,
                     tickfont=dict(size=FONT_SIZE, color=c["text"]), title_font=dict(size=FONT_SIZE + 1, color=c["text"]),
                     automargin=True, ticklabeloverflow=TICK_OVERFLOW)
    fig.update_annotations(font=dict(size=FONT_SIZE, color=c["text"]))
    return fig


_SUBS = (("x̂_{i+2}", "x̂<sub>i+2</sub>"), ("x_{i+1}", "x<sub>i+1</sub>"), ("x_{i+2}", "x<sub>i+2</sub>"))


def sub_x(text: str) -> str:
    """x_{i+1} → x<sub>i+1</sub> (plotly draws <sub>)."""
    for a, b in _SUBS:
        text = text.replace(a, b)
    return text


def pretty(fig: go.Figure) -> go.Figure:
    """Every x_{i+1} / x_{i+2} in a figure's words set as a subscript."""

    def walk(v):
        if isinstance(v, str):
            return sub_x(v) if "_{i+" in v else v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    # The words change, not the structure: the figure was validated when it was built.
    return go.Figure(walk(fig.to_dict()), _validate=False)


# The tree-budget replay's curves (logitspec.analysis.budget), named and dashed alike in the app and the bench.
BUDGET_NAMES = {"paper": "paper's tree (rank rule)", "cost": "cost tree's ranking", "pld": "prompt lookup's chain"}
BUDGET_DASH = {"paper": "dash", "cost": "solid", "pld": "dot"}
