"""Sliding-window layers: the per-layer tree mask, the windowed buffered cache layer, and a
check that a mask ignoring the window really changes a windowed model's output."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from transformers import DynamicCache

import logitspec.core.tree as tree_module
from helpers.tiny_models import greedy_reference, repetitive_prompt, tiny_from_config
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.runtime.kvcache import WindowedLayer, new_cache
from logitspec.models import prepare_model
from logitspec.core.trace import TreeNode
from logitspec.core.tree import layered_tree_inputs, tree_inputs

pytestmark = pytest.mark.usefixtures("one_thread")


def hand_tree(spec: list[int]) -> list[TreeNode]:
    """Nodes from parent ids (parents first); token i + 1, depth from the parents."""
    nodes: list[TreeNode] = []
    for i, parent in enumerate(spec):
        depth = 0 if parent < 0 else nodes[parent].depth + 1
        nodes.append(TreeNode(id=i, token=i + 1, parent=parent, depth=depth, origin="g2"))
    return nodes


def expected_visible(nodes: list[TreeNode], context_len: int, window: int) -> np.ndarray:
    """Straight from the definition: node i at position context + depth sees a key on its
    own path (context or ancestor or itself) fewer than `window` positions back."""
    seen = min(context_len, window - 1)
    out = np.zeros((len(nodes), seen + len(nodes)), dtype=bool)
    for i, node in enumerate(nodes):
        pos = context_len + node.depth
        for c in range(seen):
            out[i, c] = pos - (context_len - seen + c) < window
        j = i
        while j >= 0:
            out[i, seen + j] = pos - (context_len + nodes[j].depth) < window
            j = nodes[j].parent
    return out


# A chain deeper than the window next to short side branches.
CHAIN_AND_BRANCHES = [-1, 0, 1, 2, 3, 4, 5, 0, 7, 1, 9]


@pytest.mark.parametrize("context_len", [0, 1, 2, 5, 30])
@pytest.mark.parametrize("window", [1, 2, 3, 4, 16])
def test_window_mask_shows_each_node_its_own_path_within_the_window(context_len, window):
    nodes = hand_tree(CHAIN_AND_BRANCHES)
    _, pos, mask = tree_inputs(nodes, context_len, torch.float32, "cpu", window=window)
    want = expected_visible(nodes, context_len, window)
    assert mask.shape == (1, 1, len(nodes), want.shape[1])
    assert torch.equal(mask[0, 0] == 0, torch.from_numpy(want))
    assert pos[0].tolist() == [context_len + n.depth for n in nodes]


def test_layered_inputs_give_full_layers_the_whole_context_and_sliding_ones_the_window():
    nodes = hand_tree(CHAIN_AND_BRANCHES)
    _, _, masks = layered_tree_inputs(nodes, 30, torch.float32, "cpu", (None, 4))
    _, _, full = tree_inputs(nodes, 30, torch.float32, "cpu")
    assert torch.equal(masks[None], full) and full.shape[-1] == 30 + len(nodes)
    assert masks[4].shape[-1] == 3 + len(nodes)
    # A sibling branch never counts toward a node's window: node 8 sees nodes 0, 7 and 8 only.
    assert (masks[4][0, 0, 8, 3:] == 0).nonzero().flatten().tolist() == [0, 7, 8]


def tiny_mistral(window: int, seed: int = 0):
    return tiny_from_config("MistralConfig", "MistralForCausalLM", seed, sliding_window=window)


@torch.inference_mode()
def test_a_windowed_layer_keeps_every_row_and_reads_like_the_stock_sliding_layer():
    model = tiny_mistral(8)
    prompt = torch.tensor([repetitive_prompt(random.Random(3), 20)])
    stock, mine = DynamicCache(config=model.config), new_cache(model.config, reserve=16)
    a = model(input_ids=prompt, cache=stock, use_cache=True).logits[0, -1]
    b = model(input_ids=prompt, cache=mine, use_cache=True).logits[0, -1]
    for _ in range(30):  # well past the window, and past the reserve
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        tok = torch.tensor([[int(a.argmax())]])
        a = model(input_ids=tok, cache=stock, use_cache=True).logits[0, -1]
        b = model(input_ids=tok, cache=mine, use_cache=True).logits[0, -1]
    for theirs, layer in zip(stock.layers, mine.layers):
        assert type(layer) is WindowedLayer and layer.keys.shape[-2] == 50  # nothing dropped
        assert theirs.keys.shape[-2] == 7  # the stock layer keeps W - 1 rows
        torch.testing.assert_close(layer.keys[..., -7:, :], theirs.keys, atol=1e-5, rtol=1e-5)
        assert layer.get_mask_sizes(3) == theirs.get_mask_sizes(3)


RIGHT_MASK = tree_module.window_mask


def _window_ignored(anc, depth, context_len, window, dtype, device):
    """A wrong sliding mask: the right shape, but every key on the node's path is visible."""
    mask = RIGHT_MASK(anc, depth, context_len, window, dtype, device)
    if window is not None:
        seen = mask.shape[-1] - len(depth)
        mask[0, 0, :, :seen] = 0.0
        mask[0, 0, :, seen:] = torch.from_numpy(np.where(anc, 0.0, torch.finfo(dtype).min)).to(dtype)
    return mask


@pytest.mark.lossless
def test_a_mask_ignoring_the_window_changes_a_windowed_models_output(monkeypatch):
    """The sliding checks are not vacuous: without the window in the tree mask, LogitSpec's
    output leaves greedy decoding's on this windowed model."""
    model = tiny_mistral(4)
    prepare_model(model, "mistral")
    settings = DecodeSettings(max_new_tokens=40, tree="static")
    cases = [repetitive_prompt(random.Random(700 + i), 48) for i in range(6)]
    wants = [greedy_reference(model, p, 40) for p in cases]
    right = [[t for s in decode(model, p, "logitspec", settings) for t in s.tokens] for p in cases]
    assert right == wants
    monkeypatch.setattr(tree_module, "window_mask", _window_ignored)
    wrong = [[t for s in decode(model, p, "logitspec", settings) for t in s.tokens] for p in cases]
    differ = sum(w != g for w, g in zip(wrong, wants))
    print(f"window ignored: {differ} of {len(cases)} outputs differ")
    assert differ >= 1
