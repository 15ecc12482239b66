"""Render every figure of a trace to HTML (and PNG when a browser is available).

    python -m visual TRACE.json --step N --out DIR [--theme light|dark] [--png auto|yes|no]

TRACE.json is a single run's trace (`python -m logitspec generate --save-trace`, traces/*.json)
or a recorded race (scripts/record_race.py, traces/races/*.json): its LogitSpec lane is drawn,
and its race chart holds every lane.
"""
from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

from logitspec.analysis.race import load_race
from logitspec.core.trace import RunTrace, TraceFileError

from . import (
    accepted_hist_figure,
    candidates_figure,
    failure_rows,
    race_figure,
    retrieval_html,
    retrieval_success_figure,
    step_summary_md,
    text_spans,
    time_breakdown_figure,
    topk_hit_figure,
    tree_figure,
)
from .render import Shooter, find_chromium, write_figure_html, write_html_fragment
from .style import ACCEPT_COLORS, theme_colors

FIGURES = ("tree", "candidates", "race", "topk_hit", "retrieval_success", "accepted_hist", "time_breakdown")
PAGES = ("retrieval", "text")


def text_html(trace: RunTrace) -> str:
    """The generated text, each step's span coloured by how many tokens it accepted."""
    spans = []
    for i, (text, label) in enumerate(text_spans(trace)):
        color = ACCEPT_COLORS.get(label or "", "transparent")
        spans.append(f'<span title="step {i}: {label} token(s)" style="background:{color}55;'
                     f'border-bottom:3px solid {color};white-space:pre-wrap">{html.escape(text, quote=False)}</span>')
    legend = " ".join(f'<span style="background:{c}55;border-bottom:3px solid {c};padding:0 6px">{k}</span>'
                      for k, c in ACCEPT_COLORS.items())
    return (f'<div style="font-size:18px;line-height:1.7"><div style="font-size:20px;font-weight:700">'
            f"Generated text, coloured by tokens accepted per step</div><div>{legend}</div>"
            f'<div style="margin-top:10px">{"".join(spans)}</div></div>')


def render_all(trace: RunTrace, step: int, out: Path, theme: str = "light", png: str = "auto",
               lanes: dict[str, RunTrace] | None = None) -> dict[str, list[Path]]:
    """Write every picture of `trace` at `step` to `out`; returns the files by kind."""
    out.mkdir(parents=True, exist_ok=True)
    figs = {
        "tree": tree_figure(trace, step, theme=theme),
        "candidates": candidates_figure(trace, step, theme=theme),
        "race": race_figure(lanes or {trace.method: trace}, theme=theme),
        "topk_hit": topk_hit_figure(trace, theme=theme),
        "retrieval_success": retrieval_success_figure(trace, theme=theme),
        "accepted_hist": accepted_hist_figure(trace, theme=theme),
        "time_breakdown": time_breakdown_figure(trace, theme=theme),
    }
    written: dict[str, list[Path]] = {"html": [], "png": [], "other": []}
    sizes = {}
    for name, fig in figs.items():
        written["html"].append(write_figure_html(fig, out / f"{name}.html", theme))
    written["html"].append(write_html_fragment(retrieval_html(trace, step), out / "retrieval.html",
                                               f"Retrieval at step {step}", theme))
    sizes["retrieval"] = (1240, 900)
    written["html"].append(write_html_fragment(text_html(trace), out / "text.html", "Generated text", theme))
    sizes["text"] = (1240, 400)
    (out / "summary.md").write_text(step_summary_md(trace, step) + "\n", encoding="utf-8")
    (out / "failures.json").write_text(json.dumps(failure_rows(trace), ensure_ascii=False, indent=1),
                                       encoding="utf-8")
    written["other"] += [out / "summary.md", out / "failures.json"]

    exe = find_chromium()
    if png == "yes" and exe is None:
        raise SystemExit("--png yes: no chromium found (apt-get install chromium)")
    if png != "no" and exe is not None:
        with Shooter(exe) as shoot:
            for name, fig in figs.items():
                written["png"].append(shoot.figure(fig, out / f"{name}.png", theme))
            for name in PAGES:
                w, h = sizes[name]
                written["png"].append(shoot(out / f"{name}.html", out / f"{name}.png", w, h, full_page=True))
    return written


def refuse(message: str) -> SystemExit:
    """Exit 2 with one line on stderr: what was refused and why."""
    print(f"python -m visual: {message}", file=sys.stderr)
    return SystemExit(2)


def read_lanes(path: Path) -> dict[str, RunTrace]:
    """The lanes in a trace or race file, by name; one line (SystemExit) for any other file."""
    try:
        return load_race(path)[0]
    except TraceFileError as e:
        raise refuse(f"{path}: {e}") from None


def extra_lanes(specs: list[str]) -> dict[str, RunTrace]:
    """--lane NAME=FILE: lane NAME of a race file, or the one run of a trace file."""
    lanes = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        if not path:
            raise refuse(f"--lane wants NAME=TRACE.json, got {spec!r}")
        held = read_lanes(Path(path))
        if name not in held and len(held) > 1:
            raise refuse(f"--lane {spec}: the race in {path} has no lane {name} (it has {', '.join(held)})")
        lanes[name] = held.get(name) or next(iter(held.values()))
    return lanes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m visual", description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, help="a RunTrace saved as JSON, or a recorded race (its logitspec lane)")
    ap.add_argument("--step", type=int, default=0, help="the step to draw (negative counts from the end)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the files")
    ap.add_argument("--theme", choices=["light", "dark"], default="light")
    ap.add_argument("--png", choices=["auto", "yes", "no"], default="auto",
                    help="PNG through Debian's chromium: auto = when it is installed")
    ap.add_argument("--lane", action="append", default=[], metavar="NAME=TRACE.json",
                    help="more traces for the race chart (e.g. vanilla=v.json)")
    a = ap.parse_args(argv)
    theme_colors(a.theme)
    lanes = read_lanes(a.trace)
    # A race's figures are LogitSpec's (the lane with trees); its race chart shows every lane.
    trace = lanes.get("logitspec") or next(iter(lanes.values()))
    if not -len(trace.steps) <= a.step < len(trace.steps):
        raise refuse(f"--step {a.step} is out of range: the trace has steps 0..{len(trace.steps) - 1}")
    lanes.update(extra_lanes(a.lane))
    try:
        files = render_all(trace, a.step, a.out, a.theme, a.png, lanes if len(lanes) > 1 else None)
    except OSError as e:
        raise refuse(f"cannot write to {a.out}: {e.strerror or e}") from None
    for kind, paths in files.items():
        for p in paths:
            print(f"{kind}\t{p}")
    if a.png == "auto" and not files["png"]:
        print("no chromium found: HTML only (apt-get install chromium for PNGs)", file=sys.stderr)
    return 0

if __name__ == "__main__":
    sys.exit(main())
