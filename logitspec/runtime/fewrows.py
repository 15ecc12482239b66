"""The few-row linear kernel (`csrc/few_linear.cpp`): built once per machine, used by the
linear layers of a float32 CPU model for products of 1 to 16 rows.

Tree verification multiplies each weight matrix by a handful of rows. Those products are
bound by reading the weights, yet MKL's fp32 GEMM (packed or not) stops streaming them at
the memory's speed past a few rows; this kernel reads each weight once for all rows.
Timings (`python scripts/time_linear.py`): docs/performance.md.

Every decoder uses it, vanilla's one-token steps too, so the race compares decoders and not
kernels. Each output is summed in one fixed order whatever the number of rows, so a token's
linear outputs are the same bits whether it is multiplied alone or inside a tree.

It comes in three variants, chosen from the CPU's flags: on x86-64, "avx512" where the CPU
has AVX-512F, else "avx2" where it has AVX2 and FMA (x86-64 CPUs since 2013); on aarch64,
"neon" (every aarch64 CPU has it: Graviton, Ampere, Raspberry Pi, Linux containers on Apple
silicon). LOGITSPEC_FEW_ROWS_ISA=avx2 forces the AVX2 one on an AVX-512 CPU, to test and time
it; `kernel_variant` names the one in use. The variant is compiled from source on first use
with torch's extension builder, about 10 s, and cached under LOGITSPEC_KERNEL_DIR (default
~/.cache/logitspec), one folder per variant and torch install; another install of the same
torch version (a new venv) loads that build's library instead of compiling. Where none can be
built (no C++ compiler, none of the instruction sets, not x86-64 or aarch64 Linux) the layers
keep torch's own kernels; LOGITSPEC_FEW_ROWS=0 turns it off.

Each build also holds speculation's top-k over the vocabulary (`csrc/top_k.cpp`,
`runtime.topk`), which torch.topk serves where there is no build.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import environment
from .files import written_whole

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

# The most rows the kernel takes (compiled in as FEW_MAX_ROWS); it serves every product from
# one row up, vanilla's steps too, so every decoder runs on the same kernel.
FEW_MAX_ROWS = 16
# Input features must be a multiple of this, in every variant: the kernel steps through the
# weights one 64-byte line (16 floats) at a time. Compiled in as FEW_FEATURE_MULTIPLE.
FEATURE_MULTIPLE = 16
SOURCE = Path(__file__).with_name("csrc") / "few_linear.cpp"
TOP_K_SOURCE = SOURCE.with_name("top_k.cpp")  # built beside it: speculation's top-k (see top_k_kernel)
# Also beside it: attention computed row by row, as a one-token pass does (see row_attention_kernel).
ATTENTION_SOURCE = SOURCE.with_name("row_attention.cpp")
# The one file compiled: it includes the three, so torch's headers are read once a build.
UNIT_SOURCE = SOURCE.with_name("kernels.cpp")


def sources() -> tuple[Path, ...]:
    """The files of one build (read when asked, so a test may point one elsewhere)."""
    return SOURCE, TOP_K_SOURCE, ATTENTION_SOURCE, UNIT_SOURCE
ISA_VARIABLE = environment.FEW_ROWS_ISA.name


@dataclass(frozen=True)
class Variant:
    """One build of the kernels: the machine it runs on, the CPU flags it needs (as Linux
    names them), its instruction set in words, and its compiler flags."""

    machine: str
    flags: frozenset[str]
    words: str
    cflags: tuple[str, ...]


# Variants, best first within each machine.
ISAS = {
    "avx512": Variant("x86_64", frozenset({"avx512f"}), "AVX-512", ("-march=native",)),
    # -mno-avx512f also drops AVX-512's 16 extra registers, so a forced build on an AVX-512
    # CPU is the code an AVX2-only CPU runs.
    # F16C widens float16 weights; every AVX2 CPU has it.
    "avx2": Variant("x86_64", frozenset({"avx2", "fma", "f16c"}), "AVX2 with FMA", ("-march=native", "-mno-avx512f")),
    # NEON ("asimd") is part of every aarch64 CPU, so the baseline build runs on all of them.
    "neon": Variant("aarch64", frozenset({"asimd"}), "NEON", ()),
}
MACHINES = {"x86_64": "x86_64", "AMD64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

_lock = threading.Lock()
_ops: dict[str, Kernels] = {}  # variant -> its built ops
_errors: dict[str, str] = {}  # variant -> why it could not be built (not retried)


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux reports them ("flags" on x86, "Features" on
    aarch64; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.partition(":")[2].split())
    return set()


def machine() -> str | None:
    """The architecture in the variants' words ("x86_64", "aarch64"), None for others."""
    return MACHINES.get(platform.machine())


def variants_here() -> list[str]:
    """The variants made for this machine's architecture, best first (none elsewhere)."""
    return [isa for isa, v in ISAS.items() if v.machine == machine()]


def _platform_reason() -> str | None:
    if platform.system() != "Linux" or machine() is None:
        return f"built only on x86-64 or aarch64 Linux, not {platform.system()} {platform.machine()}"
    return None


def isa_choice() -> tuple[str | None, str]:
    """The variant to use here ("avx512", "avx2", "neon") and why, or None and why none applies."""
    if (reason := _platform_reason()) is not None:
        return None, reason
    flags, forced = cpu_flags(), environment.FEW_ROWS_ISA.read()
    here = variants_here()
    if forced:
        if forced not in here:
            return None, f"{ISA_VARIABLE}={forced} is not one of {', '.join(here)} (the {machine()} variants)"
        if not ISAS[forced].flags <= flags:
            return None, f"{ISA_VARIABLE}={forced} asks for {ISAS[forced].words}, which this CPU lacks"
        return forced, f"forced by {ISA_VARIABLE}={forced}"
    usable = [isa for isa in here if ISAS[isa].flags <= flags]
    if not usable:
        return None, f"this CPU has none of {', '.join(ISAS[isa].words for isa in here)}"
    lacking = [ISAS[isa].words for isa in here[: here.index(usable[0])]]
    return usable[0], f"the CPU has {ISAS[usable[0]].words}" + (f" but no {', '.join(lacking)}" if lacking else "")


def unsupported_reason(isa: str | None = None) -> str | None:
    """Why the kernel (this variant, or the one `isa_choice` picks) cannot be built here, or
    None if it can be tried."""
    if isa is None:
        isa, why = isa_choice()
        if isa is None:
            return why
    if (reason := _platform_reason()) is not None:
        return reason
    if isa not in ISAS:
        return f"no variant {isa!r}: there are {', '.join(ISAS)}"
    if ISAS[isa].machine != machine():
        return f"{isa} is made for {ISAS[isa].machine} CPUs, not {machine()}"
    if not ISAS[isa].flags <= cpu_flags():
        return f"this CPU has no {ISAS[isa].words}"
    if not (shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")):
        return "no C++ compiler found"
    if _ninja() is None:
        return "no ninja build tool found"
    return None


def _ninja() -> str | None:
    """The ninja that torch's extension builder runs: on PATH, or the PyPI package's."""
    found = shutil.which("ninja")
    if found is None:
        try:
            import ninja  # the PyPI package, in requirements.txt; its bin folder may not be on PATH
        except ImportError:
            return None
        found = shutil.which("ninja", path=ninja.BIN_DIR)
    return found


def _cflags(isa: str) -> list[str]:
    return ["-O3", *ISAS[isa].cflags, "-fopenmp", f"-DKERNEL_ISA={isa}",
            f"-DFEW_MAX_ROWS={FEW_MAX_ROWS}", f"-DFEW_FEATURE_MULTIPLE={FEATURE_MULTIPLE}"]


def cache_root() -> Path:
    """The folder of what this project caches per machine: LOGITSPEC_KERNEL_DIR, else
    ~/.cache/logitspec (the kernel builds, measured cost curves, converted weights)."""
    return environment.KERNEL_DIR.read()


def cpu_model() -> str:
    """The CPU's model name as Linux reports it, else the platform's words."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def cpu_description() -> str:
    """The CPU's model name, core count and widest vector instructions: what a race's recorded
    seconds depend on, as race files name their machine."""
    flags = cpu_flags()
    isa = "AVX-512" if "avx512f" in flags else "AVX2, no AVX-512" if "avx2" in flags else "no AVX2"
    return f"{cpu_model()}, {os.cpu_count()} cores, {isa}"


def _build_key(isa: str, place: bool) -> str:
    """The sources, flags, torch version and CPU a build depends on, and where `place`, the
    torch install's folder."""
    import torch

    key = hashlib.sha256()
    for source in sources():
        key.update(source.read_bytes())
    key.update(" ".join(_cflags(isa)).encode())
    key.update(torch.__version__.encode())
    if place:
        key.update(str(Path(torch.__file__).resolve().parent).encode())
    key.update(" ".join(sorted(cpu_flags())).encode())  # -march=native code fits one CPU
    return key.hexdigest()[:16]


def build_directory(isa: str) -> Path:
    """Where a variant's build is cached: one folder per variant, source, torch install and CPU.

    The torch install's place is part of the key: two environments (a checkout's venv and a
    wheel's) write different build files, and sharing one folder made each rebuild the other's.
    """
    return cache_root() / f"few_linear_{isa}-{_build_key(isa, place=True)}"


def shared_library(isa: str) -> Path:
    """A variant's built library as every torch install of one version can load it: the
    library names torch's by their sonames alone, so a new venv need not compile it again."""
    return cache_root() / "shared" / f"logitspec_few_linear_{isa}-{_build_key(isa, place=False)}.so"


@dataclass(frozen=True)
class Kernels:
    """The ops of one variant's build."""

    linear: Callable  # (x, weight, bias) -> x @ weight.T + bias, any rows, FEW_MAX_ROWS per weight pass
    top_k: Callable  # (x: [V] float32, k) -> the indices of its k largest entries, best first
    attention: Callable  # (q, k, v, mask, scale) -> [B, n, H, d], each row as a one-token pass


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """One build of a folder at a time across processes. torch's builder marks a build with a
    plain `lock` file and waits for ever on one a killed build left; an OS lock is released
    when its holder dies, so whoever holds it knows any `lock` file is such a leftover."""
    import fcntl

    with open(folder / "build.flock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        if (folder / "lock").exists():
            log.warning("removing a kernel build lock left by a build that never finished: %s", folder / "lock")
            (folder / "lock").unlink(missing_ok=True)
        yield


def _build(isa: str) -> Kernels:
    import torch

    folder = build_directory(isa)
    folder.mkdir(parents=True, exist_ok=True)
    library, shared = folder / f"logitspec_few_linear_{isa}.so", shared_library(isa)
    with build_lock(folder):
        compiled_here = (folder / "build.ninja").exists()
        if not compiled_here and not library.exists() and shared.exists():
            _copy_file(shared, library)  # another install of this torch built it: the same code
        if compiled_here or not (library.exists() and _loaded(library)):
            _compile(isa, folder)
            if not shared.exists():
                _copy_file(library, shared)
    # The sources name their ops after the instruction set they were compiled for: a build
    # for another one than asked has no op of this name and fails here.
    ops = torch.ops.logitspec
    return Kernels(getattr(ops, f"few_linear_{isa}"), getattr(ops, f"top_k_{isa}"), getattr(ops, f"row_attention_{isa}"))


def _compile(isa: str, folder: Path) -> None:
    from torch.utils.cpp_extension import load

    ninja_dir = os.path.dirname(_ninja() or "")
    if ninja_dir and shutil.which("ninja") is None:  # a venv's ninja, when the venv is not activated
        os.environ["PATH"] = ninja_dir + os.pathsep + os.environ.get("PATH", "")
    # at::parallel_for only splits work when compiled with OpenMP; the op then shares
    # torch's own thread pool (the same libgomp, already loaded by torch).
    load(name=f"logitspec_few_linear_{isa}", sources=[str(UNIT_SOURCE)], build_directory=str(folder),
         extra_cflags=_cflags(isa), extra_ldflags=["-fopenmp"], is_python_module=False, verbose=False)


def _loaded(library: Path) -> bool:
    """Load a library copied from another install; one that fails is removed, to be compiled."""
    import torch

    try:
        torch.ops.load_library(str(library))
        return True
    except (OSError, RuntimeError) as e:
        log.info("few-row kernel library %s not loaded (%s); compiling it", library, e)
        library.unlink(missing_ok=True)
        return False


def _copy_file(src: Path, dest: Path) -> None:
    """A whole copy or none: written beside `dest` and renamed into place (a failure only
    costs a compile)."""
    try:
        with written_whole(dest) as tmp:
            shutil.copyfile(src, tmp)
    except OSError as e:
        log.info("few-row kernel library not copied to %s: %s", dest, e)


def few_row_kernel(isa: str | None = None) -> Callable | None:
    """The kernel `op(x, weight, bias) -> x @ weight.T + bias` in the variant `isa_choice`
    picks (or `isa`, to test or time another), building it on first call; None where it is
    unavailable or turned off (`kernel_status`, or `unsupported_reason(isa)`, says why)."""
    kernels = _kernels(isa)
    return kernels.linear if kernels is not None else None


def top_k_kernel(isa: str | None = None) -> Callable | None:
    """`op(x, k)`: the indices of the k largest entries of a float32 CPU vector, best first
    (equal values: the lower index first), built with the few-row kernel; None where that
    is unavailable or turned off."""
    kernels = _kernels(isa)
    return kernels.top_k if kernels is not None else None


def row_attention_kernel(isa: str | None = None) -> Callable | None:
    """`op(q, k, v, mask, scale)`: attention whose every query row is computed as a one-token
    pass computes it (csrc/row_attention.cpp), built with the few-row kernel; None where that
    is unavailable or turned off."""
    kernels = _kernels(isa)
    return kernels.attention if kernels is not None else None


def invariant_rows() -> int:
    """Passes of up to this many tokens run on the row-invariant kernels in half precision:
    the largest tree the input limits allow (a longer prefill is the same in every decoder).
    Read at each call, as Limits.from_env reads the tree capacity, so the two never disagree."""
    return environment.CAPACITY.read()


def built_top_k() -> Callable | None:
    """The top-k op of a variant already built in this process, or None: it never builds,
    so a decoding step may ask (the variants' top-k are the same code)."""
    with _lock:
        return next((k.top_k for k in _ops.values()), None)


def _kernels(isa: str | None) -> Kernels | None:
    if turned_off():
        return None
    isa = isa or isa_choice()[0]
    if isa is None:
        return None
    with _lock:
        if isa not in _ops and isa not in _errors:
            _load(isa)
        return _ops.get(isa)


def _load(isa: str) -> None:
    reason = unsupported_reason(isa)
    if reason is None:
        try:
            _ops[isa] = _build(isa)
            return
        except Exception as e:  # a failed build only costs the speed-up
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            reason = f"the build failed: {lines[-1] if lines else type(e).__name__}"
    _errors[isa] = reason
    log.info("few-row kernel (%s) not used: %s", isa, reason)


def turned_off() -> bool:
    return not environment.FEW_ROWS.read()


def kernel_variant() -> tuple[str | None, str]:
    """The variant in use ("avx512", "avx2" or "neon"), or None, with `kernel_status`'s words."""
    isa = isa_choice()[0]
    return (isa if not turned_off() and isa in _ops else None), kernel_status()


def kernel_status() -> str:
    """'built (variant: why it was chosen)', or why the kernel is not in use (after
    `few_row_kernel` was asked)."""
    if turned_off():
        return "turned off by LOGITSPEC_FEW_ROWS=0"
    isa, why = isa_choice()
    if isa is None:
        return why
    if isa in _ops:
        return f"built ({isa}: {why})"
    return _errors.get(isa, "not requested")


def kernel_fits(layer: torch.nn.Linear) -> bool:
    """Whether the kernel can multiply by this layer's weights as they are stored."""
    w = layer.weight
    return w.dim() == 2 and w.is_contiguous() and w.shape[1] % FEATURE_MULTIPLE == 0
