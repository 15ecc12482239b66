"""Figures of a bench report: speed-up and accepted tokens per category, c(n), and tokens per pass
against tree budget (logitspec.analysis.budget).

    python -m visual.bench REPORT.json --out DIR    # the report `python -m logitspec.bench --out` wrote
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from logitspec.analysis.lanes import replaying

from .render import find_chromium, screenshot
from .style import BUDGET_DASH, BUDGET_NAMES, PALETTE, lane_color

HELD_COLOR = PALETTE["root"]  # what the drafts held: reddish purple, apart from the four methods' lane colours
LAYOUT = dict(font=dict(size=16), paper_bgcolor="white", plot_bgcolor="white", barmode="group",
              legend=dict(orientation="h", y=1.12, x=0), margin=dict(t=110, l=70, r=70, b=110))


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
        # Its label in the right margin, where no bar's number is.
        fig.add_hline(y=1.0, line_dash="dash", line_color="#555", annotation_text="vanilla",
                      annotation_position="right", annotation_xshift=4)
    s = report["settings"]
    runs = f"median of {s['repeats']}" if s["repeats"] > 1 else "one run"
    sub = (f"{s['model']} · {machine(s)} · {s['dtype']} · {s['max_new_tokens']} new tokens · {runs}"
           + (" (whiskers: the range over them)" if ranged else ""))
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


DTYPE_STYLE = {"float32": (PALETTE["logitspec"], "solid"), "bfloat16": (PALETTE["rejected"], "dash"),
               "float16": (PALETTE["accepted"], "dashdot")}


def pass_cost_figure(report: dict):
    """c(n) over a 512-token cache for each dtype timed, each beside its memory floor: the time
    reading its weights once takes on this machine, below which no one-token pass can go."""
    import plotly.graph_objects as go

    entries = report.get("pass_cost") or []
    if not entries:
        return None
    fig = go.Figure()
    for e in entries:
        colour, dash = DTYPE_STYLE.get(e["dtype"], (PALETTE["root"], "solid"))
        c, f = e["curve"], e["memory_floor"]
        fig.add_scatter(x=c["sizes"], y=[1e3 * t for t in c["seconds"]], mode="lines+markers", name=(
            f"{e['dtype']}: c(1) {e['c1_ms']:.1f} ms, c(16)/c(1) {e['c16_over_c1']:.2f}, "
            f"c(64)/c(1) {e['c64_over_c1']:.2f}"), line=dict(color=colour, dash=dash))
        fig.add_scatter(x=[1, c["sizes"][-1]], y=[f["floor_ms"]] * 2, mode="lines", line=dict(color=colour, width=1, dash="dot"),
                        name=(f"{e['dtype']} memory floor {f['floor_ms']:.1f} ms ({f['weight_bytes'] / 1e6:.0f} MB "
                              f"at {f['read_gb_per_s']:.1f} GB/s); c(1) = {e['c1_over_floor']:.2f}x it"))
    fig.update_layout(title=dict(text=f"What a forward pass of n tree tokens costs, and the floor<br><sup>"
                                      f"{machine(report['settings'])} · context {entries[0]['context_len']} tokens · "
                                      "fastest of 4 rounds per size</sup>"),
                      xaxis_title="tree tokens verified in one pass (n)", yaxis_title="milliseconds",
                      height=680, **{**LAYOUT, "legend": dict(orientation="h", y=-0.3, x=0),
                                     "margin": dict(t=110, l=70, r=20, b=230)})
    fig.update_xaxes(gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd", rangemode="tozero")
    return fig


def budget_curve_figure(report: dict):
    """Tokens per pass trees of at most B nodes would have accepted in the bench's runs of one
    method, pooled over its questions (logitspec.analysis.budget), with the mean tree it used."""
    import plotly.graph_objects as go

    # The cost tree's lane first, then the paper's, then prompt lookup's: the lanes whose trees the replay follows.
    replayed = [replaying(o).name for o in ("cost", "paper", "pld") if replaying(o)]
    method = next((m for m in replayed if "budget" in report["methods"].get(m, {}).get("overall", {})), None)
    if method is None:
        return None
    b = report["methods"][method]["overall"]["budget"]
    fig = go.Figure()
    for name, ys in b["curves"].items():
        colour = lane_color(method if name == "cost" else replaying(name).name)
        fig.add_scatter(x=list(range(1, len(ys) + 1)), y=ys, mode="lines", name=BUDGET_NAMES[name],
                        line=dict(color=colour, width=3, dash=BUDGET_DASH[name]))
    fig.add_scatter(x=[b["own_budget"]], y=[b["tokens_per_pass"]], mode="markers+text", name=(
        f"{method}'s own trees: mean {b['own_budget']:.1f} nodes, {b['tokens_per_pass']:.2f} tokens per pass"),
        marker=dict(symbol="diamond", size=14, color=PALETTE["accepted"], line=dict(color="#333", width=1)),
        text=["the budget it used"], textposition="bottom right")
    # B = 64 as a trace, in data coordinates on the log axis.
    top = 1.1 * max([b["tokens_per_pass"], *(max(v) for v in b["curves"].values())])
    fig.add_scatter(x=[len(ys), len(ys)], y=[0, top], mode="lines+text", showlegend=False, hoverinfo="skip",
                    line=dict(color="#555", dash="dash", width=1.5), textposition="bottom left",
                    text=["", f"{len(ys)}: what a GPU would verify in one pass "], name="B = 64")
    fig.update_layout(title=dict(text=f"{method}: tokens per pass against tree budget B, its {b['passes']} passes "
                                      "replayed<br><sup>counts of tokens the output confirms, pooled over the "
                                      "questions; no speed simulated</sup>"),
                      xaxis_title="tree budget B (nodes per pass, root included)", yaxis_title="tokens / pass",
                      **LAYOUT)
    fig.update_xaxes(type="log", tickvals=[1, 2, 4, 8, 16, 32, 64], gridcolor="#ddd")
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
    passes = pass_cost_figure(report)
    if passes is not None:
        figs["pass_cost"] = passes
    drafted = drafted_figure(report)
    if drafted is not None:
        figs["drafted"] = drafted
    budget = budget_curve_figure(report)
    if budget is not None:
        figs["budget"] = budget
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m visual.bench", description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path, help="a bench report (python -m logitspec.bench --out)")
    p.add_argument("--out", type=Path, required=True, help="write figures (HTML, PNG) to this folder")
    args = p.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"error: cannot read the bench report {args.report}: {e}", file=sys.stderr)
        return 2
    for path in write_plots(report, args.out):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
