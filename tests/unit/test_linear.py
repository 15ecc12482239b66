"""Packed linear layers (MKL-packed weights, the few-row kernel): the same products as the
stock kernel, used only where they help."""
from __future__ import annotations

import copy
import random

import pytest
import torch
import torch.nn.functional as F

from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.runtime.fewrows import FEW_MAX_ROWS, few_row_kernel
from logitspec.runtime.linear import FewRowLinear, packing_available, use_few_row_linear
from helpers.tiny_models import greedy_reference, repetitive_prompt, tiny_gpt2, tiny_llama

needs_mkl = pytest.mark.skipif(not packing_available(torch.nn.Linear(4, 4)),
                               reason="this torch has no MKL packed GEMM")


def linear_count(model) -> int:
    return sum(isinstance(m, torch.nn.Linear) for m in model.modules())


@needs_mkl
def test_every_linear_is_packed_and_logits_match_the_stock_model():
    plain = tiny_llama(seed=3)
    packed = copy.deepcopy(plain)
    assert use_few_row_linear(packed) == linear_count(plain) == 2 * 7 + 1
    assert all(type(m) is FewRowLinear for m in packed.modules() if isinstance(m, torch.nn.Linear))
    ids = torch.tensor([repetitive_prompt(random.Random(0), 40)])
    with torch.inference_mode():
        want = plain(input_ids=ids).logits
        got = packed(input_ids=ids).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


@needs_mkl
@pytest.mark.parametrize("features", [48, 50], ids=["kernel-fits", "packed-only"])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 9, 16, 17, 33, 70])
def test_a_packed_layer_computes_the_linear_map_for_any_row_count(rows, features):
    torch.manual_seed(rows)
    layer = torch.nn.Linear(features, 80)
    use_few_row_linear(layer)
    x = torch.randn(1, rows, features)
    with torch.inference_mode():
        got = layer(x)
    want = F.linear(x, layer.weight, layer.bias)
    assert got.shape == (1, rows, 80)
    if rows < 4 and layer.few_rows is None:
        assert torch.equal(got, want)  # packing leaves 1-3 rows to the stock kernel, bit for bit
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@needs_mkl
def test_changed_weights_are_never_served_from_a_stale_packed_copy():
    layer = torch.nn.Linear(32, 32)
    use_few_row_linear(layer)
    with torch.no_grad():
        layer.weight.mul_(-2.0)
    x = torch.randn(FEW_MAX_ROWS + 4, 32)  # past the few-row kernel: the packed path
    with torch.inference_mode():
        got = layer(x)
    assert torch.equal(got, F.linear(x, layer.weight, layer.bias))
    layer.weight = torch.nn.Parameter(torch.randn(32, 32))  # new weights, version 0 again
    with torch.inference_mode():
        got = layer(x)
    assert torch.equal(got, F.linear(x, layer.weight, layer.bias))


@needs_mkl
def test_training_keeps_the_stock_kernel_and_its_gradients():
    layer = torch.nn.Linear(16, 8)
    use_few_row_linear(layer)
    x = torch.randn(6, 16, requires_grad=True)
    layer(x).sum().backward()
    assert x.grad is not None and layer.weight.grad is not None


def test_packing_is_skipped_when_the_copy_would_crowd_memory(monkeypatch):
    import logitspec.runtime.linear as packed

    monkeypatch.setattr(packed, "available_memory", lambda: 20_000)
    layer = torch.nn.Linear(64, 64)  # 16 KiB of weights
    if few_row_kernel() is None:
        assert use_few_row_linear(layer) == 0 and type(layer) is torch.nn.Linear
    else:  # the kernel needs no copy, so the layer still gets it
        assert use_few_row_linear(layer) == 1 and layer.packed_weight is None and layer.few_rows is not None
        x = torch.randn(FEW_MAX_ROWS + 4, 64)
        assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))  # stock past the kernel
    layer = torch.nn.Linear(64, 64)
    if packing_available(layer):
        monkeypatch.setattr(packed, "available_memory", lambda: 10**9)
        assert use_few_row_linear(layer) == 1 and type(layer) is FewRowLinear and layer.packed_weight is not None


def test_packing_is_skipped_where_it_does_not_apply(monkeypatch):
    assert use_few_row_linear(torch.nn.Linear(8, 8).double()) == 0
    # half precision takes the kernel alone (no packed copy), where it is built and fits
    assert use_few_row_linear(torch.nn.Linear(8, 8).bfloat16()) == 0  # 8 features: the kernel cannot
    half = torch.nn.Linear(32, 8).bfloat16()
    assert use_few_row_linear(half) == (0 if few_row_kernel() is None else 1) and getattr(half, "packed_weight", None) is None
    monkeypatch.setenv("LOGITSPEC_PACKED", "0")
    layer = torch.nn.Linear(8, 8)
    assert use_few_row_linear(layer) == 0 and type(layer) is torch.nn.Linear


@pytest.mark.lossless
@needs_mkl
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("build", [tiny_llama, tiny_gpt2], ids=["llama", "gpt2"])
def test_decoders_stay_lossless_on_a_packed_model(build):
    model = build(seed=5)
    assert use_few_row_linear(model) > 0
    extra = 0
    for n in range(8):
        rng = random.Random(500 + n)
        prompt = repetitive_prompt(rng, rng.randint(4, 60))
        want = greedy_reference(model, prompt, 24)
        for method, tree in [("vanilla", "static"), ("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]:
            steps = list(decode(model, prompt, method, DecodeSettings(max_new_tokens=24, tree=tree)))
            assert [t for s in steps for t in s.tokens] == want, (method, tree, n)
            extra += sum(len(s.tokens) - s.forward for s in steps)
    assert extra > 0  # drafts were accepted: the static trees (up to 64 rows) ran packed
