"""The few-row linear kernel: built wherever it can be, in each variant this CPU runs (the
AVX2 one forced on an AVX-512 CPU; NEON on aarch64), and the same linear map as torch's."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as F

from logitspec.runtime import fewrows
from logitspec.runtime.fewrows import (FEATURE_MULTIPLE, FEW_MAX_ROWS, ISAS, build_directory, few_row_kernel,
                               isa_choice, kernel_status, kernel_variant, unsupported_reason)
from logitspec.runtime.linear import FewRowLinear, use_few_row_linear


def hardware_reason(isa: str) -> str | None:
    """Why this CPU or platform cannot run the variant (the one reason to skip), or None:
    a missing compiler or build tool fails the tests instead (`make test` installs them)."""
    if (reason := fewrows._platform_reason()) is not None:
        return reason
    if ISAS[isa].machine != fewrows.machine():
        return f"{isa} is made for {ISAS[isa].machine} CPUs"
    if not ISAS[isa].flags <= fewrows.cpu_flags():
        return f"this CPU has no {ISAS[isa].words}"
    return None


@pytest.fixture(scope="module", params=fewrows.variants_here() or list(ISAS))  # all, to skip with the reason
def kernel(request):
    """Each variant, built (or loaded from the cache) on first use, not at collection."""
    isa = request.param
    if (reason := hardware_reason(isa)) is not None:
        pytest.skip(f"few-row kernel {isa} not available: {reason}")
    op = few_row_kernel(isa)
    # A machine that can build a variant must not fall back silently: that would hide a
    # broken build behind MKL's slower products.
    assert op is not None, fewrows._errors.get(isa) or unsupported_reason(isa) or kernel_status()
    return op


@pytest.fixture(scope="module")
def default_kernel():
    op = few_row_kernel()
    if op is None:
        isa, why = isa_choice()
        if isa is None:  # this CPU or platform runs neither variant
            pytest.skip(f"few-row kernel not available: {why}")
        pytest.fail(f"few-row kernel {isa} was not built: {kernel_status()}")
    return op


def test_the_kernel_is_built_wherever_the_machine_supports_it():
    op = few_row_kernel()
    isa, why = isa_choice()
    if unsupported_reason() is None:
        assert op is not None, kernel_status()
        assert kernel_variant() == (isa, f"built ({isa}: {why})")
    else:
        assert op is None and kernel_status() == unsupported_reason()
        assert kernel_variant() == (None, kernel_status())


X86, ARM = "x86_64", "aarch64"


def pretend(monkeypatch, arch: str, flags: set[str]) -> None:
    """Make fewrows see a Linux machine of this architecture whose CPU has these flags."""
    monkeypatch.setattr(fewrows, "_platform_reason", lambda: None)
    monkeypatch.setattr(fewrows, "machine", lambda: arch)
    monkeypatch.setattr(fewrows, "cpu_flags", lambda: flags)


@pytest.mark.parametrize("arch, flags, forced, want", [
    (X86, {"avx512f", "avx2", "fma", "f16c"}, "", ("avx512", "the CPU has AVX-512")),
    (X86, {"avx2", "fma", "f16c"}, "", ("avx2", "the CPU has AVX2 with FMA but no AVX-512")),
    (X86, {"avx2"}, "", (None, "this CPU has none of AVX-512, AVX2 with FMA")),
    (X86, {"avx512f", "avx2", "fma", "f16c"}, "avx2", ("avx2", "forced by LOGITSPEC_FEW_ROWS_ISA=avx2")),
    (X86, {"avx2", "fma", "f16c"}, "avx512", (None, "LOGITSPEC_FEW_ROWS_ISA=avx512 asks for AVX-512, which this CPU lacks")),
    (X86, {"avx2", "fma", "f16c"}, "sse", (None, "LOGITSPEC_FEW_ROWS_ISA=sse is not one of avx512, avx2 (the x86_64 variants)")),
    (X86, {"avx2", "fma", "f16c"}, "neon", (None, "LOGITSPEC_FEW_ROWS_ISA=neon is not one of avx512, avx2 (the x86_64 variants)")),
    (ARM, {"fp", "asimd", "evtstrm"}, "", ("neon", "the CPU has NEON")),
    (ARM, {"fp", "asimd"}, "neon", ("neon", "forced by LOGITSPEC_FEW_ROWS_ISA=neon")),
    (ARM, {"fp", "asimd"}, "avx2", (None, "LOGITSPEC_FEW_ROWS_ISA=avx2 is not one of neon (the aarch64 variants)")),
    (ARM, {"fp"}, "", (None, "this CPU has none of NEON")),
])
def test_the_variant_follows_the_cpu_flags_or_the_forcing_variable(monkeypatch, arch, flags, forced, want):
    pretend(monkeypatch, arch, flags)
    monkeypatch.setenv("LOGITSPEC_FEW_ROWS_ISA", forced)
    assert isa_choice() == want
    if want[0] is None:
        assert unsupported_reason() == want[1]


def test_a_variant_of_the_other_architecture_is_refused_with_a_reason(monkeypatch):
    pretend(monkeypatch, ARM, {"fp", "asimd"})
    assert fewrows.variants_here() == ["neon"]
    assert unsupported_reason("avx2") == "avx2 is made for x86_64 CPUs, not aarch64"
    pretend(monkeypatch, X86, {"avx2", "fma"})
    assert fewrows.variants_here() == ["avx512", "avx2"]
    assert unsupported_reason("neon") == "neon is made for aarch64 CPUs, not x86_64"


def test_linux_reports_aarch64_features_where_x86_has_flags(monkeypatch, tmp_path):
    # aarch64's /proc/cpuinfo names them "Features"; x86's "flags".
    text = {"aarch64": "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32\n",
            "x86_64": "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 avx2 fma\n"}
    real = fewrows.Path
    for arch, cpuinfo in text.items():
        (tmp_path / arch).write_text(cpuinfo)
        monkeypatch.setattr(fewrows, "Path", lambda p, arch=arch: real(tmp_path / arch) if p == "/proc/cpuinfo" else real(p))
        assert fewrows.cpu_flags() == ({"fp", "asimd", "evtstrm", "aes", "crc32"} if arch == "aarch64"
                                       else {"fpu", "sse2", "avx2", "fma"})


def test_each_variant_has_its_own_cache_folder():
    folders = {build_directory(isa) for isa in ISAS}
    assert len(folders) == len(ISAS)
    assert all(f.name.startswith(f"few_linear_{isa}-") for isa, f in zip(ISAS, map(build_directory, ISAS)))


@pytest.mark.slow  # builds the AVX2 variant (seconds of the compiler); make test runs it
def test_the_avx2_build_holds_no_avx512_instructions():
    # Forced on an AVX-512 CPU it must still be what an AVX2-only CPU runs: no zmm or
    # mask registers, and none of the 16 extra ymm registers only AVX-512 encodes.
    if (reason := hardware_reason("avx2")) is not None:
        pytest.skip(f"few-row kernel avx2 not available: {reason}")
    if shutil.which("objdump") is None:
        pytest.fail("no objdump to read the build: install binutils (it comes with g++)")
    assert few_row_kernel("avx2") is not None, unsupported_reason("avx2") or fewrows._errors.get("avx2")
    library = next(build_directory("avx2").glob("*.so"))
    code = subprocess.run(["objdump", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    assert "vfmadd231ps" in code and "%ymm" in code  # really the vector kernel
    assert not re.search(r"%zmm|%ymm(1[6-9]|2\d|3[01])\b|%k[1-7]\b", code)


def test_forcing_avx2_loads_the_avx2_build(monkeypatch):
    if (reason := hardware_reason("avx2")) is not None:
        pytest.skip(f"few-row kernel avx2 not available: {reason}")
    monkeypatch.setenv("LOGITSPEC_FEW_ROWS_ISA", "avx2")
    assert few_row_kernel() is few_row_kernel("avx2")
    assert kernel_variant() == ("avx2", "built (avx2: forced by LOGITSPEC_FEW_ROWS_ISA=avx2)")


@pytest.mark.parametrize("features", [16, 576, 1536])
@pytest.mark.parametrize("outputs", [1, 3, 5, 7, 64, 577])
def test_every_row_count_computes_the_linear_map(kernel, features, outputs):
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


def test_leading_dimensions_and_strided_inputs_are_kept(kernel):
    g = torch.Generator().manual_seed(1)
    w = torch.randn(40, 32, generator=g)
    x = torch.randn(1, 6, 64, generator=g)[..., ::2]  # not contiguous
    got = kernel(x, w, None)
    assert got.shape == (1, 6, 40)
    torch.testing.assert_close(got, F.linear(x, w), rtol=1e-5, atol=1e-5)


def test_the_result_does_not_depend_on_the_thread_count(kernel):
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


@pytest.mark.parametrize("outputs", [576, 577, 4099])
def test_a_row_gets_the_same_bits_alone_or_beside_other_rows(kernel, outputs):
    # Vanilla multiplies one token, a tree several: with one summation order for any row
    # count, a token's linear outputs cannot differ between the two.
    g = torch.Generator().manual_seed(outputs)
    w, b = torch.randn(outputs, 576, generator=g), torch.randn(outputs, generator=g)
    x = torch.randn(FEW_MAX_ROWS, 576, generator=g)
    alone = torch.cat([kernel(x[i : i + 1], w, b) for i in range(FEW_MAX_ROWS)])
    for rows in range(1, FEW_MAX_ROWS + 1):
        assert torch.equal(kernel(x[:rows], w, b), alone[:rows]), rows
        assert torch.equal(kernel(x[rows - 1 :], w, b), alone[rows - 1 :]), rows  # rows in any place


@pytest.mark.parametrize("bad, message", [
    (lambda k: k(torch.randn(0, 32), torch.randn(8, 32), None), "at least one row"),
    (lambda k: k(torch.randn(2, 24), torch.randn(8, 24), None), f"multiple of {FEATURE_MULTIPLE}"),
    (lambda k: k(torch.randn(2, 32).double(), torch.randn(8, 32).double(), None), "float32"),
    (lambda k: k(torch.randn(2, 32).bfloat16(), torch.randn(8, 32), None), "dtype"),
    (lambda k: k(torch.randn(2, 32), torch.randn(32, 8).t(), None), "contiguous"),
    (lambda k: k(torch.randn(2, 16), torch.randn(8, 32), None), "do not match"),
    (lambda k: k(torch.randn(2, 32), torch.randn(8, 32), torch.randn(9)), "bias"),
])
def test_shapes_it_cannot_serve_are_refused_with_a_reason(kernel, bad, message):
    with pytest.raises(RuntimeError, match=message):
        bad(kernel)


def test_layers_use_the_kernel_for_few_rows_only(default_kernel):
    calls = []
    layer = torch.nn.Linear(32, 8)
    use_few_row_linear(layer)
    assert type(layer) is FewRowLinear and layer.few_rows is default_kernel
    layer.few_rows = lambda *a: calls.append(a[0].shape) or default_kernel(*a)
    with torch.inference_mode():
        for rows in (1, 2, FEW_MAX_ROWS, FEW_MAX_ROWS + 1):
            layer(torch.randn(rows, 32))
    assert calls == [(1, 32), (2, 32), (FEW_MAX_ROWS, 32)]
    odd = torch.nn.Linear(24, 8)  # 24 input features: not a multiple of 16
    use_few_row_linear(odd)
    assert odd.few_rows is None


def test_turning_it_off_leaves_the_layers_without_it(monkeypatch):
    monkeypatch.setenv("LOGITSPEC_FEW_ROWS", "0")
    assert few_row_kernel() is None and few_row_kernel("avx2") is None
    assert kernel_status() == "turned off by LOGITSPEC_FEW_ROWS=0"
    assert kernel_variant() == (None, "turned off by LOGITSPEC_FEW_ROWS=0")
    layer = torch.nn.Linear(32, 8)
    use_few_row_linear(layer)
    assert getattr(layer, "few_rows", None) is None


def test_a_machine_without_either_instruction_set_keeps_mkl(monkeypatch):
    monkeypatch.setattr(fewrows, "_ops", {})
    monkeypatch.setattr(fewrows, "_errors", {})
    pretend(monkeypatch, X86, {"sse4_2", "avx"})
    monkeypatch.delenv("LOGITSPEC_FEW_ROWS_ISA", raising=False)
    assert few_row_kernel() is None
    assert kernel_variant() == (None, "this CPU has none of AVX-512, AVX2 with FMA")
    assert few_row_kernel("avx2") is None and unsupported_reason("avx2") == "this CPU has no AVX2 with FMA"
    layer = torch.nn.Linear(32, 8)
    use_few_row_linear(layer)
    assert getattr(layer, "few_rows", None) is None


def test_a_failed_build_falls_back_with_its_reason(monkeypatch):
    monkeypatch.setattr(fewrows, "_ops", {})
    monkeypatch.setattr(fewrows, "_errors", {})
    monkeypatch.setattr(fewrows, "isa_choice", lambda: ("avx2", "the CPU has AVX2 with FMA but no AVX-512"))
    monkeypatch.setattr(fewrows, "unsupported_reason", lambda isa=None: None)

    tries = []

    def broken(isa):
        tries.append(isa)
        raise RuntimeError("Error building extension\nc++: fatal error: no input files")

    monkeypatch.setattr(fewrows, "_build", broken)
    assert few_row_kernel() is None
    assert kernel_status() == "the build failed: c++: fatal error: no input files"
    assert kernel_variant() == (None, "the build failed: c++: fatal error: no input files")
    assert few_row_kernel() is None and tries == ["avx2"]  # remembered, not rebuilt on every load


def best_first(x: torch.Tensor, k: int) -> list[int]:
    """The reference order: larger values first, equal values by the lower index."""
    return torch.sort(x, descending=True, stable=True).indices[:k].tolist()


@pytest.mark.parametrize("n, k", [(49152, 65), (49157, 65), (7, 3), (5, 9), (300, 0), (1, 1), (64, 64)])
def test_the_built_top_k_takes_the_largest_entries_best_first(kernel, n, k):
    isa = next(isa for isa in ISAS if fewrows._ops.get(isa) and fewrows._ops[isa].linear is kernel)
    top_k = fewrows.top_k_kernel(isa)
    g = torch.Generator().manual_seed(n + k)
    for x in (torch.randn(n, generator=g) * 3,
              torch.round(torch.randn(n, generator=g) * 2),  # many equal values
              torch.arange(n, dtype=torch.float32),  # the best at the end: the heap turns over all along
              -torch.arange(n, dtype=torch.float32)):
        assert top_k(x, k).tolist() == best_first(x, k)
    strided = torch.randn(2 * n, generator=g)[::2]
    assert top_k(strided, k).tolist() == best_first(strided, k)


def test_speculation_top_k_matches_torch_with_the_kernel_and_without(monkeypatch):
    from logitspec.runtime.topk import top_entries

    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g) * 4
    probs = torch.softmax(x, -1)
    want = torch.topk(x, 33)
    few_row_kernel()  # built where it can be, as loading a model does
    if unsupported_reason() is None:
        assert fewrows.built_top_k() is not None, kernel_status()
    with_kernel = top_entries(x, 33, probs)
    monkeypatch.setattr(fewrows, "_ops", {})  # no build: torch.topk
    without = top_entries(x, 33, probs)
    for ids, (vals, ps) in (with_kernel, without):
        assert ids == want.indices.tolist()
        assert vals == want.values.tolist()
        assert ps == probs[want.indices].tolist()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_rows_are_float32_sums_the_same_alone_or_in_any_chunk(kernel, dtype):
    """Half weights widen to float32 as they load: 40 rows (three chunks of at most 16) give
    each row the bits it gets alone, close to the float32 product of the same values."""
    g = torch.Generator().manual_seed(5)
    w, b = torch.randn(72, 576, generator=g).to(dtype), torch.randn(72, generator=g).to(dtype)
    x = torch.randn(40, 576, generator=g).to(dtype)
    got = kernel(x, w, b)
    assert got.dtype == dtype
    alone = torch.cat([kernel(x[i : i + 1], w, b) for i in range(40)])
    assert torch.equal(got, alone)
    want = (x.float() @ w.float().T + b.float()).to(dtype)
    assert torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
