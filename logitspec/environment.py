"""Every LOGITSPEC_* environment variable, declared once: its name, type, default and meaning.

A variable is read when asked (`THREADS.read()`), from os.environ at that moment, so a change
between two calls is seen; nothing here keeps a value. No other module reads a LOGITSPEC_*
variable (tests/unit/test_environment.py holds it), and docs/deployment.md's table lists the
same variables. This module imports nothing of the project: every layer may read it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "LOGITSPEC_"


@dataclass(frozen=True)
class Variable:
    """One environment variable: `kind` is str, int, float, bool or Path. An empty value is
    unset. A bool that is on by default is off only at "0"; one off by default is on only at "1"."""

    name: str
    kind: type
    default: object
    meaning: str

    def raw(self, env: Mapping[str, str] | None = None) -> str:
        """The text set now ("" when unset); `env` stands in for os.environ in a test."""
        return (os.environ if env is None else env).get(self.name, "")

    def is_set(self, env: Mapping[str, str] | None = None) -> bool:
        return bool(self.raw(env))

    def read(self, env: Mapping[str, str] | None = None):
        """The value now, of `kind`; the default when unset. A number that does not parse
        raises ValueError."""
        raw = (os.environ if env is None else env).get(self.name, "")  # inline: the forward pass asks
        if self.kind is bool:
            return raw != "0" if self.default else raw == "1"
        if not raw:
            return Path(self.default).expanduser() if self.kind is Path else self.default
        return self.kind(raw)


def _limit(field: str, kind: type, default: object, meaning: str) -> Variable:
    """A variable that overrides one field of core/limits.py's Limits (LOGITSPEC_<FIELD>)."""
    return Variable(PREFIX + field.upper(), kind, default, meaning)


# ---------------------------------------------------------------- the app's models
MODELS = Variable("LOGITSPEC_MODELS", str, "", "comma-separated hub ids the app offers besides the bundled model")
DEFAULT_MODEL = Variable("LOGITSPEC_DEFAULT_MODEL", str, "",
                         "the model the app selects at start (e.g. a 7B model on a GPU Space); "
                         "`python app.py --model` sets it")
DTYPE = Variable("LOGITSPEC_DTYPE", str, "float32",
                 "the app's weights' dtype: `float32`, `bfloat16`, `float16`, or `auto` "
                 "(the faster exact dtype, timed at load)")

# ---------------------------------------------------------------- speed, invisible to the algorithm
THREADS = Variable("LOGITSPEC_THREADS", int, 0,
                   "a fixed torch thread count; 0: up to the CPU count, fewer while other work makes fewer faster")
TUNE_THREADS = Variable("LOGITSPEC_TUNE_THREADS", bool, True,
                        "`0` keeps the thread count as configured, never measuring another")
PACKED = Variable("LOGITSPEC_PACKED", bool, True,
                  "`0` keeps the stock matrix kernel on a float32 CPU model (no few-row kernel, no packed weights)")
FEW_ROWS = Variable("LOGITSPEC_FEW_ROWS", bool, True, "`0` turns the few-row kernel off (packed weights stay)")
FEW_ROWS_ISA = Variable("LOGITSPEC_FEW_ROWS_ISA", str, "",
                        "`avx2` forces the few-row kernel's AVX2 variant on an AVX-512 CPU; empty: the CPU's best")
MEASURE_CURVES = Variable("LOGITSPEC_MEASURE_CURVES", bool, True,
                          "`0` times nothing that sizes a draft (no cost curve, no head batch) and loads no "
                          "stored curve")
STEADY_CURVES = Variable("LOGITSPEC_STEADY_CURVES", bool, False,
                         "`1` keeps each cost curve as installed: no pass's time corrects it (a reproducible run)")
KERNEL_DIR = Variable("LOGITSPEC_KERNEL_DIR", Path, "~/.cache/logitspec",
                      "the cache folder of kernel builds, cost curves and converted weights")

# ---------------------------------------------------------------- input limits (core/limits.py's Limits)
MAX_NEW_TOKENS = _limit("max_new_tokens", int, 1024, "the most new tokens a run may ask for")
K = _limit("k", int, 256, "the most next-next candidates (k)")
CAPACITY = _limit("capacity", int, 256, "the largest tree capacity, and the row count up to which half "
                  "precision runs on the row-invariant kernels")
NGRAM = _limit("ngram", int, 5, "the largest n-gram size")
CONTINUATION = _limit("continuation", int, 64, "the longest continuation (and prompt lookup) length")
CONTEXT_CAP = _limit("context_cap", int, 4096,
                     "the most prompt tokens plus new tokens (or the model's context, if smaller)")
PROMPT_CHARS = _limit("prompt_chars", int, 100_000, "the longest prompt, in characters")
TRACE_BYTES = _limit("trace_bytes", int, 20 * 2**20,
                     "the largest uploaded trace, in bytes (20 MiB, as upload boxes count)")
# A set file (analysis/sets.py), gzipped or not, opens at the cost of its summaries, so it may be far
# larger than a trace; Spec-Bench's 480 questions under two methods at 128 tokens are ~150 MiB gzipped.
SET_BYTES = _limit("set_bytes", int, 512 * 2**20, "the largest set file the app opens, in bytes (512 MiB)")
RUN_SECONDS = _limit("run_seconds", float, 300.0, "the time limit of one run, in seconds")
ONE_SHAPE_ROWS = _limit("one_shape_rows", int, 0, "half precision's one row count on the CPU; "
                        "0: timed at load among runtime.oneshape's candidates")

# ---------------------------------------------------------------- engines
VLLM_RULE = Variable("LOGITSPEC_VLLM_RULE", str, "",
                     "the vLLM proposer's rule: `default`, `precise`, or `g1=N,g2=N,rank=N`")

VARIABLES = (MODELS, DEFAULT_MODEL, DTYPE, THREADS, TUNE_THREADS, PACKED, FEW_ROWS, FEW_ROWS_ISA, MEASURE_CURVES,
             STEADY_CURVES, KERNEL_DIR, MAX_NEW_TOKENS, K, CAPACITY, NGRAM, CONTINUATION, CONTEXT_CAP, PROMPT_CHARS,
             TRACE_BYTES, SET_BYTES, RUN_SECONDS, ONE_SHAPE_ROWS, VLLM_RULE)
LIMITS = (MAX_NEW_TOKENS, K, CAPACITY, NGRAM, CONTINUATION, CONTEXT_CAP, PROMPT_CHARS, TRACE_BYTES, SET_BYTES,
          RUN_SECONDS, ONE_SHAPE_ROWS)


def limit(field: str) -> Variable:
    """The variable that overrides the Limits field `field`."""
    return next(v for v in LIMITS if v.name == PREFIX + field.upper())
