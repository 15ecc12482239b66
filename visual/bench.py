"""Figures of a bench report: speed-up and accepted tokens per category, and c(n)."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from .render import find_chromium, screenshot
from .style import PALETTE, lane_color

HELD_COLOR = PALETTE["root"]  # what the drafts held: reddish purple, apart from the four methods' lane colours
LAYOUT = dict(font=dict(size=16), paper_bgcolor="white", plot_bgcolor="white", barmode="group",
              legend=dict(orientation="h", y=1.12, x=0), margin=dict(t=110, l=70, r=20, b=110))


def _bars(report: dict, key: str, title: str, ytitle: str):
    import plotly.graph_objects as go

    cats = report["settings"]["categories"] + ["overall"]
    fig = go.Figure()
    ranged = False
    for m, entry in report["methods"].items():
        rows = [entry["overall"] if c == "overall" else entry["per_category"][c] for c in cats]
        vals = [r.get(key) or 0 for r in rows]
        # the speed-up's range over the repetitions, where the report has it for every bar
        spread = key == "speedup_vs_vanilla" and all("speedup_min" in r for r in rows)
        error = dict(type="data", symmetric=False,
                     array=[max(0.0, r["speedup_max"] - v) for r, v in zip(rows, vals)],
                     arrayminus=[max(0.0, v - r["speedup_min"]) for r, v in zip(rows, vals)], thickness=1.2, width=3,
                     color="#333") if spread else None
        ranged = ranged or spread
        fig.add_bar(name=m, x=cats, y=vals, marker_color=lane_color(m, m), text=[f"{v:.2f}" for v in vals],
                    textposition="outside", textfont=dict(size=11), error_y=error)
    if key == "speedup_vs_vanilla":
        fig.add_hline(y=1.0, line_dash="dash", line_color="#555", annotation_text="vanilla")
    s = report["settings"]
    sub = (f"{s['model']} · {machine(s)} · {s['dtype']} · {s['max_new_tokens']} new tokens"
           f" · median of {s['repeats']}" + (" (whiskers: the range over them)" if ranged else ""))
    fig.update_layout(title=dict(text=f"{title}<br><sup>{sub}</sup>"), yaxis_title=ytitle, **LAYOUT)
    fig.update_xaxes(tickangle=-30, gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd")
    return fig


def machine(settings: dict) -> str:
    """The machine a report ran on, in words: the CPU (or GPU) and the vector instructions
    its kernels used, saying so where they were held below what the CPU has."""
    text = settings.get("hardware") or settings["device"]
    flags = settings.get("instruction_sets") or []
    best = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "NEON" if "asimd" in flags else None
    held = str((settings.get("isa_caps") or {}).get("torch_cpu_capability", "")).upper()
    if best == "AVX-512" and held == "AVX2":
        return f"{text} · AVX-512 CPU held to AVX2"
    return f"{text} · {best}" if best else text


def drafted_figure(report: dict, method: str = "logitspec"):
    """Tokens per pass the method accepted, beside what its drafts held (see drafts.py)."""
    import plotly.graph_objects as go

    entry = report["methods"].get(method)
    if entry is None or "drafted_tokens_per_step" not in entry["overall"]:
        return None
    cats = report["settings"]["categories"] + ["overall"]
    rows = [entry["overall"] if c == "overall" else entry["per_category"][c] for c in cats]
    fig = go.Figure()
    for key, name, colour in (("mean_accepted_tokens", "accepted per pass", lane_color(method, method)),
                              ("drafted_tokens_per_step", "held by the drafts per pass", HELD_COLOR)):
        vals = [r.get(key) or 0 for r in rows]
        fig.add_bar(name=name, x=cats, y=vals, marker_color=colour, text=[f"{v:.2f}" for v in vals],
                    textposition="outside", textfont=dict(size=11))
    fig.update_layout(title=dict(text=f"{method}: tokens accepted per pass, and what the drafts held"
                                      "<br><sup>held: root + the longest true continuation on any drafted "
                                      "chain, had every drafted token been verified</sup>"),
                      yaxis_title="tokens / pass", **LAYOUT)
    fig.update_xaxes(tickangle=-30, gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd")
    return fig


def cost_curve_figure(report: dict):
    import plotly.graph_objects as go

    fig = go.Figure()
    for c in report.get("cost_curves", []):
        fig.add_scatter(x=c["sizes"], y=[1e3 * t for t in c["seconds"]], mode="lines+markers",
                        name=f"context {c['context_len']} tokens")
    s = report["settings"]
    fig.update_layout(title=f"Forward-pass cost c(n) measured on {s['device']} ({s['dtype']}, {s['threads']} threads)",
                      xaxis_title="tree tokens verified in one pass (n)", yaxis_title="milliseconds", **LAYOUT)
    fig.update_xaxes(gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd", rangemode="tozero")
    return fig


def _baseline(report: dict) -> str:
    t = report.get("settings", {}).get("decode", {}).get("temperature", 0)
    return f"sampling at temperature {t:g}" if t else "greedy decoding"


def write_plots(report: dict, out: Path) -> list[Path]:
    """Write each figure as standalone HTML (plotly.js embedded) and as PNG when chromium is there."""
    out.mkdir(parents=True, exist_ok=True)
    figs = {
        "speedup": _bars(report, "speedup_vs_vanilla", f"Speed-up over vanilla {_baseline(report)}", "× vanilla tokens/s"),
        "accepted": _bars(report, "mean_accepted_tokens", "Mean tokens accepted per forward pass", "tokens / pass"),
    }
    if report.get("cost_curves"):
        figs["cost_curve"] = cost_curve_figure(report)
    drafted = drafted_figure(report)
    if drafted is not None:
        figs["drafted"] = drafted
    written = []
    chromium = find_chromium()
    for name, fig in figs.items():
        html = out / f"{name}.html"
        fig.write_html(html, include_plotlyjs=True, full_html=True)
        written.append(html)
        if chromium is not None:
            try:
                written.append(_png(fig, out / f"{name}.png", chromium))
            except (RuntimeError, subprocess.TimeoutExpired) as e:  # the HTML stands; say why there is no PNG
                print(f"no PNG of {name}: {str(e).splitlines()[0]}", file=sys.stderr)
    return written


def _png(fig, png: Path, chromium: str) -> Path:
    """The figure alone as a PNG: drawn from a page without Plotly's toolbar."""
    with tempfile.TemporaryDirectory(prefix="bench-png-") as tmp:
        page = Path(tmp) / "figure.html"
        fig.write_html(page, include_plotlyjs=True, full_html=True, config={"displayModeBar": False})
        return screenshot(page, png, 1400, 700, chromium, timeout=120)
