"""One shape on the CPU (logitspec/runtime/oneshape.py): half-precision products at one fixed
row count R, attention on the real rows only; every decoder's tokens are vanilla's.

Exactness is a property of one shape, not of the CPU's instructions, so the mode is forced on
here whatever the timing at load would pick. On a CPU without bf16 matrix instructions torch's
stock half-precision products give a row the same bits at every row count, so padding could be
left out there unnoticed; the tiny families therefore also run on `RowBlockedProduct`, a
product whose summation order follows the row count, as oneDNN's blocking does on a CPU with
AMX. With it, the mutations that break the fixed shape (no padding; R that follows the rows)
make the decoders part from vanilla.
"""
from __future__ import annotations

import pytest
import torch

from helpers.families import WORKS
from helpers.references import vanilla_run
from helpers.tree_rows import tree_rows_and_single_rows
from helpers.tiny_models import greedy_reference, sampling_reference, tiny_prompts
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.models import load_model, prepare_model
from logitspec.runner import run_trace
from logitspec.runtime import fewrows, oneshape
from logitspec.runtime.linear import FewRowLinear, as_few_row_linear
from logitspec.runtime.oneshape import OneShape, ShapedProduct, apply_half_mode, linear_layers

pytestmark = pytest.mark.lossless

needs_kernel = pytest.mark.skipif(fewrows.row_attention_kernel() is None,
                                  reason=f"no row-invariant attention kernel here: {fewrows.kernel_status()}")
ROWS = 8  # the tiny families' R: trees of up to 64 nodes run in several products of R rows
TINY = [("llama", "bfloat16"), ("qwen2-window8", "bfloat16"), ("gemma3-window16", "float16"), ("mixtral", "bfloat16")]
GREEDY = [("pld", "static"), ("logitspec", "static"), ("logitspec", "cost"), ("recycling", "cost")]
MAX_NEW = 24


class RowBlockedProduct(ShapedProduct):
    """x @ w.T + b summed in the half dtype block by block over the inputs, the block size set
    by the row count: row-invariant at one row count, not across them (as oneDNN's blocking)."""

    def product(self, x, weight, bias):
        block = min(x.shape[1], 4 * x.shape[0])
        out = torch.zeros(x.shape[0], weight.shape[0], dtype=x.dtype)
        for i in range(0, x.shape[1], block):
            out = out + (x[:, i : i + block].float() @ weight[:, i : i + block].float().T).to(x.dtype)
        return out if bias is None else out + bias


def set_products(model, make) -> None:
    """Every linear layer's half-precision passes on the product `make()` gives."""
    for layer in linear_layers(model):
        if not isinstance(layer, FewRowLinear):
            as_few_row_linear(layer, None, None)
        layer.one_shape = make()


def no_padding(self, x, weight, bias):
    """Mutation: the real rows only, at whatever count the pass has."""
    flat = x.reshape(-1, x.shape[-1])
    return self.product(flat, weight, bias).reshape(*x.shape[:-1], -1)


def tiny(name: str, dtype: str):
    fam = next(f for f in WORKS if f.name == name)
    model = fam.build().to(getattr(torch, dtype))
    prepare_model(model, name)
    return model


def tokens(model, prompt, method, settings) -> list[int]:
    return [t for s in decode(model, prompt, method, settings) for t in s.tokens]


def parts_from_vanilla(model, prompt) -> list[tuple]:
    """The (method, tree) pairs whose greedy tokens differ from vanilla's, and 'sampled' if
    LogitSpec's sampled tokens differ from vanilla's with the same seed."""
    want = greedy_reference(model, prompt, MAX_NEW)
    out = [(m, t) for m, t in GREEDY
           if tokens(model, prompt, m, DecodeSettings(max_new_tokens=MAX_NEW, tree=t)) != want]
    sampled = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.0, seed=7)
    if tokens(model, prompt, "logitspec", sampled) != sampling_reference(model, prompt, MAX_NEW, sampled):
        out.append("sampled")
    return out


@needs_kernel
@pytest.mark.parametrize("rows", [1, 3, 16, 17, 64, 65])
def test_the_attention_kernel_gives_a_row_its_bits_at_any_row_count(rows):
    """The CPU's row-invariant attention needs no padding: a query row among `rows` rows (each
    seeing the cache and rows before it) has the bits it has alone, over the same keys."""
    kernel = fewrows.row_attention_kernel()
    g = torch.Generator().manual_seed(rows)
    heads, kv_heads, d, context = 9, 3, 64, 40  # the bundled model's heads
    keys, values = torch.randn(2, 1, kv_heads, context + rows, d, generator=g).to(torch.bfloat16)
    q = torch.randn(1, heads, rows, d, generator=g).to(torch.bfloat16)
    mask = torch.ones(rows, context + rows, dtype=torch.bool).tril(context)[None, None]
    got = kernel(q, keys, values, mask, d ** -0.5)
    for r in sorted({0, rows // 2, rows - 1}):
        seen = context + r + 1
        alone = kernel(q[:, :, r : r + 1], keys[:, :, :seen], values[:, :, :seen], None, d ** -0.5)
        assert torch.equal(got[:, r], alone[:, 0]), r


def test_the_load_check_passes_one_shape_and_catches_a_product_without_it():
    layer = torch.nn.Linear(64, 48, bias=True).to(torch.bfloat16)
    assert oneshape.row_invariant(layer, RowBlockedProduct(ROWS))
    assert oneshape.row_invariant(layer, ShapedProduct(ROWS))  # torch's stock product at one shape

    class Unpadded(RowBlockedProduct):
        __call__ = no_padding
    assert not oneshape.row_invariant(layer, Unpadded(ROWS))


def test_a_failed_check_falls_back_to_the_kernel_and_says_why(monkeypatch):
    model = tiny("llama", "bfloat16")
    monkeypatch.setattr(oneshape, "row_invariant", lambda layer, product: False)
    mode = apply_half_mode(model, OneShape(ROWS))
    assert mode.mode == "kernels" and "not row-invariant" in mode.note and "\n" not in mode.note
    assert all(getattr(m, "one_shape", None) is None for m in linear_layers(model))


@needs_kernel
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name, dtype, product",
                         [*[(n, d, "stock") for n, d in TINY], ("llama", "bfloat16", "row-blocked")])
def test_tiny_families_at_one_shape_equal_vanilla(name, dtype, product):
    """Stock products at one shape, as load_model sets them (and the row-blocked product):
    every decoder, greedy and sampled."""
    model = tiny(name, dtype)
    mode = apply_half_mode(model, OneShape(ROWS))
    assert mode.mode == OneShape(ROWS).words(), mode.note
    if product == "row-blocked":
        set_products(model, lambda: RowBlockedProduct(ROWS))
    assert parts_from_vanilla(model, tiny_prompts(1)[0]) == []


def tree_and_single_logits(model, prompt: list[int]):
    """Logits [T, V] of a 12-node tree verified in one pass, and the same nodes' logits from
    one-token passes (the hidden states bit for bit first)."""
    branches = [[5, 9, 14, 3, 8], [21, 7, 30], [11, 2, 40]]
    rows, one = tree_rows_and_single_rows(model, prompt, 17, branches)
    head = model.get_output_embeddings()
    with torch.inference_mode():
        return rows, one, head(rows), torch.cat([head(one[i : i + 1]) for i in range(one.shape[0])])


def break_shape(monkeypatch, mutation: str) -> None:
    if mutation == "no padding":
        monkeypatch.setattr(ShapedProduct, "__call__", no_padding)
        return
    original = ShapedProduct.__call__

    def follows(self, x, weight, bias):
        self.rows = max(1, x.numel() // x.shape[-1])  # R follows each pass's rows
        return original(self, x, weight, bias)
    monkeypatch.setattr(ShapedProduct, "__call__", follows)


@needs_kernel
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("mutation", [None, "no padding", "R follows the rows"])
def test_a_tree_pass_at_one_shape_has_the_bits_of_one_token_passes(monkeypatch, mutation):
    """Bit for bit, each node's hidden state and logits in a tree pass equal its one-token
    passes'; a mutation that breaks the fixed shape breaks it."""
    model = tiny("llama", "bfloat16")
    set_products(model, lambda: RowBlockedProduct(ROWS))
    if mutation:
        break_shape(monkeypatch, mutation)
    rows, one, tree_logits, single_logits = tree_and_single_logits(model, tiny_prompts(1)[0])
    same = torch.equal(rows, one) and torch.equal(tree_logits, single_logits)
    assert same is (mutation is None)


BUNDLED_ROWS = 4  # small: without bf16 matrix instructions a stock bf16 product costs about R one-row products
BUNDLED_NEW = 8
# Short, and prefill too runs at one shape here; the cost trees (whose curve is timed first) run on the tiny models.
BUNDLED_PROMPT = "Describe a lighthouse at night in three sentences."
BUNDLED_DRAFTERS = [("pld", "static"), ("logitspec", "static")]


@pytest.fixture(scope="module")
def bundled_one_shape():
    """The bundled model in bfloat16 at one shape, forced whatever the timing picked."""
    torch.set_num_threads(2)
    lm = load_model("bundled", "cpu", "bfloat16")
    lm.half_mode = apply_half_mode(lm.model, OneShape(BUNDLED_ROWS))
    assert lm.half_mode.mode == OneShape(BUNDLED_ROWS).words(), lm.half_mode.note
    return lm


@needs_kernel
@pytest.mark.slow
def test_bundled_at_one_shape_drafters_equal_vanilla(bundled_one_shape):
    lm = bundled_one_shape
    small = {"capacity": 8, "pld_tokens": 4, "continuation": 4}
    for sampling in ({}, {"temperature": 1.0, "seed": 5}):
        want = vanilla_run(lm, BUNDLED_PROMPT, DecodeSettings(max_new_tokens=BUNDLED_NEW, **sampling)).tokens
        assert len(want) == BUNDLED_NEW
        for method, tree in BUNDLED_DRAFTERS if not sampling else BUNDLED_DRAFTERS[1:]:
            s = DecodeSettings(max_new_tokens=BUNDLED_NEW, tree=tree, **small, **sampling)
            assert run_trace(lm, BUNDLED_PROMPT, method, s).tokens == want, (method, tree, sampling)
