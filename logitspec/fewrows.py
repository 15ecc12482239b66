"""The few-row linear kernel (`csrc/few_linear.cpp`): built once per machine, used by the
linear layers of a float32 CPU model for products of 1 to 16 rows.

Tree verification multiplies each weight matrix by a handful of rows. Those products are
bound by reading the weights, yet MKL's fp32 GEMM (packed or not) stops streaming them at
the memory's speed past a few rows. Over the bundled model's 210 weight matrices (425 MB)
on the 2-core development machine, `python scripts/time_linear.py` (fastest of 7 passes):
1 row 15.4 ms with the stock kernel against 14.5 ms here; 4 rows 19.7 ms packed against
16.3 ms here; 8 rows 23.2 against 19.8 ms; 16 rows 29.0 against 26.6 ms.

Every decoder uses it, vanilla's one-token steps too, so the race compares decoders and not
kernels. Each output is summed in one fixed order whatever the number of rows, so a token's
linear outputs are the same bits whether it is multiplied alone or inside a tree.

The kernel is compiled from source on first use with torch's extension builder
(`-march=native`, AVX-512), about 10 s, and cached under LOGITSPEC_KERNEL_DIR (default
~/.cache/logitspec). Where it cannot be built (no C++ compiler, no AVX-512, not x86-64
Linux) the layers keep MKL's kernels; LOGITSPEC_FEW_ROWS=0 turns it off.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

# The kernel serves every product from one row up to this: even vanilla's single-token
# steps cost 3% less with it than with torch's GEMV (8 bench questions, 96 tokens, 3
# interleaved repetitions, same tokens).
FEW_MAX_ROWS = 16  # the kernel's limit (csrc/few_linear.cpp, kMaxRows)
FEATURE_MULTIPLE = 16  # input features must be a multiple of the 16-float vector width
SOURCE = Path(__file__).with_name("csrc") / "few_linear.cpp"

_lock = threading.Lock()
_state: dict[str, object] = {}  # "op" once built, or "error" with the reason it was not


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux reports them (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def unsupported_reason() -> str | None:
    """Why the kernel cannot be built here, or None if it can be tried."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"built only on x86-64 Linux, not {platform.system()} {platform.machine()}"
    if "avx512f" not in cpu_flags():
        return "this CPU has no AVX-512"
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


def build_directory() -> Path:
    """Where the built kernel is cached: one folder per source, torch version and CPU."""
    import torch

    root = Path(os.environ.get("LOGITSPEC_KERNEL_DIR") or Path.home() / ".cache" / "logitspec")
    key = hashlib.sha256()
    key.update(SOURCE.read_bytes())
    key.update(torch.__version__.encode())
    key.update(" ".join(sorted(cpu_flags())).encode())  # -march=native code fits one CPU
    return root / f"few_linear-{key.hexdigest()[:16]}"


def _build() -> Callable:
    import torch
    from torch.utils.cpp_extension import load

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    ninja_dir = os.path.dirname(_ninja() or "")
    if ninja_dir and shutil.which("ninja") is None:  # a venv's ninja, when the venv is not activated
        os.environ["PATH"] = ninja_dir + os.pathsep + os.environ.get("PATH", "")
    # at::parallel_for only splits work when compiled with OpenMP; the op then shares
    # torch's own thread pool (the same libgomp, already loaded by torch).
    load(name="logitspec_few_linear", sources=[str(SOURCE)], build_directory=str(folder),
         extra_cflags=["-O3", "-march=native", "-fopenmp"], extra_ldflags=["-fopenmp"],
         is_python_module=False, verbose=False)
    return torch.ops.logitspec.few_linear


def few_row_kernel() -> Callable | None:
    """The kernel `op(x, weight, bias) -> x @ weight.T + bias`, building it on first call;
    None where it is unavailable or turned off (`kernel_status` says why)."""
    if turned_off():
        return None
    with _lock:
        if "op" in _state or "error" in _state:
            return _state.get("op")  # type: ignore[return-value]
        reason = unsupported_reason()
        if reason is None:
            try:
                _state["op"] = _build()
                return _state["op"]  # type: ignore[return-value]
            except Exception as e:  # a failed build only costs the speed-up
                lines = [ln for ln in str(e).splitlines() if ln.strip()]
                reason = f"the build failed: {lines[-1] if lines else type(e).__name__}"
        _state["error"] = reason
        log.info("few-row kernel not used: %s", reason)
        return None


def turned_off() -> bool:
    return os.environ.get("LOGITSPEC_FEW_ROWS", "1") == "0"


def kernel_status() -> str:
    """'built', or why the kernel is not in use (after `few_row_kernel` was asked)."""
    if turned_off():
        return "turned off by LOGITSPEC_FEW_ROWS=0"
    if "op" in _state:
        return "built"
    return str(_state.get("error", "not requested"))


def kernel_fits(layer: torch.nn.Linear) -> bool:
    """Whether the kernel can multiply by this layer's weights as they are stored."""
    w = layer.weight
    return w.dim() == 2 and w.is_contiguous() and w.shape[1] % FEATURE_MULTIPLE == 0
