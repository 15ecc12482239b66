"""Vanilla's run on a loaded model, decoded once per test run for each prompt and setting: the
lossless checks of several modules, on either pytest-xdist worker, compare their drafters
against one reference run."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace
from logitspec.runner import run_trace
from logitspec.runtime.files import written_whole

# The length of the float32 lossless runs on the bundled model: several tree steps on every
# prompt (structural faults part within the first steps), and one vanilla run for all modules.
BUNDLED_MAX_NEW = 32

# The model is kept in the value so that its id, in the key, cannot be reused by another.
_runs: dict[tuple, tuple[object, RunTrace]] = {}
# Where the pytest-xdist workers of one run share their runs (tests/conftest.py sets it on a
# worker: a folder beside the workers' own temporary folders, removed with them).
SHARED: dict[str, Path] = {}


def numerics(lm) -> dict:
    """What vanilla's tokens on a loaded model depend on besides the prompt and the settings:
    its weights and dtype, the kernels its products run on, and the thread count."""
    from logitspec.runtime.fewrows import kernel_variant

    half = getattr(lm, "half_mode", None)
    return {"model": lm.name, "weights": str(lm.model.config._name_or_path), "dtype": lm.dtype,
            "device": str(lm.device), "half_mode": half.mode if half is not None else None,
            "kernel": kernel_variant()[0], "threads": torch.get_num_threads()}


def vanilla_run(lm, text: str, settings: DecodeSettings) -> RunTrace:
    """Vanilla's trace; only the length and the sampling settings change vanilla's tokens (it
    drafts nothing), so runs that differ in the drafters' settings share it. A run another
    worker already decoded on the same model, kernels and threads is read from its file."""
    drawn = {"text": text, "max_new_tokens": settings.max_new_tokens, "temperature": settings.temperature,
             "top_p": settings.top_p, "top_k": settings.top_k, "seed": settings.seed,
             "processors": sorted(settings.processors.items())}
    key = (id(lm), json.dumps(drawn, sort_keys=True))
    if key not in _runs:
        _runs[key] = (lm, _shared_run(lm, text, settings, {**drawn, **numerics(lm)}))
    return _runs[key][1]


def _shared_run(lm, text: str, settings: DecodeSettings, identity: dict) -> RunTrace:
    folder = SHARED.get("folder")
    path = None
    if folder is not None:
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:24]
        path = folder / f"{digest}.json"
        if path.is_file():
            return RunTrace.load(path)
    trace = run_trace(lm, text, "vanilla", settings)
    if path is not None:
        with written_whole(path) as part:  # whole or absent: the other worker never reads half a file
            trace.save(part)
    return trace
