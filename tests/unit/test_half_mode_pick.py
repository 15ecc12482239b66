"""The load-time pick of an exact half-precision mode weighs what decoding runs: the few-row kernel
at a vanilla pass and at its own tree (at most the CPU tree's capacity), against one shape's two
R-row passes. Timings are given, so the rule is checked apart from this machine's speed."""
from __future__ import annotations

import pytest
import torch

from logitspec.runtime import fewrows, oneshape
from logitspec.core.settings import DecodeSettings

TREE_ROWS = DecodeSettings().cpu_capacity


def pick(monkeypatch, kernel_ms: dict[int, float], shape_ms: dict[tuple[int, str], float]):
    """choose_half_mode's (shape, seconds) on these product timings, in ms by rows (and kernel)."""
    monkeypatch.setattr(fewrows, "row_attention_kernel", lambda: object())
    monkeypatch.setattr(oneshape, "shapes_of", lambda layers: {})
    monkeypatch.setattr(oneshape, "_shape_runner", lambda shape: shape)

    def products_seconds(shapes, run, rows, budget=float("inf")):
        if isinstance(run, oneshape.OneShape):
            return shape_ms[(run.rows, run.kernel)] / 1e3
        return kernel_ms[rows] / 1e3

    monkeypatch.setattr(oneshape, "products_seconds", products_seconds)
    monkeypatch.setattr(oneshape, "apply_half_mode", lambda model, shape, seconds=None: (shape, seconds))
    return oneshape.choose_half_mode(torch.nn.Sequential(torch.nn.Linear(4, 4)), 0, TREE_ROWS)


def flat(ms: float) -> dict[tuple[int, str], float]:
    return {(r, k): ms for r in oneshape.CANDIDATE_ROWS for k in oneshape.KERNELS}


def test_one_shape_that_only_beats_the_kernel_at_64_rows_is_not_picked(monkeypatch):
    # An AVX-512 CPU without AMX: one shape's products grow with R, the kernel's faster still at its tree.
    kernel = {1: 10.0, 16: 25.0, 32: 50.0, 64: 110.0}
    shape = {(16, "prepacked"): 20.0, (16, "stock"): 24.0, (32, "prepacked"): 30.0, (32, "stock"): 34.0,
             (64, "prepacked"): 40.0, (64, "stock"): 45.0}
    chosen, seconds = pick(monkeypatch, kernel, shape)
    assert chosen is None  # 2 x 20 ms against 10 + 25 ms: the kernel; a 64-row pass alone would have won
    assert seconds["the few-row kernel at 1 and 16 rows"] == pytest.approx(0.035)


def test_flat_products_pick_one_shape_at_the_cheapest_ratio(monkeypatch):
    # AMX-like: one shape's products cost the same at every R, a little above the kernel's one row.
    chosen, seconds = pick(monkeypatch, {1: 10.0, 16: 25.0, 32: 50.0, 64: 110.0}, flat(12.0))
    # 24 ms against 10 + 25 ms at every R; at equal cost the smallest R, the padding vanilla pays.
    assert chosen == oneshape.OneShape(16, "prepacked"), seconds
    assert seconds["one shape, 16 rows, prepacked products"] == pytest.approx(0.024)
