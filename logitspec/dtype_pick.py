"""`--dtype auto`: the weights' dtype picked by timing a vanilla answer in each exact dtype on
this machine, never assumed from the CPU's flags, and the reason given in words.

bfloat16 on the CPU runs in its faster exact mode, itself timed at load (runtime/oneshape.py),
and the pick says which. On a CPU without bf16 instructions the kernels widen bfloat16 weights to float32, so the bytes
halve while the work does not and a prefill runs on torch's own bf16 products; whether that
is faster depends on the machine, which is why it is measured rather than read off /proc.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

# The dtypes a CPU run is exact in (docs/exactness.md), in the order ties go.
CPU_CANDIDATES = ("float32", "bfloat16")
# On CUDA, bfloat16 runs padded passes (runtime/fixedshape.py), checked exact on an H200
# (docs/gpu.md); float16's check there did not finish, so auto does not offer it.
CUDA_CANDIDATES = ("float32", "bfloat16")
PROMPT_TOKENS = 128  # a typical chat prompt's length, so the prefill weighs in as it will
TIMED_STEPS = 8  # one-token passes timed per dtype, after one untimed warm-up run


@dataclass
class DtypePick:
    """The dtype chosen, and what each candidate's answer was estimated to take."""

    dtype: str
    new_tokens: int
    seconds: dict[str, float] = field(default_factory=dict)  # dtype -> estimated answer seconds
    note: str = ""  # which exact half-precision mode the half candidate ran in (runtime.oneshape)

    def words(self) -> str:
        others = ", ".join(f"{d}'s {s:.2f} s" for d, s in self.seconds.items() if d != self.dtype)
        return (f"dtype auto: {self.dtype}, timed here: a {PROMPT_TOKENS}-token prompt and {self.new_tokens} "
                f"new tokens of vanilla decoding estimated at {self.seconds[self.dtype]:.2f} s, against {others}"
                + (f"; {self.note}" if self.note else ""))

    def to_dict(self) -> dict:
        return {"dtype": self.dtype, "new_tokens": self.new_tokens, "prompt_tokens": PROMPT_TOKENS,
                "seconds": {d: round(s, 4) for d, s in self.seconds.items()}, "note": self.note,
                "words": self.words()}


def answer_seconds(lm, new_tokens: int) -> float:
    """Prefill of a PROMPT_TOKENS prompt plus `new_tokens` one-token passes, from the fastest of
    two timings each of a 1-token and a (1 + TIMED_STEPS)-token vanilla run."""
    from .decoders import decode
    from .core.settings import DecodeSettings

    vocab = int(lm.model.config.vocab_size)
    prompt = [(7 * i + 11) % vocab for i in range(PROMPT_TOKENS)]  # any tokens: only the time is kept

    def run(n: int) -> float:
        t0 = time.perf_counter()
        for _ in decode(lm.model, prompt, "vanilla", DecodeSettings(max_new_tokens=n, share_prefill=False)):
            pass
        return time.perf_counter() - t0

    run(2)  # first-call allocations stay out of the timings
    short = min(run(1) for _ in range(2))
    long = min(run(1 + TIMED_STEPS) for _ in range(2))
    per_step = max(0.0, long - short) / TIMED_STEPS
    return short + per_step * max(0, new_tokens - 1)


def pick_dtype(name: str, device: str | None, new_tokens: int,
               loader: Callable | None = None, timer: Callable = answer_seconds):
    """Load the model in each exact dtype, time it, and keep the fastest: (LoadedModel, DtypePick)."""
    from .models import load_model, pick_device

    load = loader or load_model
    dev = str(pick_device(device))
    candidates = CUDA_CANDIDATES if dev.startswith("cuda") else CPU_CANDIDATES
    best, seconds, note = None, {}, ""
    for dtype in candidates:
        lm = load(name, device, dtype)
        seconds[dtype] = timer(lm, new_tokens)
        if getattr(lm, "half_mode", None) is not None:  # bfloat16 on the CPU: the few-row kernel or one shape
            note = lm.half_mode.note
        if best is None or seconds[dtype] < seconds[best.dtype]:
            best = lm
        del lm  # at most two copies of the weights at a time
    return best, DtypePick(best.dtype, new_tokens, seconds, note)
