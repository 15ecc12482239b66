"""Tree attention for grouped-query models that never copies the KV cache.

With a mask (every tree step has one), transformers' stock SDPA path repeats each key/value
head once per query head of its group (`repeat_kv`) before attention: a full copy of the
cache, in every layer, on every step, and it grows with the context (measured:
docs/performance.md).

Here the query heads of a group are folded into the query length instead,
[B, H_kv * g, n, d] -> [B, H_kv, g * n, d], with the mask repeated g times along the query
axis; attention then reads the cache as it is. The arithmetic per (head, query, key) is the
same dot products and softmax as before. Single-token steps (vanilla's and the tree's root
alone) and the prefill keep the stock path, unchanged.

In bfloat16 and float16 on the CPU every pass up to `invariant_rows` tokens (vanilla's steps
and every tree) goes to the row-invariant kernel instead (csrc/row_attention.cpp): each query
row sees its keys in key order and sums them in one order, whatever the number of rows, so a
tree node's attention is the same bits as a one-token pass's at that position.
"""
from __future__ import annotations

import torch

from .blocked_attention import blocked_row_attention
from .fewrows import invariant_rows, row_attention_kernel
from .fixedshape import padded_device

NAME = "logitspec_grouped_sdpa"
# Every layer of a kind gets the same mask object in a forward pass, so a mask is folded once
# per pass, not once per layer (a copy per layer cost time: docs/performance.md): the fold is
# kept on the mask itself, as (groups, folded mask), and goes when the pass drops the mask.
FOLDED_ATTR = "_logitspec_folded"
# Arguments the folded path does not implement: the stock path handles (or refuses) them.
STOCK_ONLY = ("position_bias", "softcap", "s_aux", "sinks")
HEAD_MULTIPLE = 8  # the row-invariant kernel sums a head in 8 lanes (csrc/row_attention.cpp)


def grouped_tree_sdpa(module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, dropout: float = 0.0,
                      scaling: float | None = None, is_causal: bool | None = None, **kwargs):
    """SDPA for a masked multi-token query over a grouped KV cache, without repeating it.

    Returns (attn_output [B, n, H, d], None) like every transformers attention function.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = int(getattr(module, "num_key_value_groups", 1))
    b, heads, n, d = query.shape
    if row_invariant_applies(query, dropout, kwargs) and (kernel := row_attention_for(query)) is not None:
        scale = scaling if scaling is not None else d ** -0.5
        if attention_mask is not None and attention_mask.shape[-1] > key.shape[-2]:
            attention_mask = attention_mask[..., : key.shape[-2]]  # a mask sized past the keys
        # No mask: the causal pass of a prefill or a one-token step (the last n keys are the queries').
        return kernel(query, key, value, attention_mask, float(scale)), None
    if groups == 1 or n == 1 or attention_mask is None or any(kwargs.get(k) is not None for k in STOCK_ONLY):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    q = query.reshape(b, heads // groups, groups * n, d)
    mask = _fold_mask(attention_mask, heads, groups, n)
    out = torch.nn.functional.scaled_dot_product_attention(
        q, key, value, attn_mask=mask, dropout_p=dropout, scale=scaling, is_causal=False)
    return out.reshape(b, heads, n, d).transpose(1, 2).contiguous(), None


def row_invariant_applies(query: torch.Tensor, dropout: float, kwargs: dict) -> bool:
    """Whether this call goes to a row-invariant attention: a half-precision pass of a tree's
    size at most, on the CPU or a device whose passes have one shape, with nothing the
    row-invariant attentions do not implement."""
    return (query.dtype in (torch.bfloat16, torch.float16) and query.shape[2] <= invariant_rows()
            and (query.device.type == "cpu" or padded_device(query.device, query.dtype))
            and not dropout and not any(kwargs.get(k) is not None for k in STOCK_ONLY))


def row_attention_for(query: torch.Tensor):
    """The CPU's kernel (heads a multiple of HEAD_MULTIPLE; None without a compiler), or torch's
    blocked attention on a device whose passes are padded to one shape."""
    if padded_device(query.device, query.dtype):
        return blocked_row_attention
    return row_attention_kernel() if query.shape[-1] % HEAD_MULTIPLE == 0 else None


def _fold_mask(mask: torch.Tensor, heads: int, groups: int, n: int) -> torch.Tensor:
    """The mask laid out like the folded queries: [B, 1 or H_kv, groups * n, keys]."""
    kept = getattr(mask, FOLDED_ATTR, None)
    if kept is not None and kept[0] == groups:
        return kept[1]
    if mask.shape[1] != 1:  # a per-head mask: fold its heads the same way as the queries
        folded = mask.reshape(mask.shape[0], heads // groups, groups * n, mask.shape[-1])
    else:
        folded = mask.repeat(1, 1, groups, 1)
    setattr(mask, FOLDED_ATTR, (groups, folded))  # one tuple, set whole: a reader never sees half of it
    return folded


def use_grouped_tree_attention(model) -> bool:
    """Switch a model on stock SDPA to the grouped tree attention; True if it was switched.

    Models on another implementation (eager, flash, ...) are left as they are: they stay
    correct, only without this saving. Every decoder of a run shares the model, so the race
    stays fair.
    """
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    # transformers' own registry of attention functions: registering again sets the same entry.
    AttentionInterface.register(NAME, grouped_tree_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, AttributeError):
        return False
    return getattr(model.config, "_attn_implementation", None) == NAME
