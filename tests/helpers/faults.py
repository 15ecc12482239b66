"""Faults the losslessness tests inject, to show they catch them."""
from __future__ import annotations

import torch


def all_visible(layered):
    """layered_tree_inputs with every tree node seeing every other: the tree mask broken."""
    def broken(nodes, context_len, dtype, device, windows):
        ids, pos, masks = layered(nodes, context_len, dtype, device, windows)
        return ids, pos, {w: torch.zeros_like(m) for w, m in masks.items()}
    return broken


def flat_positions(layered):
    """layered_tree_inputs with every tree node at the root's position: depth ignored."""
    def broken(nodes, context_len, dtype, device, windows):
        ids, pos, masks = layered(nodes, context_len, dtype, device, windows)
        return ids, torch.full_like(pos, context_len), masks
    return broken
