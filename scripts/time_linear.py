"""Time few-row products over the bundled model's weight shapes: the stock kernel, MKL's
packed GEMM and each variant of the few-row kernel this CPU runs, side by side.

    python scripts/time_linear.py [--rows 1,2,3,4,6,8,12,16] [--passes 7] [--isa avx512,avx2|neon]
    python scripts/time_linear.py --curve [--passes 3] [--isa avx512,avx2|neon]

30 layers x 7 matrices (SmolLM2-135M: 576 wide, 1536 in the MLP, 3 key/value heads of 64)
of random float32 weights, so they stream from memory as a real forward pass's do. Prints
the fastest of `passes` passes per kernel and row count, in ms, and the weight bytes read
per second; the kernels take turns within each pass, so load from other work on a shared
machine falls on all of them alike. With --curve: the bundled model's c(n) over a 512-token
context, without the kernel and with each variant, interleaved in one process, each size
keeping its fastest. The variants default to every one this CPU can run (the AVX2 one is
built without AVX-512 even on a CPU that has it). Run it with nothing else on the CPU.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logitspec.runtime.fewrows import (ISAS, cpu_flags, few_row_kernel, kernel_status, unsupported_reason,
                                       variants_here)
from logitspec.runtime.threads import configure_threads

SHAPES = [(576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536)]


def cpu_line() -> str:
    """The CPU's model name and the flags that pick a variant."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    wanted = sorted(set().union(*(ISAS[isa].flags for isa in variants_here())))
    flags = cpu_flags()
    return f"CPU: {model}; flags: " + " ".join(f"{f}{'' if f in flags else ' (absent)'}" for f in wanted)


def variants(names: str) -> dict[str, Callable]:
    """The few-row kernel in each variant asked for that builds here."""
    built = {}
    for isa in filter(None, names.split(",")):
        op = few_row_kernel(isa)
        if op is None:
            print(f"few-row kernel {isa}: not built ({unsupported_reason(isa) or 'the build failed'})")
        else:
            built[isa] = op
    return built


def model_curves(passes: int, kernels: dict[str, Callable]) -> None:
    """c(n) of the bundled model without the kernel and with each variant, interleaved."""
    import numpy as np

    from logitspec.sizing.costcurve import measure_cost_curve
    from logitspec.runtime.fewrows import kernel_fits
    from logitspec.models import load_model
    from logitspec.runtime.linear import FewRowLinear
    from logitspec.core.profile import profile_of

    model = load_model().model
    layers = [m for m in model.modules() if isinstance(m, FewRowLinear)]
    runs: dict[str, list[list[float]]] = {label: [] for label in ["without", *kernels]}
    sizes: list[int] = []
    for _ in range(passes):
        for label in runs:
            for m in layers:
                m.few_rows = kernels[label] if label in kernels and kernel_fits(m) else None
            profile_of(model).head_rows = None  # the head batch differs with the kernel
            curve = measure_cost_curve(model, 512, 32)
            runs[label].append(curve.seconds)
            sizes = curve.sizes
    print(f"c(n) in ms over 512 tokens, n = {', '.join(map(str, sizes))} (fastest of {passes})")
    for label, secs in runs.items():
        name = "no kernel" if label == "without" else f"few-row {label}"
        print(f"{name:>14}: " + ", ".join(f"{s * 1e3:.1f}" for s in np.min(secs, axis=0)))


def fastest_passes(fns: dict[str, Callable | None], weights: list, passes: int) -> dict[str, float]:
    """Each kernel's fastest pass over all weights; the kernels take turns within a pass."""
    best = {name: float("inf") for name, fn in fns.items() if fn is not None}
    with torch.inference_mode():
        for _ in range(passes):
            for name in best:
                t = time.perf_counter()
                for i, w in enumerate(weights):
                    fns[name](i, w)
                best[name] = min(best[name], time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1,2,3,4,6,8,12,16")
    ap.add_argument("--passes", type=int, default=None, help="7 for the products, 3 with --curve")
    ap.add_argument("--isa", default=",".join(variants_here()), help="few-row kernel variants to time")
    ap.add_argument("--curve", action="store_true", help="the bundled model's c(n) with and without the kernel")
    args = ap.parse_args()
    threads = configure_threads()
    print(cpu_line())
    print(f"few-row kernel chosen here: {(few_row_kernel(), kernel_status())[1]}")
    kernels = variants(args.isa)
    if args.curve:
        model_curves(args.passes or 3, kernels)
        return
    args.passes = args.passes or 7
    g = torch.Generator().manual_seed(0)
    weights = [torch.randn(*s, generator=g) for _ in range(30) for s in SHAPES]
    mkl = torch.backends.mkl.is_available()  # no MKL on aarch64: no packed GEMM to time
    packed = [torch.ops.mkl._mkl_reorder_linear_weight(w, 16) for w in weights] if mkl else []
    nbytes = sum(w.numel() * 4 for w in weights)
    print(f"{len(weights)} matrices, {nbytes / 1e6:.0f} MB, {threads} threads; fastest of {args.passes} interleaved passes")
    names = ["stock", *(["mkl packed"] if mkl else []), *(f"few-row {isa}" for isa in kernels)]
    print(f"{'rows':>4} " + " ".join(f"{k:>20}" for k in names))
    for rows in (int(r) for r in args.rows.split(",")):
        xs = {k: torch.randn(rows, k, generator=g) for k in (576, 1536)}
        fns = {
            "stock": lambda i, w: F.linear(xs[w.shape[1]], w),
            "mkl packed": (lambda i, w: torch.ops.mkl._mkl_linear(xs[w.shape[1]], packed[i], w, None, rows)) if mkl else None,
            **{f"few-row {isa}": (lambda i, w, op=op: op(xs[w.shape[1]], w, None)) for isa, op in kernels.items()},
        }
        best = fastest_passes(fns, weights, args.passes)
        print(f"{rows:>4} " + " ".join(f"{best[n] * 1e3:8.1f} ms {nbytes / best[n] / 1e9:5.1f} GB/s" for n in names))


if __name__ == "__main__":
    main()
