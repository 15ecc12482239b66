"""Row-invariant attention in plain torch, for devices without the C++ kernel (CUDA).

Each query row attends to the keys it may see, listed in key order: the cache, then its
ancestors in the tree, then itself. A tree node's list holds the very keys a one-token pass
at its position sees, in the same order; only their slots differ (a sibling's entry sits
between them). So the row gathers its keys into that list first, then reduces it in blocks
of BLOCK_KEYS, folded one after another with the online softmax in float32: every block is
the same shape in every pass, and a block past a row's last key (a shorter list than its
neighbours') adds exact zeros to what the fold holds. The row's result is then a function of
its own query and keys only, as long as every pass has the same number of rows: on CUDA the
decoders pad every pass to one row count (runtime/fixedshape.py), as the batch-invariant
kernels of "Defeating Nondeterminism in LLM Inference" make a row's arithmetic the batch's.
"""
from __future__ import annotations

import torch

BLOCK_KEYS = 256  # keys per block: one gathered block is [rows, kv heads, 256, head dim] in float32
HIDDEN = -1e30  # an additive mask entry at or below this hides its key (masks fill with the lowest value)


def visible_keys(mask: torch.Tensor | None, rows: int, keys: int,
                 device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The slots each row sees, in key order: (index [rows, L], valid [rows, L], bias [rows, L]
    or None), L the longest row's count; a shorter row's tail points at slot 0, not valid. mask:
    bool (True visible) or additive (at or below HIDDEN hides the key, else its bias is added);
    None is causal, the last `rows` keys being the rows' own."""
    if mask is None:
        seen = torch.arange(keys, device=device)[None, :] <= torch.arange(keys - rows, keys, device=device)[:, None]
    elif mask.dtype == torch.bool:
        seen = mask[0, 0, :, :keys]
    else:
        seen = mask[0, 0, :, :keys].float() > HIDDEN
    counts = seen.sum(-1)
    longest = int(counts.max())
    # A stable sort of "hidden" puts each row's visible slots first, in slot order.
    index = torch.sort((~seen).to(torch.uint8), dim=-1, stable=True).indices[:, :longest]
    valid = torch.arange(longest, device=device)[None, :] < counts[:, None]
    index = index.masked_fill(~valid, 0)
    bias = None
    if mask is not None and mask.dtype != torch.bool:
        bias = mask[0, 0, :, :keys].float().gather(-1, index).masked_fill(~valid, 0.0)
    return index, valid, bias


def blocked_row_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          mask: torch.Tensor | None, scale: float) -> torch.Tensor:
    """query [1, H, n, d], key/value [1, H_kv, S, d], mask [1, 1, n, >=S] additive or None ->
    attention output [1, n, H, d] in the query's dtype."""
    _, heads, n, d = query.shape
    kv_heads, keys = key.shape[1], key.shape[2]
    groups = heads // kv_heads
    index, valid, bias = visible_keys(mask, n, keys, query.device)
    q = query[0].float().reshape(kv_heads, groups, n, d).permute(2, 0, 1, 3)  # [n, H_kv, g, d]
    m = torch.full((n, kv_heads, groups), float("-inf"), device=query.device)
    total = torch.zeros(n, kv_heads, groups, device=query.device)
    out = torch.zeros(n, kv_heads, groups, d, device=query.device)
    for start in range(0, index.shape[1], BLOCK_KEYS):
        idx, ok, add = _block(index, valid, bias, start)
        k = key[0][:, idx].float().permute(1, 0, 2, 3)  # [n, H_kv, BLOCK_KEYS, d]
        v = value[0][:, idx].float().permute(1, 0, 2, 3)
        s = (q @ k.transpose(-1, -2)) * scale  # [n, H_kv, g, BLOCK_KEYS]
        if add is not None:
            s = s + add[:, None, None, :]
        s = s.masked_fill(~ok[:, None, None, :], float("-inf"))
        m_new = torch.maximum(m, s.amax(-1))
        # After a row's first block m is finite (its first key is in it), so no -inf - -inf.
        keep = torch.exp(m - m_new)
        p = torch.exp(s - m_new[..., None])
        total = total * keep + p.sum(-1)
        out = out * keep[..., None] + p @ v
        m = m_new
    out = out / total[..., None]
    return out.reshape(n, heads, d).unsqueeze(0).to(query.dtype)


def _block(index: torch.Tensor, valid: torch.Tensor, bias: torch.Tensor | None,
           start: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Columns start..start + BLOCK_KEYS of (index, valid, bias), padded to BLOCK_KEYS (slot 0,
    not valid, no bias)."""
    cols = slice(start, start + BLOCK_KEYS)
    idx, ok, add = index[:, cols], valid[:, cols], None if bias is None else bias[:, cols]
    short = BLOCK_KEYS - idx.shape[1]
    if short:
        pad = (0, short)
        idx, ok = torch.nn.functional.pad(idx, pad), torch.nn.functional.pad(ok, pad)
        add = None if add is None else torch.nn.functional.pad(add, pad)
    return idx, ok, add
