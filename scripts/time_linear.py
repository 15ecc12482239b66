"""Time few-row products over the bundled model's weight shapes: the stock kernel, MKL's
packed GEMM and the few-row kernel, side by side.

    python scripts/time_linear.py [--rows 1,2,3,4,6,8,12,16] [--passes 7]
    python scripts/time_linear.py --curve [--passes 3]

30 layers x 7 matrices (SmolLM2-135M: 576 wide, 1536 in the MLP, 3 key/value heads of 64)
of random float32 weights, so they stream from memory as a real forward pass's do. Prints
the fastest of `passes` passes per kernel and row count, in ms, and the weight bytes read
per second. With --curve: the bundled model's c(n) over a 512-token context, measured
`passes` times with the few-row kernel and without it, interleaved in one process, each
size keeping its fastest. Run it with nothing else on the CPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logitspec.fewrows import few_row_kernel, kernel_status
from logitspec.threads import configure_threads

SHAPES = [(576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536)]


def model_curves(passes: int) -> None:
    """c(n) of the bundled model with and without the kernel, interleaved."""
    import numpy as np

    from logitspec.costmodel import measure_cost_curve
    from logitspec.models import load_model
    from logitspec.packed import PackedLinear
    from logitspec.verify import _FREE_ROWS

    model = load_model().model
    layers = [m for m in model.modules() if isinstance(m, PackedLinear)]
    kernels = {id(m): m.few_rows for m in layers}
    runs: dict[str, list[list[float]]] = {"without": [], "with": []}
    sizes: list[int] = []
    for _ in range(passes):
        for label in runs:
            for m in layers:
                m.few_rows = kernels[id(m)] if label == "with" else None
            _FREE_ROWS.pop(model, None)  # the head's free rows differ with the kernel
            curve = measure_cost_curve(model, 512, 32)
            runs[label].append(curve.seconds)
            sizes = curve.sizes
    print(f"c(n) in ms over 512 tokens, n = {', '.join(map(str, sizes))} (fastest of {passes})")
    for label, secs in runs.items():
        print(f"{label:>8} the kernel: " + ", ".join(f"{s * 1e3:.1f}" for s in np.min(secs, axis=0)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1,2,3,4,6,8,12,16")
    ap.add_argument("--passes", type=int, default=None, help="7 for the products, 3 with --curve")
    ap.add_argument("--curve", action="store_true", help="the bundled model's c(n) with and without the kernel")
    args = ap.parse_args()
    threads = configure_threads()
    if args.curve:
        model_curves(args.passes or 3)
        return
    args.passes = args.passes or 7
    kernel = few_row_kernel()
    g = torch.Generator().manual_seed(0)
    weights = [torch.randn(*s, generator=g) for _ in range(30) for s in SHAPES]
    packed = [torch.ops.mkl._mkl_reorder_linear_weight(w, 16) for w in weights]
    nbytes = sum(w.numel() * 4 for w in weights)
    print(f"{len(weights)} matrices, {nbytes / 1e6:.0f} MB, {threads} threads; few-row kernel: {kernel_status()}")
    print(f"{'rows':>4} " + " ".join(f"{k:>20}" for k in ("stock", "mkl packed", "few-row kernel")))
    for rows in (int(r) for r in args.rows.split(",")):
        xs = {k: torch.randn(rows, k, generator=g) for k in (576, 1536)}
        kernels = {
            "stock": lambda i, w: F.linear(xs[w.shape[1]], w),
            "mkl packed": lambda i, w: torch.ops.mkl._mkl_linear(xs[w.shape[1]], packed[i], w, None, rows),
            "few-row kernel": None if kernel is None else (lambda i, w: kernel(xs[w.shape[1]], w, None)),
        }
        cells = []
        for fn in kernels.values():
            if fn is None:
                cells.append(f"{'-':>20}")
                continue
            best = float("inf")
            with torch.inference_mode():
                for _ in range(args.passes):
                    t = time.perf_counter()
                    for i, w in enumerate(weights):
                        fn(i, w)
                    best = min(best, time.perf_counter() - t)
            cells.append(f"{best * 1e3:8.1f} ms {nbytes / best / 1e9:5.1f} GB/s")
        print(f"{rows:>4} " + " ".join(cells))


if __name__ == "__main__":
    main()
