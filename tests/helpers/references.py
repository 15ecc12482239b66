"""Vanilla's run on a loaded model, decoded once per session for each prompt and setting: the
lossless checks of several modules then compare their drafters against one reference run."""
from __future__ import annotations

from logitspec.runner import run_trace
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace

# The length of the float32 lossless runs on the bundled model: several tree steps on every
# prompt (structural faults part within the first steps), and one vanilla run for all modules.
BUNDLED_MAX_NEW = 32

# The model is kept in the value so that its id, in the key, cannot be reused by another.
_runs: dict[tuple, tuple[object, RunTrace]] = {}


def vanilla_run(lm, text: str, settings: DecodeSettings) -> RunTrace:
    """Vanilla's trace; only the length and the sampling settings change vanilla's tokens (it
    drafts nothing), so runs that differ in the drafters' settings share it."""
    key = (id(lm), text, settings.max_new_tokens, settings.temperature, settings.top_p,
           settings.top_k, settings.seed)
    if key not in _runs:
        _runs[key] = (lm, run_trace(lm, text, "vanilla", settings))
    return _runs[key][1]
