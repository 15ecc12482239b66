"""The memory floor of a forward pass: the bytes of weights a one-token pass must read, over the
rate at which this machine reads memory. No one-token pass can be faster, so c(1) over the floor
says how much of a pass is something other than bandwidth (dispatch, small ops, threads).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

# The least buffer read; a CPU whose last-level cache holds it reads twice that cache instead
# (cpu_buffer_bytes), so the sum streams from memory, not from the cache.
BUFFER_BYTES = 256 << 20
ROUNDS = 5
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass
class MemoryFloor:
    """Weights read by a one-token pass, the measured read rate, and their quotient."""

    weight_bytes: int
    read_bytes_per_second: float
    threads: int  # intra-op threads the read rate was measured with (a pass uses the same)

    @property
    def seconds(self) -> float:
        return self.weight_bytes / self.read_bytes_per_second

    def to_dict(self) -> dict:
        return {"weight_bytes": self.weight_bytes, "read_gb_per_s": round(self.read_bytes_per_second / 1e9, 3),
                "threads": self.threads, "floor_ms": round(self.seconds * 1e3, 6)}


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of the parameters a one-token pass reads: each tensor once (a head tied to the
    embedding table reads the whole table); an untied input embedding gives only one row."""
    emb = model.get_input_embeddings()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    tied = head is not None and head.weight.data_ptr() == emb.weight.data_ptr()
    seen, total = set(), 0
    for p in model.parameters():
        if p.data_ptr() in seen or (p is emb.weight and not tied):
            continue
        seen.add(p.data_ptr())
        total += p.numel() * p.element_size()
    return total


def last_level_cache_bytes(caches: Path = CACHES) -> int:
    """The largest CPU cache Linux lists (sysfs sizes such as "491520K"); 0 where none is listed."""
    sizes = []
    for f in caches.glob("index*/size"):
        try:
            text = f.read_text().strip()
            sizes.append(int(text.rstrip("KMG")) * UNITS.get(text[-1:], 1))
        except (OSError, ValueError):  # an unreadable entry leaves the others
            continue
    return max(sizes, default=0)


def cpu_buffer_bytes() -> int:
    """A buffer no CPU cache holds: BUFFER_BYTES, or twice the last-level cache where that is
    larger (a Xeon may list hundreds of MiB)."""
    return max(BUFFER_BYTES, 2 * last_level_cache_bytes())


def read_rate(device: torch.device | str = "cpu", nbytes: int | None = None, rounds: int = ROUNDS) -> float:
    """Bytes per second a sum over a buffer larger than the caches reads on `device` (on a CPU,
    on torch's intra-op threads); the fastest round is kept, since other work on a shared
    machine only adds time."""
    device = torch.device(device)
    nbytes = nbytes or cpu_buffer_bytes()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    buf = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    buf.sum()  # the first touch maps the pages; it is not a read
    sync()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        buf.sum()
        sync()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best


def memory_floor(model: torch.nn.Module, threads: int | None = None) -> MemoryFloor:
    """The floor of a one-token pass of `model` on its device; on a CPU read on `threads`
    intra-op threads (those the pass was timed on; default: torch's count now)."""
    was = torch.get_num_threads()
    threads = threads or was
    device = next(model.parameters()).device
    # A GPU's L2 holds tens of MB: a larger buffer keeps its cache out of the read too.
    nbytes = BUFFER_BYTES * 4 if device.type == "cuda" else cpu_buffer_bytes()
    torch.set_num_threads(threads)
    try:
        return MemoryFloor(weight_bytes(model), read_rate(device, nbytes), threads)
    finally:
        torch.set_num_threads(was)
