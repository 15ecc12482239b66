"""Figures of a bench report: speed-up and accepted tokens per category, and c(n)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

# Okabe-Ito, colour-blind safe; the same lane colours as the app's race.
COLORS = {"vanilla": "#999999", "pld": "#E69F00", "logitspec-static": "#56B4E9", "logitspec": "#009E73"}
LAYOUT = dict(font=dict(size=16), paper_bgcolor="white", plot_bgcolor="white", barmode="group",
              legend=dict(orientation="h", y=1.12, x=0), margin=dict(t=110, l=70, r=20, b=110))


def _bars(report: dict, key: str, title: str, ytitle: str):
    import plotly.graph_objects as go

    cats = report["settings"]["categories"] + ["overall"]
    fig = go.Figure()
    for m, entry in report["methods"].items():
        vals = [(entry["overall"] if c == "overall" else entry["per_category"][c]).get(key) or 0 for c in cats]
        fig.add_bar(name=m, x=cats, y=vals, marker_color=COLORS.get(m), text=[f"{v:.2f}" for v in vals],
                    textposition="outside", textfont=dict(size=11))
    if key == "speedup_vs_vanilla":
        fig.add_hline(y=1.0, line_dash="dash", line_color="#555", annotation_text="vanilla")
    s = report["settings"]
    sub = f"{s['model']} · {s['device']} · {s['dtype']} · {s['max_new_tokens']} new tokens · median of {s['repeats']}"
    fig.update_layout(title=dict(text=f"{title}<br><sup>{sub}</sup>"), yaxis_title=ytitle, **LAYOUT)
    fig.update_xaxes(tickangle=-30, gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd")
    return fig


def drafted_figure(report: dict, method: str = "logitspec"):
    """Tokens per pass the method accepted, beside what its drafts held (see drafts.py)."""
    import plotly.graph_objects as go

    entry = report["methods"].get(method)
    if entry is None or "drafted_tokens_per_step" not in entry["overall"]:
        return None
    cats = report["settings"]["categories"] + ["overall"]
    rows = [entry["overall"] if c == "overall" else entry["per_category"][c] for c in cats]
    fig = go.Figure()
    for key, name, colour in (("mean_accepted_tokens", "accepted per pass", COLORS.get(method)),
                              ("drafted_tokens_per_step", "held by the drafts per pass", "#CC79A7")):
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


def screenshot(html: Path, png: Path, width: int = 1400, height: int = 700) -> bool:
    """Render an HTML file to PNG with Debian's chromium, when it is installed."""
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if not chromium:
        return False
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--hide-scrollbars", "--virtual-time-budget=5000", f"--window-size={width},{height}",
               f"--screenshot={png.resolve()}", html.resolve().as_uri()]
        subprocess.run(cmd, capture_output=True, timeout=120)
    return png.exists()


def write_plots(report: dict, out: Path) -> list[Path]:
    """Write each figure as standalone HTML (plotly.js embedded) and as PNG when possible."""
    out.mkdir(parents=True, exist_ok=True)
    figs = {
        "speedup": _bars(report, "speedup_vs_vanilla", "Speed-up over vanilla greedy decoding", "× vanilla tokens/s"),
        "accepted": _bars(report, "mean_accepted_tokens", "Mean tokens accepted per forward pass", "tokens / pass"),
    }
    if report.get("cost_curves"):
        figs["cost_curve"] = cost_curve_figure(report)
    drafted = drafted_figure(report)
    if drafted is not None:
        figs["drafted"] = drafted
    written = []
    for name, fig in figs.items():
        html = out / f"{name}.html"
        fig.write_html(html, include_plotlyjs=True, full_html=True)
        written.append(html)
        png = out / f"{name}.png"
        if screenshot(html, png):
            written.append(png)
    return written
