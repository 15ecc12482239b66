"""Memory: consecutive runs on the bundled model do not grow resident memory.

KV caches and traces must be released: after a warm-up, the resident set read after each of 20
more runs grows by a slope that would add less than 5 % over 50 runs, and by less than 5 % in all.
The figures go to artifacts/memory.json.
"""
from __future__ import annotations

import gc
import json
import weakref

import numpy as np
import psutil
import pytest
from transformers import DynamicCache

from helpers.paths import ROOT
from logitspec.core.settings import DecodeSettings
from logitspec.runner import Run

PROMPTS = ["Summarize: the cat sat on the mat because the mat was warm and the cat was cold.",
           "Write a Python function that adds two numbers.", "What is the capital of Italy?"]
RUNS = 20
TOKENS = 8  # a run's cache holds its prompt's rows and these: a kept one still grows the process by MiBs


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


@pytest.mark.slow
def test_runs_do_not_grow_resident_memory(bundled):
    settings = DecodeSettings(max_new_tokens=TOKENS)

    def one(i: int) -> None:
        run = Run(bundled, PROMPTS[i % len(PROMPTS)], "logitspec", settings)
        for _ in run:
            pass

    for i in range(6):  # warm-up: allocator pools, the cost curve, tokenizer caches
        one(i)
    before = rss()
    after = []
    for i in range(RUNS):
        one(i)
        after.append(rss())
    slope = float(np.polyfit(np.arange(1, RUNS + 1), after, 1)[0])  # bytes a run, least squares
    growth, over_fifty = (after[-1] - before) / before, 50 * slope / before
    out = ROOT / "artifacts" / "memory.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"runs": RUNS, "rss_before_mb": before / 2**20, "rss_after_mb": after[-1] / 2**20,
                               "growth_percent": 100 * growth, "slope_mb_per_run": slope / 2**20,
                               "fifty_runs_percent": 100 * over_fifty}, indent=2))
    print(f"memory: {before / 2**20:.0f} MiB -> {after[-1] / 2**20:.0f} MiB over {RUNS} runs "
          f"({100 * growth:+.2f}%; {slope / 2**20:+.3f} MiB a run, {100 * over_fifty:+.2f}% over 50)")
    assert growth < 0.05 and over_fifty < 0.05


def test_kv_cache_and_trace_are_released(tiny_llama):
    """Once a run and its trace are dropped, neither the cache nor the trace lives on."""
    from logitspec.decoders import decode

    caches: list[weakref.ref] = []
    original = DynamicCache.__init__

    def spy(self, *a, **kw):
        original(self, *a, **kw)
        caches.append(weakref.ref(self))

    DynamicCache.__init__ = spy
    try:
        steps = list(decode(tiny_llama, [1, 2, 3, 4, 1, 2, 3], "logitspec", DecodeSettings(max_new_tokens=12)))
        trace_ref = weakref.ref(steps[0])
        assert caches and steps
        del steps
        gc.collect()
    finally:
        DynamicCache.__init__ = original
    assert trace_ref() is None
    assert all(r() is None for r in caches)
