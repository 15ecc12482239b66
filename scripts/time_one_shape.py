"""One shape on the CPU, measured: c(n) of the bundled model in bfloat16 with every linear
layer's product at one row count R (runtime/oneshape.py: torch's stock products or oneDNN's
prepacked bf16 weights; attention, norms and activations on the real rows), against the
few-row kernel and float32; the share attention takes; and the mode the load-time timing picks.

    taskset -c 1 python scripts/time_one_shape.py --rows 16,64 --threads 1

Each one-shape mode passes the bitwise row-invariance check on the model's own layers first
(oneshape.check_shape); one that fails it, or whose products this CPU lacks, is reported and not
timed. Prints one line a mode and writes --out as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

CONTEXT = 512
SIZES = (1, 16, 64)


def timed_curve(model, max_n: int) -> dict:
    from logitspec.sizing.costcurve import measure_cost_curve

    curve = measure_cost_curve(model, context_len=CONTEXT, max_n=max_n).to_dict()
    ms = dict(zip(curve["sizes"], (s * 1e3 for s in curve["seconds"])))
    return {n: round(ms[n], 2) for n in SIZES if n <= max_n}


def attention_share(model, n: int = 64) -> float:
    """Share of an n-token pass spent in the attention kernel (torch's profiler, one pass)."""
    from logitspec.sizing.costcurve import CurveMeasurement

    m = CurveMeasurement(model, context_len=CONTEXT, max_n=n, rounds=1)
    m._prepare()
    m._time(n, m._trees[n])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        m._time(n, m._trees[n])
    total = sum(e.self_cpu_time_total for e in prof.key_averages())
    attn = sum(e.cpu_time_total for e in prof.key_averages() if "row_attention" in e.key)
    return round(attn / total, 3) if total else 0.0


def measure(name: str, model, threads: int, share: bool, max_n: int) -> dict:
    from logitspec.runtime.bandwidth import memory_floor

    c = timed_curve(model, max_n)
    floor = memory_floor(model, threads).to_dict()["floor_ms"]
    row = {"mode": name, "c_ms": c, "floor_ms": round(floor, 2), "c1_over_floor": round(c[1] / floor, 2),
           **{f"c{n}_over_c1": round(c[n] / c[1], 2) for n in c if n > 1},
           "attention_share_64": attention_share(model) if share and max_n >= 64 else None}
    print(f"{name}: c(1) {c[1]} ms ({row['c1_over_floor']}x floor {row['floor_ms']} ms), "
          + ", ".join(f"c({n}) {c[n]} ms = {c[n] / c[1]:.2f} c(1)" for n in c if n > 1)
          + f", attention's share of 64 rows {row['attention_share_64']}", flush=True)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="16,64")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--modes", default="float32,exact,stock,prepacked,pick")
    p.add_argument("--max-n", type=int, default=max(SIZES), help="the largest pass timed (stock bf16 products "
                   "without bf16 matrix instructions cost seconds a pass at 64 rows)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from logitspec.models import load_model
    from logitspec.runtime.oneshape import OneShape, apply_half_mode, choose_half_mode
    from logitspec.core.settings import DecodeSettings

    want = args.modes.split(",")
    results = []
    if "float32" in want:
        f32 = load_model("bundled", "cpu", "float32").model
        results.append(measure("float32", f32, args.threads, False, args.max_n))
    lm = load_model("bundled", "cpu", "bfloat16")
    if "pick" in want:  # what load_model's timing picks here, with both times
        mode = choose_half_mode(lm.model, 0, DecodeSettings().cpu_capacity)
        print(f"load-time pick: {mode.note}", flush=True)
        results.append({**mode.to_dict(), "mode": f"load-time pick: {mode.mode}"})
    if "exact" in want:
        apply_half_mode(lm.model, None)
        results.append(measure("bfloat16, the few-row kernel", lm.model, args.threads, True, args.max_n))
    for rows in [int(r) for r in args.rows.split(",") if r]:
        for kernel in [k for k in ("stock", "prepacked") if k in want]:
            shape = OneShape(rows, kernel)
            mode = apply_half_mode(lm.model, shape)
            if mode.mode != shape.words():
                print(f"bfloat16 {shape.words()}: not used: {mode.note}", flush=True)
                results.append({"mode": f"bfloat16 {shape.words()}", "used": False, "note": mode.note})
                continue
            results.append(measure(f"bfloat16 {shape.words()}", lm.model, args.threads, True, args.max_n))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
