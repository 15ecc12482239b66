"""The key of a step's draft tree: a box style for each node source and outcome, a line style
for each kind of edge; drawn as the figure's legend (visual.tree) and as HTML beside the app's tree.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from logitspec.analysis.lanes import node_sources, sources_of
from logitspec.core.trace import RunTrace

from .data import has_split_characters
from .pieces import SPLIT_NOTE
from .style import PALETTE, blend, sub_x, theme_colors

# Each node source's legend name, from the lane table (logitspec/analysis/lanes.py).
LEGEND_NAMES = {key: src.legend for key, src in node_sources().items()}


@dataclass(frozen=True)
class KeyItem:
    """One entry of the tree's key: a box style or an edge style."""

    name: str
    fill: str
    line: str
    width: float
    symbol: str = "square"  # a Plotly marker symbol; "line" for an edge
    dash: str = "solid"
    rank: int = 100


def _origins(trace: RunTrace) -> list[str]:
    return [src.key for src in sources_of(trace.method)]


def legend_size(trace: RunTrace) -> int:
    """Entries of the tree's legend: origins, bonus, four node styles, four edge styles."""
    return len(_origins(trace)) + 1 + 3 + (trace.method != "vanilla") + 4


def edge_items(c: dict[str, str]) -> list[tuple[str, KeyItem]]:
    """The four edge styles, by the edge set they draw."""
    return [("draft", KeyItem("draft edge", "", c["edge"], 1.3, "line")),
            ("pruned", KeyItem("edge to a pruned token", "", c["edge"], 1.3, "line", "dash")),
            ("path", KeyItem("accepted path", "", PALETTE["accepted"], 5, "line")),
            ("bonus", KeyItem("to the bonus token", "", c["outline"], 2.5, "line", "dot"))]


def key_items(trace: RunTrace, theme: str = "light") -> list[KeyItem]:
    """The tree's key: origin colours, then fills, then edge styles (legend and HTML key alike)."""
    c = theme_colors(theme)
    grey = c["muted"]
    # Its method's node sources as its lane row gives them when asked: a row added to the table has its key.
    fills = [PALETTE.get(src.key, src.colour) for src in sources_of(trace.method)]
    items = [KeyItem(src.legend, fill, fill, 1, rank=10 + i) for i, (src, fill) in
             enumerate(zip(sources_of(trace.method), fills))]
    items += [KeyItem("bonus: model's next token", PALETTE["bonus"], c["outline"], 2, rank=30),
              KeyItem("accepted: filled, bold", grey, c["outline"], 3, rank=40),
              KeyItem("verified, rejected: faded", blend(grey, c["bg"], 0.45), grey, 1.5, rank=41),
              KeyItem("pruned, not verified: dashed", grey, grey, 2, "square-open", rank=42)]
    if trace.method != "vanilla":
        items.append(KeyItem("pruned, yet the model's choice", blend(PALETTE["bonus"], c["bg"], 0.45),
                             grey, 1.5, rank=43))
    return items + [item for _, item in edge_items(c)]


def _swatch(item: KeyItem) -> str:
    dash = {"dash": "dashed", "dot": "dotted"}.get(item.dash, "solid")
    if item.symbol == "line":
        return (f'<span class="key-line" style="border-top:{max(2, item.width):.0f}px {dash} {item.line}">'
                "</span>")
    fill = "transparent" if item.symbol == "square-open" else item.fill
    style = "dashed" if item.symbol == "square-open" else "solid"
    return (f'<span class="key-box" style="background:{fill};border:{max(1, item.width):.0f}px {style} '
            f'{item.line}"></span>')


def tree_key_html(trace: RunTrace, theme: str = "light") -> str:
    """The tree's key as HTML, for beside the app's tree (it wraps to any width)."""
    rows = "".join(f"<li>{_swatch(it)}<span>{sub_x(html.escape(it.name, quote=False))}</span></li>"
                   for it in key_items(trace, theme))
    if has_split_characters(trace):  # a box may show part of a character: say how
        rows += f'<li class="split-note"><span>{html.escape(SPLIT_NOTE, quote=False)}</span></li>'
    return f'<ul class="tree-key" aria-label="Key of the draft tree">{rows}</ul>'
