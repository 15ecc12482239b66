"""The k largest entries of a vector: the built top-k kernel on a CPU, torch.topk elsewhere.

Speculation runs it over the whole vocabulary between forward passes, when the pass has
just evicted the caches and torch.topk's sorted copy of the vector misses them at every
line; the kernel reads the vector once (runtime/csrc/top_k.cpp, docs/performance.md).
"""
from __future__ import annotations

import torch

from .fewrows import built_top_k


def top_entries(x: torch.Tensor, k: int, *others: torch.Tensor) -> tuple[list[int], list[list[float]]]:
    """The indices of the k largest entries of x: [V], best first, and the entries there of
    x and of each of `others` ([V] each, on x's device). With the kernel, equal values put
    the lower index first; torch.topk leaves their order open."""
    op = built_top_k() if x.device.type == "cpu" and x.dtype == torch.float32 else None
    if op is not None:
        ids = op(x, k).tolist()
        # numpy gathers a few dozen entries for less than a tensor op's dispatch costs
        return ids, [v.numpy()[ids].tolist() for v in (x, *others)]
    top = torch.topk(x, k)
    return top.indices.tolist(), [top.values.tolist(), *(v[top.indices].tolist() for v in others)]
