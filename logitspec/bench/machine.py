"""The machine a run is timed on, in words: its GPU or CPU, torch's version, the CPU's vector
instruction sets and the caps that hold libraries below them."""
from __future__ import annotations

import os
import platform

from .. import environment


def hardware(device: str) -> str:
    """The machine in words: the GPU's name on CUDA, else the CPU's model and count."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    from ..runtime.fewrows import cpu_model

    return f"{cpu_model()}, {os.cpu_count()} cores ({platform.machine()})"


def torch_version() -> str:
    import torch

    return torch.__version__


def instruction_sets() -> list[str]:
    """The vector instruction sets the CPU offers of those the kernels can use."""
    from ..runtime.fewrows import cpu_flags

    flags = cpu_flags()
    return [name for name in ("avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_bf16", "avx2", "fma", "f16c",
                              "asimd") if name in flags]


# Variables that hold a library below the CPU's best instruction set (`make bench-avx2`); the
# few-row kernel's own is read through logitspec.environment, as every LOGITSPEC_* variable is.
LIBRARY_ISA_CAPS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
ISA_CAP_VARIABLES = (*LIBRARY_ISA_CAPS, environment.FEW_ROWS_ISA.name)


def isa_caps() -> dict:
    """The instruction-set caps in force: those variables that are set, and the level torch's
    own CPU kernels dispatch to."""
    import torch

    values = {**{v: os.environ.get(v, "") for v in LIBRARY_ISA_CAPS},
              environment.FEW_ROWS_ISA.name: environment.FEW_ROWS_ISA.read()}
    caps = {v: value for v, value in values.items() if value}
    caps["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return caps
