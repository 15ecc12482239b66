"""The few-row linear kernel: built wherever it can be, and the same linear map as torch's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from logitspec import fewrows
from logitspec.fewrows import FEW_MAX_ROWS, few_row_kernel, kernel_status, unsupported_reason
from logitspec.packed import PackedLinear, use_packed_linear

kernel = few_row_kernel()
needs_kernel = pytest.mark.skipif(kernel is None, reason=f"few-row kernel not available: {kernel_status()}")


def test_the_kernel_is_built_wherever_the_machine_supports_it():
    # A machine with AVX-512 and a compiler must not fall back silently: that would hide a
    # broken build behind MKL's slower products.
    if unsupported_reason() is None:
        assert kernel is not None, kernel_status()
        assert kernel_status() == "built"
    else:
        assert kernel is None and kernel_status() == unsupported_reason()


@needs_kernel
@pytest.mark.parametrize("features", [16, 576, 1536])
@pytest.mark.parametrize("outputs", [1, 3, 5, 7, 64, 577])
def test_every_row_count_computes_the_linear_map(features, outputs):
    g = torch.Generator().manual_seed(features * 1000 + outputs)
    w = torch.randn(outputs, features, generator=g)
    b = torch.randn(outputs, generator=g)
    for rows in range(1, FEW_MAX_ROWS + 1):
        x = torch.randn(rows, features, generator=g)
        for bias in (None, b):
            got = kernel(x, w, bias)
            want = F.linear(x.double(), w.double(), None if bias is None else bias.double()).float()
            assert got.shape == (rows, outputs)
            # float32 sums of `features` products, in another order than MKL's
            torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-6 * features ** 0.5)


@needs_kernel
def test_leading_dimensions_and_strided_inputs_are_kept():
    g = torch.Generator().manual_seed(1)
    w = torch.randn(40, 32, generator=g)
    x = torch.randn(1, 6, 64, generator=g)[..., ::2]  # not contiguous
    got = kernel(x, w, None)
    assert got.shape == (1, 6, 40)
    torch.testing.assert_close(got, F.linear(x, w), rtol=1e-5, atol=1e-5)


@needs_kernel
def test_the_result_does_not_depend_on_the_thread_count():
    # Each output is summed by one thread in a fixed order, so threads change nothing.
    g = torch.Generator().manual_seed(2)
    w, x = torch.randn(1000, 576, generator=g), torch.randn(5, 576, generator=g)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = kernel(x, w, None)
        torch.set_num_threads(2)
        two = kernel(x, w, None)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)


@needs_kernel
@pytest.mark.parametrize("outputs", [576, 577, 4099])
def test_a_row_gets_the_same_bits_alone_or_beside_other_rows(outputs):
    # Vanilla multiplies one token, a tree several: with one summation order for any row
    # count, a token's linear outputs cannot differ between the two.
    g = torch.Generator().manual_seed(outputs)
    w, b = torch.randn(outputs, 576, generator=g), torch.randn(outputs, generator=g)
    x = torch.randn(FEW_MAX_ROWS, 576, generator=g)
    alone = torch.cat([kernel(x[i : i + 1], w, b) for i in range(FEW_MAX_ROWS)])
    for rows in range(1, FEW_MAX_ROWS + 1):
        assert torch.equal(kernel(x[:rows], w, b), alone[:rows]), rows


@needs_kernel
@pytest.mark.parametrize("bad, message", [
    (lambda: kernel(torch.randn(FEW_MAX_ROWS + 1, 32), torch.randn(8, 32), None), "1 to 16 rows"),
    (lambda: kernel(torch.randn(2, 24), torch.randn(8, 24), None), "multiple of 16"),
    (lambda: kernel(torch.randn(2, 32).double(), torch.randn(8, 32).double(), None), "float32"),
    (lambda: kernel(torch.randn(2, 32), torch.randn(32, 8).t(), None), "contiguous"),
    (lambda: kernel(torch.randn(2, 16), torch.randn(8, 32), None), "do not match"),
    (lambda: kernel(torch.randn(2, 32), torch.randn(8, 32), torch.randn(9)), "bias"),
])
def test_shapes_it_cannot_serve_are_refused_with_a_reason(bad, message):
    with pytest.raises(RuntimeError, match=message):
        bad()


@needs_kernel
def test_layers_use_the_kernel_for_few_rows_only(monkeypatch):
    calls = []
    layer = torch.nn.Linear(32, 8)
    use_packed_linear(layer)
    assert type(layer) is PackedLinear and layer.few_rows is kernel
    layer.few_rows = lambda *a: calls.append(a[0].shape) or kernel(*a)
    with torch.inference_mode():
        for rows in (1, 2, FEW_MAX_ROWS, FEW_MAX_ROWS + 1):
            layer(torch.randn(rows, 32))
    assert calls == [(1, 32), (2, 32), (FEW_MAX_ROWS, 32)]
    odd = torch.nn.Linear(24, 8)  # 24 input features: not a multiple of 16
    use_packed_linear(odd)
    assert odd.few_rows is None


def test_turning_it_off_leaves_the_layers_without_it(monkeypatch):
    monkeypatch.setenv("LOGITSPEC_FEW_ROWS", "0")
    assert few_row_kernel() is None
    assert kernel_status() == "turned off by LOGITSPEC_FEW_ROWS=0"
    layer = torch.nn.Linear(32, 8)
    use_packed_linear(layer)
    assert getattr(layer, "few_rows", None) is None


def test_a_failed_build_falls_back_with_its_reason(monkeypatch):
    monkeypatch.setattr(fewrows, "_state", {})
    monkeypatch.setattr(fewrows, "unsupported_reason", lambda: None)

    tries = []

    def broken():
        tries.append(1)
        raise RuntimeError("Error building extension\nc++: fatal error: no input files")

    monkeypatch.setattr(fewrows, "_build", broken)
    assert few_row_kernel() is None
    assert kernel_status() == "the build failed: c++: fatal error: no input files"
    assert few_row_kernel() is None and len(tries) == 1  # remembered, not rebuilt on every load
