"""--dtype auto (logitspec.dtype_pick): the faster exact dtype by timing, never by the
CPU's flags, with the reason in words; in the CLI, the bench and the app's loader."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from helpers.commands import cli
from logitspec import dtype_pick
from logitspec.dtype_pick import DtypePick, answer_seconds, pick_dtype


def _stub_loader(loaded: list):
    def load(name, device, dtype):
        loaded.append(dtype)
        return SimpleNamespace(name=name, dtype=dtype)
    return load


@pytest.mark.parametrize("fast", ["float32", "bfloat16"])
def test_the_faster_timed_dtype_is_kept_and_both_times_are_said(fast):
    loaded = []
    times = {"float32": 2.0, "bfloat16": 3.0} if fast == "float32" else {"float32": 2.0, "bfloat16": 1.5}
    lm, pick = pick_dtype("bundled", "cpu", 128, loader=_stub_loader(loaded), timer=lambda lm, n: times[lm.dtype])
    assert loaded == ["float32", "bfloat16"] and lm.dtype == pick.dtype == fast
    slow = "bfloat16" if fast == "float32" else "float32"
    words = pick.words()
    assert words.startswith(f"dtype auto: {fast}, timed here") and f"{times[fast]:.2f} s" in words
    assert f"{slow}'s {times[slow]:.2f} s" in words and "128 new tokens" in words
    assert pick.to_dict()["seconds"] == times


def test_on_cuda_float32_and_bfloat16_are_timed_and_float16_is_not_offered():
    loaded = []
    times = {"float32": 1.0, "bfloat16": 3.4}  # as on the H200: one padded shape is slower there today
    lm, pick = pick_dtype("bundled", "cuda", 64, loader=_stub_loader(loaded), timer=lambda lm, n: times[lm.dtype])
    assert loaded == ["float32", "bfloat16"] and pick.dtype == "float32" and "bfloat16's 3.40 s" in pick.words()


def test_an_answer_is_timed_as_prefill_plus_one_token_passes(tiny_llama, one_thread):
    lm = SimpleNamespace(model=tiny_llama)
    short, long = answer_seconds(lm, 1), answer_seconds(lm, 200)
    assert 0 < short < long  # more new tokens, more passes


def test_the_apps_loader_takes_the_dtype_from_the_environment(monkeypatch):
    from logitspec.core.errors import ModelLoadError
    from serve.model_cache import load_for_app

    with pytest.raises(ModelLoadError, match="unknown dtype 'float8'"):
        load_for_app("bundled", {"LOGITSPEC_DTYPE": "float8"})
    monkeypatch.setattr(dtype_pick, "pick_dtype", lambda name, device, n: (
        SimpleNamespace(dtype="bfloat16"), DtypePick("bfloat16", n, {"float32": 2.0, "bfloat16": 1.0})))
    lm = load_for_app("bundled", {"LOGITSPEC_DTYPE": "auto"})
    assert lm.dtype == "bfloat16" and lm.dtype_note.startswith("dtype auto: bfloat16, timed here")


@pytest.mark.slow
def test_the_cli_times_both_dtypes_and_says_which_it_picked():
    r = cli("Name three colours.", "--dtype", "auto", "--max-new-tokens", "8", "--method", "logitspec",
            "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    secs = out["dtype_pick"]["seconds"]
    assert set(secs) == {"float32", "bfloat16"} and out["dtype"] == min(secs, key=secs.get)
    assert f"dtype auto: {out['dtype']}, timed here" in r.stderr and len(out["tokens"]) == 8


def test_the_half_candidates_exact_mode_is_said_with_the_pick():
    """The bfloat16 candidate's mode (the few-row kernel or one shape) and its times ride along."""
    from logitspec.runtime.oneshape import HalfMode

    def load(name, device, dtype):
        half = HalfMode("kernels", {}, "exact half precision: the few-row kernel") if dtype == "bfloat16" else None
        return SimpleNamespace(name=name, dtype=dtype, half_mode=half)
    times = {"float32": 1.0, "bfloat16": 2.0}
    lm, pick = pick_dtype("bundled", "cpu", 32, loader=load, timer=lambda lm, n: times[lm.dtype])
    assert pick.dtype == "float32" and pick.note == "exact half precision: the few-row kernel"
    assert pick.words().endswith("; exact half precision: the few-row kernel") and pick.to_dict()["note"] == pick.note
