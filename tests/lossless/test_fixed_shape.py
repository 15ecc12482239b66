"""The accelerator's way to exactness in half precision, checked on the CPU.

On CUDA every pass is padded to one row count and attention runs on torch's blocked
row-invariant attention (runtime/fixedshape.py, runtime/blocked_attention.py). No GPU runs
here, so these tests turn that mode on for the CPU and send every linear layer to torch's
stock kernels, as on a GPU: a tree decoder must then equal vanilla decoding token for token
in bfloat16 and float16, and without the padding it parts (the mutation at the end).
"""
from __future__ import annotations

import pytest
import torch

from helpers.families import WORKS
from helpers.tiny_models import tiny_prompts
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.models import prepare_model
from logitspec.runtime import fixedshape, linear
from logitspec.runtime.blocked_attention import blocked_row_attention

pytestmark = [pytest.mark.lossless, pytest.mark.usefixtures("one_thread")]

# Each family in one half dtype: the mode is the same code in both.
CASES = [("llama", "bfloat16"), ("qwen2-window8", "bfloat16"), ("gemma3-window16", "float16")]
VARIANTS = [("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]
MAX_NEW = 40


@pytest.fixture
def padded_cpu(monkeypatch):
    """The CUDA mode on the CPU: padded passes, blocked attention, stock linear kernels."""
    monkeypatch.setattr(fixedshape, "PADDED_DEVICES", {"cpu", "cuda"})
    monkeypatch.setattr(linear, "invariant_rows", lambda: 1)


def tiny(name: str, dtype: str):
    fam = next(f for f in WORKS if f.name == name)
    model = fam.build().to(getattr(torch, dtype))
    prepare_model(model, name)
    return model


def tokens(model, prompt, method, settings) -> list[int]:
    return [t for s in decode(model, prompt, method, settings) for t in s.tokens]


def test_blocked_attention_gives_a_row_the_bits_of_a_one_token_layout_at_the_same_row_count():
    torch.manual_seed(0)
    q = torch.randn(1, 4, 6, 16, dtype=torch.bfloat16)
    k, v = torch.randn(2, 1, 2, 700, 16, dtype=torch.bfloat16)
    hidden = torch.finfo(torch.bfloat16).min
    # Rows 0-5 of a tree over 694 cached keys: row 5 sees the cache, rows 1 and 3 and itself.
    tree = torch.full((1, 1, 6, 700), hidden, dtype=torch.bfloat16)
    tree[..., :694] = 0
    for row, seen in enumerate([[0], [0, 1], [0, 2], [0, 1, 3], [0, 4], [0, 1, 3, 5]]):
        tree[0, 0, row, [694 + s for s in seen]] = 0
    got = blocked_row_attention(q, k, v, tree, 0.25)[0, 5]
    # The same query in a pass of as many rows (the other rows see one key), over the same keys
    # laid out contiguously, as a one-token pass has them.
    keys = list(range(694)) + [694, 695, 697, 699]
    alone_q = torch.cat([q[:, :, 5:6], torch.randn(1, 4, 5, 16, dtype=torch.bfloat16)], dim=2)
    alone_mask = torch.full((1, 1, 6, len(keys)), hidden, dtype=torch.bfloat16)
    alone_mask[0, 0, 0], alone_mask[0, 0, 1:, 0] = 0, 0
    alone = blocked_row_attention(alone_q, k[:, :, keys], v[:, :, keys], alone_mask, 0.25)[0, 0]
    assert torch.equal(got, alone)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q[:, :, 5:6].float(), k[:, :, keys].float().repeat_interleave(2, 1),
        v[:, :, keys].float().repeat_interleave(2, 1), scale=0.25)[0, :, 0]
    assert torch.allclose(got.float(), ref, atol=2e-2)


@pytest.mark.slow
@pytest.mark.parametrize("name, dtype", CASES)
def test_padded_passes_equal_vanilla_in_half_precision(padded_cpu, name, dtype):
    model = tiny(name, dtype)
    for i, prompt in enumerate(tiny_prompts(2)):
        want = tokens(model, prompt, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW))
        for method, tree in VARIANTS:
            assert tokens(model, prompt, method, DecodeSettings(max_new_tokens=MAX_NEW, tree=tree)) == want
        sampled = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.0, seed=7 + i)
        assert tokens(model, prompt, "logitspec", sampled) == tokens(model, prompt, "vanilla", sampled)


@pytest.mark.slow
def test_without_the_padding_and_the_blocked_attention_a_tree_decoder_parts(padded_cpu, monkeypatch):
    """Not vacuous: with torch's stock kernels at each pass's own shape (what a GPU ran before
    this mode), a tree decoder parts from vanilla in bfloat16 on these prompts. On this CPU
    neither half alone was seen to part: the tiny model's margins absorb the last bits of the
    attention alone, and the CPU's stock GEMM kept one order across these row counts."""
    from logitspec.core import verify
    from logitspec.runtime import attention

    model = tiny("llama", "bfloat16")
    monkeypatch.setattr(verify, "fixed_rows", lambda model: None)
    monkeypatch.setattr(attention, "row_attention_for", lambda query: None)
    parted = 0
    for prompt in tiny_prompts(3):
        want = tokens(model, prompt, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW))
        parted += sum(tokens(model, prompt, m, DecodeSettings(max_new_tokens=MAX_NEW, tree=t)) != want
                      for m, t in VARIANTS)
    assert parted


ON_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


@ON_CUDA
@pytest.mark.parametrize("name", [f.name for f in WORKS])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_on_cuda_tiny_families_equal_vanilla_in_half_precision(name, dtype):
    """The mode as shipped (no patching): every tiny family on the GPU, greedy and sampled."""
    model = tiny(name, dtype).to("cuda")
    for i, prompt in enumerate(tiny_prompts(2)):
        want = tokens(model, prompt, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW))
        for method, tree in VARIANTS:
            assert tokens(model, prompt, method, DecodeSettings(max_new_tokens=MAX_NEW, tree=tree)) == want, (method, tree)
        sampled = DecodeSettings(max_new_tokens=MAX_NEW, temperature=1.0, seed=7 + i)
        assert tokens(model, prompt, "logitspec", sampled) == tokens(model, prompt, "vanilla", sampled)


@ON_CUDA
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_on_cuda_bundled_every_decoder_equals_vanilla_in_half_precision(dtype):
    """The mode where it is meant to run: the bundled model on a GPU, 64 tokens, three prompts."""
    from helpers.lossless_prompts import lossless_prompts
    from logitspec.models import load_model
    from logitspec.runner import run_trace

    lm = load_model("bundled", "cuda", dtype)
    for prompt in [p for p in lossless_prompts() if p.id in ("math-111", "code-121", "reasoning-101")]:
        want = run_trace(lm, prompt.text, "vanilla", DecodeSettings(max_new_tokens=64)).tokens
        for method, tree in VARIANTS:
            got = run_trace(lm, prompt.text, method, DecodeSettings(max_new_tokens=64, tree=tree)).tokens
            assert got == want, (dtype, method, tree)
