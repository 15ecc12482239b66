"""One shape for every pass: how half precision stays exact on an accelerator.

A GPU's kernels pick their tiling, split and reduction order from a matrix's shape, so a row's
last bits depend on how many rows share its pass: a tree node parts from the one-token pass
at its position. On CUDA in bfloat16 and float16 every decoding pass (vanilla's one token and
any tree alike) is therefore padded to `fixed_rows` tokens, leaves under the root that the
walk never reads and whose cache entries are dropped with the unaccepted nodes; the output
head pads its rows the same way. Every linear layer, norm and activation then runs at one
shape, so a row's arithmetic is the same in every pass, and attention, whose key count grows,
goes to the row-invariant attention (runtime/blocked_attention.py). On a GPU a 64-row pass of
a model costs about what one row does: both read the weights once.
"""
from __future__ import annotations

import torch

from .fewrows import invariant_rows

HALF = (torch.bfloat16, torch.float16)
# Devices whose passes are padded. The CPU has its row-invariant kernels instead; tests add it
# to check the padding and the attention on a machine without a GPU.
PADDED_DEVICES = {"cuda"}


def padded_device(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether passes on this device in this dtype run at one fixed shape."""
    return device.type in PADDED_DEVICES and dtype in HALF


def fixed_rows(model) -> int | None:
    """The row count every decoding pass of `model` is padded to, or None (no padding)."""
    try:
        param = next(model.parameters())
    except StopIteration:
        return None
    return invariant_rows() if padded_device(param.device, param.dtype) else None


def pad_rows(x: torch.Tensor, rows: int) -> torch.Tensor:
    """x [n, d] -> [rows, d], zero rows after x's."""
    return torch.nn.functional.pad(x, (0, 0, 0, rows - x.shape[0])) if x.shape[0] < rows else x
