"""`FewRowLinear`: every `nn.Linear` of a CPU model, made fast for the few rows a tree has,
and in half precision exact: a row's output is the same bits in a tree as alone.

A tree step multiplies each weight matrix by a handful of rows (the tree's tokens). In float32:
- 1 to 16 rows go to the few-row kernel (`logitspec.runtime.fewrows`), which streams each
  weight once for all rows at the memory's speed;
- more rows, or 4 to 16 where the kernel is missing, go to MKL's packed GEMM (weights
  reordered once), which stays fast where MKL's ordinary GEMM changes kernel at 4 rows;
- 1 to 3 rows without the kernel keep the stock kernel, as fast there as packing.
In bfloat16 and float16 every pass up to `invariant_rows` rows (any tree) goes to the few-row
kernel, 16 rows per pass over the weights: its float32 sums have one order whatever the rows,
where the stock kernels' blocking changes with them and near-tied argmaxes flip. Where one
shape is faster and checked row-invariant (runtime/oneshape.py), those passes go to a product
at one fixed row count instead (`one_shape`). Longer passes (a long prompt's prefill, the same
in every decoder) keep the stock kernel.

The packed copy costs as much memory as the weights again. The layers are swapped for the
whole model, so all decoders of a race share them. Measurements: docs/performance.md.
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from .. import environment
from .fewrows import FEW_MAX_ROWS, few_row_kernel, invariant_rows, kernel_fits

# Rows from which the packed kernel is used; below it the stock one is as fast or faster.
PACK_FROM_ROWS = 4
# The batch size the weights are reordered for. The packed layout serves any row count
# (results match the stock kernel to float rounding); 16 measured best for 4-16 rows.
PACKED_FOR = 16
HALF = (torch.bfloat16, torch.float16)


def cpu_dtype(model) -> torch.dtype | None:
    """The dtype of the model's weights if they are on the CPU, else None."""
    try:
        param = next(model.parameters())
    except StopIteration:
        return None
    return param.dtype if param.device.type == "cpu" else None


def float32_cpu(model) -> bool:
    """Whether the model's weights are float32 on the CPU (what both kernels serve)."""
    return cpu_dtype(model) == torch.float32


def packing_available(model) -> bool:
    """Whether this torch has MKL's packed GEMM and the model is float32 on CPU."""
    return (float32_cpu(model) and torch.backends.mkl.is_available()
            and hasattr(torch.ops.mkl, "_mkl_linear") and hasattr(torch.ops.mkl, "_mkl_reorder_linear_weight"))


class FewRowLinear(torch.nn.Linear):
    """An `nn.Linear` that multiplies 1-16 rows with the few-row kernel and 4 or more rows
    (past the kernel's reach, or without it) by its MKL-packed weights.

    Falls back to the stock kernel off the CPU, under autograd, for 1-3 rows without the
    few-row kernel, or (for the packed path) once the weights have changed since they were
    packed: the packed copy would be stale. The few-row kernel reads the weights as they
    are now.
    """

    packed_weight: torch.Tensor | None
    packed_from: tuple[int, int]  # the weights' storage and version when they were packed
    few_rows: object = None  # the few-row kernel, where it is built and fits this layer
    one_shape: object = None  # half precision's product at one row count, where chosen (runtime/oneshape.py)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // max(1, x.shape[-1])
        if (rows == 0 or x.device.type != "cpu" or x.dtype != self.weight.dtype
                or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))):
            return F.linear(x, self.weight, self.bias)
        if x.dtype in HALF:
            if rows <= invariant_rows():  # read once a call: it reads the environment
                if self.one_shape is not None:
                    return self.one_shape(x, self.weight, self.bias)
                if self.few_rows is not None and self.weight.is_contiguous():
                    return self.few_rows(x, self.weight, self.bias)
            return F.linear(x, self.weight, self.bias)
        if rows <= FEW_MAX_ROWS and self.few_rows is not None and self.weight.is_contiguous():
            return self.few_rows(x, self.weight, self.bias)
        if (rows < PACK_FROM_ROWS or self.packed_weight is None
                or (self.weight.data_ptr(), self.weight._version) != self.packed_from):
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkl._mkl_linear(x, self.packed_weight, self.weight, self.bias, rows)


def available_memory() -> int | None:
    """Bytes of memory free right now, or None where the system does not say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def use_few_row_linear(model, pack: bool = True) -> int:
    """Give every `nn.Linear` of a CPU model the few-row kernel, and in float32 packed
    weights too; return how many layers of the model now hold either (those done before
    included).

    Packing is skipped where MKL's packed GEMM is missing or the packed copy would take
    more than half of the memory free now (a larger model on a small machine must still
    load, only without this saving); the kernel where it cannot be built. Changes nothing
    where neither applies, and returns 0 for a model that is not float32, bfloat16 or
    float16 on CPU, or when LOGITSPEC_PACKED=0 (float32 only: half precision needs the
    kernel to be exact).
    """
    dtype = cpu_dtype(model)
    if dtype not in (torch.float32, *HALF) or (dtype == torch.float32 and not environment.PACKED.read()):
        return 0
    layers = [m for m in model.modules() if type(m) is torch.nn.Linear and not m.weight.is_inference()]
    need = sum(m.weight.numel() * m.weight.element_size() for m in layers)
    free = available_memory()
    pack = pack and dtype == torch.float32 and packing_available(model) and (free is None or need <= free // 2)
    few = few_row_kernel() if layers else None
    count = sum(isinstance(m, FewRowLinear) for m in model.modules())
    if not pack and few is None:
        return count
    with torch.no_grad():
        for module in layers:
            if not pack and not (few is not None and kernel_fits(module)):
                continue  # neither applies to this layer: it keeps the stock kernel
            packed = torch.ops.mkl._mkl_reorder_linear_weight(module.weight.detach(), PACKED_FOR) if pack else None
            as_few_row_linear(module, packed, few if few is not None and kernel_fits(module) else None)
            count += 1
    return count


def as_few_row_linear(module: torch.nn.Linear, packed: torch.Tensor | None, few) -> FewRowLinear:
    """Make `module` a FewRowLinear in place, with its packed copy and kernel (either may be None)."""
    module.packed_weight = packed
    module.packed_from = (module.weight.data_ptr(), module.weight._version)
    module.few_rows = few
    module.__class__ = FewRowLinear
    return module
