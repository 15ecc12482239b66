"""One measured c(n), the forward cost of n tree tokens (`CostCurve`), and the default shape
a model starts from until its own curve is measured or read back (`default_curve`)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# The bundled model's c(n) over a 512-token context on the 2-core development machine
# (docs/performance.md, "c(n) at every size"), as a shape: only ratios to c(1) are used
# until decoding has set the level. Past 64 tokens it grows by the last measured slope.
DEFAULT_SIZES = [*range(1, 17), 17, 24, 32, 48, 64]
DEFAULT_MS = [32.3, 34.9, 35.4, 35.7, 40.5, 40.5, 41.9, 41.9, 43.2, 43.2, 44.2, 46.4, 52.8, 57.0, 61.5,
              65.8, 96.9, 108.7, 123.9, 157.9, 186.5]


@dataclass
class CostCurve:
    """Median seconds of one forward pass of n tree tokens, at a given context length."""

    sizes: list[int]
    seconds: list[float]
    context_len: int
    device: str
    dtype: str
    measurements: int = 1  # measured this many times; each size keeps its fastest
    threads: int | None = None  # the intra-op thread count it was timed on (runtime.tuner)
    _table: list[float] | None = field(default=None, repr=False, compare=False)

    def __call__(self, n: int) -> float:
        cached = self._table
        if cached is not None and type(n) is int and 0 < n < len(cached):
            return cached[n]
        return float(np.interp(n, self.sizes, self.seconds))

    def table(self, max_n: int) -> list[float]:
        """c(0..max_n) as a list, computed once per curve: the tree search reads it per node."""
        cached = self._table
        if cached is None or len(cached) <= max_n:
            cached = [0.0, *interp_sorted(range(1, max_n + 1), self.sizes, self.seconds)]
            self._table = cached
        return cached

    def to_dict(self) -> dict:
        return {"sizes": self.sizes, "seconds": self.seconds, "context_len": self.context_len,
                "device": self.device, "dtype": self.dtype, "measurements": self.measurements,
                "threads": self.threads}


def interp_sorted(xs: Sequence[float], xp: Sequence[float], fp: Sequence[float]) -> list[float]:
    """np.interp for ascending `xs` in plain Python: f at each x, linear between the points
    (xp ascending), held flat outside them."""
    out, j, last = [], 0, len(xp) - 1
    for x in xs:
        while j < last and xp[j + 1] <= x:
            j += 1
        if x <= xp[0] or j == last:
            out.append(float(fp[0] if x <= xp[0] else fp[last]))
        else:
            x0, x1 = xp[j], xp[j + 1]
            out.append(float(fp[j] + (fp[j + 1] - fp[j]) * (x - x0) / (x1 - x0)))
    return out


def default_curve(model, bucket: int, max_n: int) -> CostCurve:
    """The default shape, cut or extended to max_n tokens."""
    sizes = [n for n in DEFAULT_SIZES if n < max_n] + [max(max_n, 1)]
    secs = [float(np.interp(n, DEFAULT_SIZES, DEFAULT_MS)) / 1e3 for n in sizes]
    if max_n > DEFAULT_SIZES[-1]:  # the last slope, for trees beyond the table
        slope = (DEFAULT_MS[-1] - DEFAULT_MS[-2]) / (DEFAULT_SIZES[-1] - DEFAULT_SIZES[-2]) / 1e3
        secs[-1] = DEFAULT_MS[-1] / 1e3 + slope * (max_n - DEFAULT_SIZES[-1])
    return CostCurve(sizes, secs, bucket, str(model.device), model_dtype(model), measurements=0)


def model_dtype(model) -> str:
    """The model's dtype by name: float32, bfloat16, float16."""
    return str(model.dtype).replace("torch.", "")
