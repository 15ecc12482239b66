"""Grouped tree attention: the same attention as the stock path, without repeating the cache."""
from __future__ import annotations

import random

import pytest
import torch
from transformers import DynamicCache

from logitspec.runtime.attention import NAME, use_grouped_tree_attention
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.core.trace import TreeNode
from logitspec.core.tree import tree_inputs
from helpers.tiny_models import greedy_reference, repetitive_prompt, tiny_gpt2, tiny_llama


def random_tree(rng: random.Random, size: int, vocab: int = 128) -> list[TreeNode]:
    """A random tree in parent-before-child order."""
    nodes = [TreeNode(0, rng.randrange(vocab), -1, 0, "root")]
    for i in range(1, size):
        parent = rng.randrange(i)
        nodes.append(TreeNode(i, rng.randrange(vocab), parent, nodes[parent].depth + 1, "g2"))
    return nodes


@torch.inference_mode()
def tree_logits(model, context: list[int], nodes: list[TreeNode]) -> torch.Tensor:
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([context]), cache=cache, use_cache=True)
    ids, pos, mask = tree_inputs(nodes, len(context), model.dtype, model.device)
    return model(input_ids=ids, position_ids=pos, attention_mask=mask, cache=cache, use_cache=True).logits[0]


def test_grouped_attention_is_switched_on_for_grouped_models():
    model = tiny_llama(seed=0)
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    assert use_grouped_tree_attention(model)
    assert model.config._attn_implementation == NAME


@pytest.mark.slow
def test_the_bundled_model_loads_with_grouped_attention(bundled):
    assert bundled.model.config._attn_implementation == NAME


@pytest.mark.parametrize("seed", range(6))
def test_grouped_tree_attention_matches_the_stock_path(seed, one_thread):
    rng = random.Random(seed)
    stock, grouped = tiny_llama(seed=seed), tiny_llama(seed=seed)
    use_grouped_tree_attention(grouped)
    context = [rng.randrange(128) for _ in range(rng.randint(5, 60))]
    nodes = random_tree(rng, rng.randint(2, 24))
    want, got = tree_logits(stock, context, nodes), tree_logits(grouped, context, nodes)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert got.argmax(-1).tolist() == want.argmax(-1).tolist()


def test_a_model_without_query_groups_keeps_its_results(one_thread):
    stock, switched = tiny_gpt2(seed=1), tiny_gpt2(seed=1)
    use_grouped_tree_attention(switched)
    rng = random.Random(1)
    context, nodes = [rng.randrange(128) for _ in range(30)], random_tree(rng, 12)
    torch.testing.assert_close(tree_logits(switched, context, nodes), tree_logits(stock, context, nodes))


@pytest.mark.lossless
@pytest.mark.parametrize("seed", range(4))
def test_logitspec_with_grouped_attention_equals_greedy(seed, one_thread):
    model = tiny_llama(seed=0)
    use_grouped_tree_attention(model)
    prompt = repetitive_prompt(random.Random(seed), 80)
    want = greedy_reference(model, prompt, 40)
    for tree in ("static", "cost"):
        got = [t for step in decode(model, prompt, "logitspec", DecodeSettings(max_new_tokens=40, tree=tree))
               for t in step.tokens]
        assert got == want, tree


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("mask_kind", ["additive", "bool"])
def test_row_attention_gives_each_row_the_bits_of_a_one_token_pass(dtype, mask_kind):
    """A random tree's rows over a cache, against each node attending alone to the cache and
    its ancestors laid out as a one-token pass sees them: bit for bit, and close to SDPA."""
    from logitspec.runtime.fewrows import row_attention_kernel

    kernel = row_attention_kernel()
    if kernel is None:
        pytest.skip("no row-invariant kernel here")
    g = torch.Generator().manual_seed(11)
    heads, kv_heads, d, context, size = 8, 2, 16, 37, 12
    nodes = random_tree(random.Random(4), size)
    keys = torch.randn(1, kv_heads, context + size, d, generator=g).to(dtype)
    values = torch.randn(1, kv_heads, context + size, d, generator=g).to(dtype)
    q = torch.randn(1, heads, size, d, generator=g).to(dtype)
    _, _, additive = tree_inputs(nodes, context, dtype, "cpu")  # [1, 1, T, context + T]
    mask = additive if mask_kind == "additive" else additive == 0
    got = kernel(q, keys, values, mask, 0.25)  # [1, T, H, d]
    for node in nodes:
        seen = [context + a for a in ancestry(nodes, node.id)]  # root first, the node last
        order = list(range(context)) + seen
        alone = kernel(q[:, :, node.id : node.id + 1], keys[:, :, order], values[:, :, order], None, 0.25)
        assert torch.equal(got[:, node.id], alone[:, 0]), node.id
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        q.float(), keys.float().repeat_interleave(4, 1), values.float().repeat_interleave(4, 1),
        attn_mask=additive.float(), scale=0.25).transpose(1, 2)
    assert torch.allclose(got.float(), sdpa, atol=2e-2 if dtype != torch.float32 else 1e-5)


def ancestry(nodes: list[TreeNode], node: int) -> list[int]:
    """The node ids from the root down to `node`."""
    out = [node]
    while nodes[out[-1]].parent >= 0:
        out.append(nodes[out[-1]].parent)
    return out[::-1]
