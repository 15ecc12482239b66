"""One shape on the CPU, measured: c(n) of the bundled model in bfloat16 when every pass is
padded to R rows, with each linear layer on torch's stock products or on oneDNN's prepacked
bf16 weights, against today's exact kernels and float32; and the share attention takes.

    python scripts/time_one_shape.py --rows 16,64 --threads 1

Each mode's row invariance is checked bitwise on the model's own layers first (a row gets the
bits of the same vector at row 0 of another pass of R rows); a mode that fails it is reported
and not timed. Prints one line a mode and writes --out as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

CONTEXT = 512
SIZES = (1, 16, 64)


def prepacked(model, rows: int) -> None:
    """Every linear layer's forward on oneDNN's bf16 weights reordered for `rows` rows."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            packed = torch.ops.mkldnn._reorder_linear_weight(mod.weight.detach(), rows)

            def fwd(x, mod=mod, packed=packed):
                y = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, x.shape[-1]), packed, mod.bias, "none", [], "")
                return y.reshape(*x.shape[:-1], y.shape[-1])
            mod.forward = fwd


def stock(model) -> None:
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.forward = lambda x, mod=mod: F.linear(x, mod.weight, mod.bias)


def invariant(model, rows: int, trials: int = 4) -> bool:
    """Bitwise: each layer shape's row r equals the same vector at row 0 of another R-row pass."""
    g = torch.Generator().manual_seed(0)
    seen = {}
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear) and tuple(mod.weight.shape) not in seen:
            seen[tuple(mod.weight.shape)] = mod
    for mod in seen.values():
        d = mod.weight.shape[1]
        x = torch.randn(rows, d, generator=g).to(mod.weight.dtype)
        y = mod(x)
        for r in range(0, rows, max(1, rows // trials)):
            other = torch.randn(rows, d, generator=g).to(mod.weight.dtype)
            other[0] = x[r]
            if not torch.equal(mod(other)[0], y[r]):
                return False
    return True


def timed_curve(model, rows: int | None) -> dict:
    from logitspec.costcurve import measure_cost_curve
    from logitspec.runtime import fixedshape

    fixedshape.PADDED_DEVICES.clear()
    fixedshape.PADDED_DEVICES.update({"cpu"} if rows else {"cuda"})
    curve = measure_cost_curve(model, context_len=CONTEXT, max_n=max(SIZES)).to_dict()
    ms = dict(zip(curve["sizes"], (s * 1e3 for s in curve["seconds"])))
    return {n: round(ms[n], 2) for n in SIZES}


def attention_share(model, rows: int | None, n: int = 64) -> float:
    """Share of an n-token pass spent in the attention modules (torch's profiler, one pass)."""
    from logitspec.costcurve import CurveMeasurement

    m = CurveMeasurement(model, context_len=CONTEXT, max_n=n, rounds=1)
    m._prepare()
    m._time(n, m._trees[n])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        m._time(n, m._trees[n])
    total = sum(e.self_cpu_time_total for e in prof.key_averages())
    attn = sum(e.cpu_time_total for e in prof.key_averages() if "row_attention" in e.key or "blocked" in e.key)
    return round(attn / total, 3) if total else 0.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="16,64")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--attention", choices=("kernel", "blocked"), default="kernel",
                   help="padded passes' attention: the CPU's row-invariant kernel or torch's blocked one")
    p.add_argument("--modes", default="float32,exact,stock,prepacked")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from logitspec.models import load_model
    from logitspec.runtime import attention, linear
    from logitspec.runtime.bandwidth import memory_floor

    rows_asked = [int(r) for r in args.rows.split(",") if r]
    results = []
    want = args.modes.split(",")
    modes = [m for m in [("float32", None, None), ("bfloat16 exact kernels", None, None)]
             if ("float32" if m[0] == "float32" else "exact") in want]
    modes += [(f"bfloat16 one shape, {how}, R={r}", r, how) for r in rows_asked for how in ("stock", "prepacked")
              if how in want]
    for name, rows, how in modes:
        lm = load_model("bundled", "cpu", "float32" if name == "float32" else "bfloat16")
        model = lm.model
        if how:
            import os
            os.environ["LOGITSPEC_CAPACITY"] = str(rows)  # the padded row count (Limits.capacity)
            linear.invariant_rows = lambda: 1  # no few-row kernel: one shape instead
            if args.attention == "kernel":  # the CPU's row-invariant attention, not torch's blocked one
                attention.row_attention_for = lambda query: attention.row_attention_kernel()
            (prepacked(model, rows) if how == "prepacked" else stock(model))
            if not invariant(model, rows):
                results.append({"mode": name, "row_invariant": False})
                print(f"{name}: NOT row-invariant on this CPU: not timed", flush=True)
                continue
        c = timed_curve(model, rows)
        floor = memory_floor(model, args.threads).to_dict()["floor_ms"]
        share = attention_share(model, rows) if how else None
        row = {"mode": name, "c_ms": c, "floor_ms": round(floor, 2), "c1_over_floor": round(c[1] / floor, 2),
               "c16_over_c1": round(c[16] / c[1], 2), "c64_over_c1": round(c[64] / c[1], 2),
               "attention_share_64": share, "row_invariant": True if how else None}
        results.append(row)
        print(f"{name}: c(1) {c[1]} ms ({row['c1_over_floor']}x floor {row['floor_ms']} ms), c(16)/c(1) "
              f"{row['c16_over_c1']}, c(64)/c(1) {row['c64_over_c1']}, attention {share}", flush=True)
        del lm, model
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
