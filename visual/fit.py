"""Where a figure is shown: in the app, whose container width only the browser knows, or on a
16:9 slide.

A figure drawn for the app (`for_app`) has no fixed width, so Plotly fills its container; its
title and subtitle stay out of the plot, in `meta.caption`, shown as an HTML caption that
wraps at any width; and its layout's `meta` carries
- `fit`: what the browser re-cuts to the width it finds (token labels inside boxes, tick
  labels along an axis; ui/figures.js does it with the rules below), and
- `slide`: what differs in the same figure laid out for a 16:9 slide, as
  {"layout": {key: value}, "data": [{key: value} per trace]} (a None value removes the key).
The app's download buttons apply `slide` and hand the figure to Plotly.downloadImage at
SLIDE_W x SLIDE_H, scaled by SLIDE_SCALE: a 1920 x 1080 PNG, or an SVG of that size.
"""
from __future__ import annotations

import html
import math
import re
from typing import Any, Iterable, Sequence

import plotly.graph_objects as go

from .style import sub_x

SLIDE_W, SLIDE_H = 1280, 720  # the slide's layout size, 16:9
SLIDE_SCALE = 1.5  # exported at 1920 x 1080: every font 1.5 times its layout size
TEXT_EM = 0.6  # a generous advance of one DejaVu Sans glyph, in em (wrapping errs short)
LINE_EM = 1.4  # line height, in em
SLIDE_PAD = 24  # the slide's left and right padding around its title, pixels

_TAG = re.compile(r"<[^>]+>")


def plain(text: str) -> str:
    """Figure text as it reads: tags dropped, entities decoded."""
    return html.unescape(_TAG.sub("", text))


def text_px(text: str, size: float) -> float:
    """An upper estimate of the width of a line of figure text at font `size`."""
    return len(plain(text)) * size * TEXT_EM


def wrap_html(text: str, width_px: float, size: float) -> tuple[str, int]:
    """`text` broken with <br> into lines that fit `width_px`; the text and its line count.
    Breaks fall between words and after " · "; a <br> already there is kept."""
    lines: list[str] = []
    for part in text.split("<br>"):
        line = ""
        for word in part.split(" "):
            trial = f"{line} {word}" if line else word
            if line and text_px(trial, size) > width_px:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return "<br>".join(lines), len(lines)


def legend_px(names: Iterable[str], size: float, symbol_px: float = 48) -> int:
    """Width a vertical legend of these entries needs."""
    return int(max((text_px(n, size) for n in names), default=0) + symbol_px)


def title_block(title: str, subtitle: str, title_size: float, sub_size: float,
                width_px: float) -> tuple[str, str, int]:
    """Title and subtitle wrapped to `width_px`, and the pixels they take from the top."""
    title, n_title = wrap_html(title, width_px, title_size)
    subtitle, n_sub = wrap_html(subtitle, width_px, sub_size) if subtitle else ("", 0)
    return title, subtitle, int(12 + LINE_EM * (n_title * title_size + n_sub * sub_size) + 8)


def slide_title(layout: dict[str, Any], title: str, subtitle: str, title_size: float,
                sub_size: float, color: str, muted: str) -> int:
    """Set a slide's wrapped title and subtitle at its top; returns the pixels they take."""
    t, sub, px = title_block(title, subtitle, title_size, sub_size, SLIDE_W - 2 * SLIDE_PAD)
    layout["title"] = dict(text=t, x=SLIDE_PAD / SLIDE_W, xanchor="left", yref="container",
                           y=1 - 12 / SLIDE_H, yanchor="top", font=dict(size=title_size, color=color),
                           subtitle=dict(text=sub, font=dict(size=sub_size, color=muted)))
    return px


def right_margin(names: Sequence[str], size: float) -> int:
    """The right margin a vertical legend of these entries needs (see right_legend)."""
    return legend_px(names, size) + 16


def right_legend(size: float, color: str, plot_w: float) -> dict[str, Any]:
    """A vertical legend just right of a plot `plot_w` pixels wide, top-aligned with it."""
    return dict(orientation="v", x=1 + 12 / plot_w, xanchor="left", xref="paper", y=1, yanchor="top",
                yref="paper", font=dict(size=size, color=color), bgcolor="rgba(0,0,0,0)", traceorder="normal")


def thin_ticks(vals: Sequence[float], unit_px: float, min_px: float, keep: Iterable[float] = ()) -> list[float]:
    """The tick values to label when one unit of the axis is `unit_px` wide and labels need
    `min_px` apart: `keep` first, then every step-th value from the first (ui/figures.js
    applies the same rule in the browser)."""
    step = max(1, math.ceil(min_px / max(unit_px, 1e-9)))
    chosen = [v for v in keep if v in vals]
    for v in vals:
        if (v - vals[0]) % step == 0 and all(abs(v - k) >= step for k in chosen):
            chosen.append(v)
    return sorted(chosen)


def shown_ticks(vals: Sequence[float], text: Sequence[str], keep: Iterable[float], unit_px: float,
                min_px: float) -> tuple[list[float], list[str]]:
    """The ticks `thin_ticks` labels, and their text (a first cut the browser redoes at its width)."""
    shown = set(thin_ticks(vals, unit_px, min_px, keep))
    pairs = [(v, t) for v, t in zip(vals, text) if v in shown]
    return [v for v, _ in pairs], [t for _, t in pairs]


def slide_patch(app: dict[str, Any], slide: dict[str, Any]) -> dict[str, Any]:
    """What turns the app figure `app` into `slide` (both as Figure.to_dict())."""

    def diff(a: dict, b: dict, skip: tuple[str, ...] = ()) -> dict:
        out = {k: v for k, v in b.items() if k not in skip and a.get(k) != v}
        out.update({k: None for k in a if k not in b and k not in skip})
        return out

    if len(app["data"]) != len(slide["data"]):
        raise ValueError("an app figure and its slide must draw the same traces")
    return {"layout": diff(app["layout"], slide["layout"], ("meta", "template")),
            "data": [diff(a, b) for a, b in zip(app["data"], slide["data"])]}


def for_app(app: go.Figure, slide: go.Figure, title: str, subtitle: str = "",
            fit: dict[str, Any] | None = None) -> go.Figure:
    """`app` with its caption, what the browser fits, and its slide version in layout.meta."""
    a, s = app.to_dict(), slide.to_dict()
    fit = fit or {}
    patch = slide_patch(a, s)
    # What the browser re-cuts on the app figure, the slide always sets again for itself.
    if "labels" in fit:
        i = fit["labels"]["trace"]
        patch["data"][i]["text"] = s["data"][i].get("text")
    if "ticks" in fit:
        patch["layout"][fit["ticks"]["axis"]] = s["layout"][fit["ticks"]["axis"]]
    meta = dict(a["layout"].get("meta") or {})
    meta.update(caption=dict(title=sub_x(title), subtitle=sub_x(subtitle)), slide=patch, fit=fit)
    a["layout"]["meta"] = meta
    return go.Figure(a, _validate=False)  # both parts were validated when drawn; meta is free-form


def slide_figure(fig: go.Figure) -> go.Figure:
    """An app figure as its 16:9 slide (what the download buttons export)."""
    d = fig.to_dict()
    meta = dict(d["layout"].get("meta") or {})
    patch = meta.pop("slide", None)
    if patch is None:
        raise ValueError("this figure was not drawn for the app: it has no slide version")
    meta.pop("fit", None)
    meta.pop("caption", None)

    def apply(target: dict, changes: dict) -> None:
        for k, v in changes.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v

    apply(d["layout"], patch["layout"])
    for trace, changes in zip(d["data"], patch["data"]):
        apply(trace, changes)
    d["layout"]["meta"] = meta
    return go.Figure(d, _validate=False)  # the app figure and its slide patch were validated when drawn


def caption_html(fig: go.Figure | None) -> str:
    """The title and subtitle of an app figure, as HTML that wraps to any width."""
    cap = ((fig.layout.meta or {}) if fig is not None else {}).get("caption") or {}
    if not cap.get("title"):
        return ""
    sub = f'<p class="fig-sub">{cap["subtitle"]}</p>' if cap.get("subtitle") else ""
    return f'<div class="fig-caption"><p class="fig-title">{cap["title"]}</p>{sub}</div>'


def frame(layout: dict[str, Any], mode: str, title: str, subtitle: str, names: Sequence[str],
          colors: dict[str, str], size: tuple[int, int], left: int = 90, bottom: int = 80) -> float:
    """Title, legend and margins of a figure drawn for `mode`; returns its plot's width (an
    estimate in the app, where the browser decides).

    app: no title (the page shows it in HTML), the legend in rows on top (Plotly wraps it to
    the figure's width and moves the plot down under it). page and slide: `size`, the
    title wrapped to it on top, the legend beside the plot, so neither can cover the other.
    """
    font = layout.get("font", {}).get("size", 16)
    if mode == "app":
        layout.update(title=dict(text=""), showlegend=bool(names), margin=dict(l=left, r=10, t=10, b=bottom))
        # Anchored to the figure, not the plot: the rows use the whole width and push the plot down.
        layout["legend"] = dict(orientation="h", xref="container", x=0, xanchor="left", yref="container", y=1,
                                yanchor="top", font=dict(size=font - 2, color=colors["text"]), bgcolor="rgba(0,0,0,0)")
        return APP_PLOT_W
    width, height = size
    title_size = layout["title"]["font"]["size"]
    if mode == "slide":
        top = slide_title(layout, title, subtitle, title_size, font - 1, colors["text"], colors["muted"])
    else:
        t, sub, top = title_block(title, subtitle, title_size, font - 1, width - 2 * SLIDE_PAD)
        layout["title"].update(text=t, x=SLIDE_PAD / width, xanchor="left", yref="container",
                               y=1 - 12 / height, yanchor="top",
                               subtitle=dict(text=sub, font=dict(size=font - 1, color=colors["muted"])))
    right = right_margin(names, font - 1) if names else 30
    margin = dict(l=left, r=right, t=top + 16, b=bottom)
    plot_w = width - left - right
    layout.update(width=width, height=height, margin=margin, showlegend=bool(names),
                  legend=right_legend(font - 1, colors["text"], plot_w))
    return plot_w


APP_PLOT_W = 560  # the plot width an app figure is first laid out for (half a desktop page)
APP_WIDE_PLOT_W = 1000  # the same for a figure across the page (the tree): its labels are first cut for it
SLIDER_PX = 44  # the height the page adds under a figure too deep for its width, for its range slider
