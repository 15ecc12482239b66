"""Input limits, defined once and applied by the library, the CLI and the app.

Every limit can be overridden by an environment variable (LOGITSPEC_<NAME>, e.g.
LOGITSPEC_CONTEXT_CAP=8192), each declared with its default in logitspec/environment.py. A
breach raises InputError whose message is fit for a user.
"""
from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields

from .. import environment as env
from .settings import POOLS, PROCESSOR_OPTIONS, DecodeSettings


def size_words(n: int) -> str:
    """A file's size as people read it: kB under a megabyte (a small file is never "0.0 MB"),
    else MB (MiB, as browsers' upload boxes count them)."""
    return f"{max(1, round(n / 2**10))} kB" if n < 1000 * 2**10 else f"{n / 2**20:.1f} MB"


class InputError(ValueError):
    """Input that the tool refuses; the message says what is wrong and what is allowed."""


@dataclass(frozen=True)
class Limits:
    """The input limits; each default and meaning is its variable's in logitspec/environment.py."""

    max_new_tokens: int = env.MAX_NEW_TOKENS.default
    k: int = env.K.default
    capacity: int = env.CAPACITY.default
    ngram: int = env.NGRAM.default
    continuation: int = env.CONTINUATION.default
    context_cap: int = env.CONTEXT_CAP.default  # prompt tokens + max new tokens
    prompt_chars: int = env.PROMPT_CHARS.default
    trace_bytes: int = env.TRACE_BYTES.default
    set_bytes: int = env.SET_BYTES.default
    run_seconds: float = env.RUN_SECONDS.default
    one_shape_rows: int = env.ONE_SHAPE_ROWS.default

    @classmethod
    def from_env(cls) -> "Limits":
        """Defaults, overridden by LOGITSPEC_<FIELD> environment variables, read now."""
        vals = {}
        for f in fields(cls):
            var = env.limit(f.name)
            try:
                vals[f.name] = var.read()
            except ValueError as e:
                raise InputError(f"{var.name}={var.raw()!r} is not a number") from e
        return cls(**vals)


def check_prompt(text: object, limits: Limits | None = None) -> str:
    """The prompt, if it is non-empty, valid Unicode text of bounded size with no control characters."""
    lim = limits or Limits.from_env()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"the prompt is not valid UTF-8 (bad byte at position {e.start})") from e
    if not isinstance(text, str):
        raise InputError("the prompt must be text")
    if not text.strip():
        raise InputError("the prompt is empty: type a question or pick an example")
    if len(text) > lim.prompt_chars:
        raise InputError(f"the prompt is {len(text):,} characters; the limit is {lim.prompt_chars:,}")
    for i, ch in enumerate(text):
        cat = unicodedata.category(ch)
        if cat == "Cs":
            raise InputError(f"the prompt holds an invalid character (a lone surrogate) at position {i}")
        if cat == "Cc" and ch not in "\n\t\r":
            raise InputError(f"the prompt holds a control character (U+{ord(ch):04X}) at position {i}")
    return text


def _in_range(name: str, value, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")


MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def check_sampling(s: DecodeSettings) -> None:
    """Temperature in [0, 2], top-p in (0, 1], top-k a whole number >= 0, seed a whole number."""
    if not _is_number(s.temperature) or not 0 <= s.temperature <= MAX_TEMPERATURE:
        raise InputError(f"temperature must be a number from 0 (greedy) to {MAX_TEMPERATURE:g}, got {s.temperature!r}")
    if not _is_number(s.top_p) or not 0 < s.top_p <= 1:
        raise InputError(f"top-p must be a number above 0 and at most 1, got {s.top_p!r}")
    if isinstance(s.top_k, bool) or not isinstance(s.top_k, int) or s.top_k < 0:
        raise InputError(f"top-k must be a whole number, 0 (off) or more, got {s.top_k!r}")
    _in_range("seed", s.seed, 0, MAX_SEED)


def check_settings(s: DecodeSettings, limits: Limits | None = None) -> DecodeSettings:
    """The settings, if every field is inside its allowed range (the method is the lane table's to check)."""
    lim = limits or Limits.from_env()
    _in_range("max new tokens", s.max_new_tokens, 1, lim.max_new_tokens)
    _in_range("k (next-next candidates)", s.k, 1, lim.k)
    _in_range("tree capacity", s.capacity, 1, lim.capacity)
    _in_range("CPU tree capacity", s.cpu_capacity, 1, lim.capacity)
    _in_range("continuation length", s.continuation, 1, lim.continuation)
    _in_range("prompt lookup length", s.pld_tokens, 1, lim.continuation)
    if not s.ngram_sizes:
        raise InputError("give at least one n-gram size")
    for n in s.ngram_sizes:
        _in_range("n-gram size", n, 1, lim.ngram)
    if s.tree not in ("static", "cost"):
        raise InputError(f"tree must be 'static' or 'cost', got {s.tree!r}")
    if s.pool not in POOLS:
        raise InputError(f"pool must be one of {', '.join(POOLS)}, got {s.pool!r}")
    check_sampling(s)
    check_processors(s)
    return s


def check_processors(s: DecodeSettings) -> None:
    """The logits-processor options: a dict of PROCESSOR_OPTIONS names (values are checked
    where the processors are built, as generate checks them)."""
    if not isinstance(s.processors, dict):
        raise InputError(f"processors must be a dict of generate options, got {s.processors!r}")
    unknown = sorted(set(s.processors) - set(PROCESSOR_OPTIONS))
    if unknown:
        raise InputError(f"unknown processor option {unknown[0]!r}; the options are {', '.join(PROCESSOR_OPTIONS)}")
    for name, value in s.processors.items():  # the form's and the command line's, before a model loads
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if name == "repetition_penalty" and not (number and value > 0):
            raise InputError(f"repetition penalty must be a number above 0 (1 applies none), got {value!r}")
        if name in COUNT_OPTIONS and not (number and float(value).is_integer() and value >= 0):
            raise InputError(f"{name.replace('_', ' ')} must be a whole number from 0 (0 applies none), got {value!r}")


COUNT_OPTIONS = ("no_repeat_ngram_size", "min_new_tokens", "min_length")  # processor options that count tokens


def checked_settings(values: Mapping[str, object], limits: Limits | None = None) -> DecodeSettings:
    """DecodeSettings from named values (a form, command-line options), checked against the
    limits; a value left out or None keeps DecodeSettings' default."""
    given = {name: _whole(v) for name, v in values.items() if v is not None}
    if "ngram_sizes" in given:
        try:
            given["ngram_sizes"] = tuple(sorted({int(n) for n in given["ngram_sizes"]}))
        except (TypeError, ValueError) as e:
            raise InputError(f"n-gram sizes must be whole numbers: {e}") from e
    return check_settings(DecodeSettings(**given), limits)


def _whole(value):
    """A whole float as an int (number boxes send floats); anything else as it came, for
    check_settings to refuse with its own message."""
    return int(value) if isinstance(value, float) and value.is_integer() and value == value else value


def check_context(prompt_tokens: int, max_new_tokens: int, model_context: int, limits: Limits | None = None) -> None:
    """Refuse a run whose prompt plus new tokens would not fit the model or the cap."""
    lim = limits or Limits.from_env()
    cap = min(lim.context_cap, model_context) if model_context else lim.context_cap
    if prompt_tokens + max_new_tokens > cap:
        which = "the model's context" if model_context and model_context < lim.context_cap else "the context cap"
        raise InputError(
            f"the prompt is {prompt_tokens:,} tokens; with {max_new_tokens} new tokens that exceeds "
            f"{which} of {cap:,} tokens. Shorten the prompt or lower max new tokens."
        )
