"""ZeroGPU: the race's lanes decoded inside one GPU call, and nothing changed elsewhere.

No ZeroGPU Space is reachable from here: what crosses its process boundary is checked by
pickling the events, and the lanes are decoded in this process by the very function the
GPU call runs.
"""
from __future__ import annotations

import importlib.util
import pickle

import pytest

from logitspec.core.settings import DecodeSettings
from serve import zerogpu
from serve.race import interleave, model_lanes


def test_only_a_zerogpu_space_takes_the_gpu_path(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert not zerogpu.on_zerogpu()
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert zerogpu.on_zerogpu() == (importlib.util.find_spec("spaces") is not None)
    monkeypatch.setattr(zerogpu.importlib.util, "find_spec", lambda name: None)
    assert not zerogpu.on_zerogpu()  # the flag without the package: as on any CPU Space


def test_spaces_installed_on_a_cpu_machine_changes_nothing(monkeypatch):
    """With `spaces` importable and no ZeroGPU, its decorator hands the function back as it
    was, and the race takes the model thread's lanes."""
    spaces = pytest.importorskip("spaces")
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert spaces.GPU(duration=zerogpu.gpu_seconds)(zerogpu.decode_lanes) is zerogpu.decode_lanes
    calls = []
    monkeypatch.setattr(zerogpu, "model_lanes", lambda *a: calls.append(a) or [])
    zerogpu.race_lanes(None, "bundled", "Hi", ["vanilla"], DecodeSettings(max_new_tokens=4))
    assert len(calls) == 1


def test_the_duration_is_sized_to_the_run():
    short = zerogpu.gpu_seconds("m", "p", ["vanilla", "logitspec"], DecodeSettings(max_new_tokens=16))
    long = zerogpu.gpu_seconds("m", "p", ["vanilla", "pld", "logitspec"], DecodeSettings(max_new_tokens=1024))
    assert zerogpu.MIN_SECONDS <= short < long == zerogpu.MAX_SECONDS


@pytest.mark.slow
@pytest.mark.lossless
def test_lanes_from_one_gpu_call_equal_the_model_threads(bundled):
    settings = DecodeSettings(max_new_tokens=12)  # enough for the lanes to take different numbers of steps
    methods = ["vanilla", "logitspec", "pld", "logitspec-static"]
    prompt = "List the planets of the solar system, one per line."

    def across_processes(*args):  # every event pickled both ways, as ZeroGPU sends it
        return (pickle.loads(pickle.dumps(e)) for e in zerogpu.decode_lanes(*args))

    gpu = zerogpu.gpu_lanes(bundled, "bundled", prompt, methods, settings, decoder=across_processes)
    list(interleave(gpu))
    here = model_lanes(bundled, prompt, methods, settings)
    list(interleave(here))
    got, want = {ln.name: ln.trace for ln in gpu}, {ln.name: ln.trace for ln in here}
    assert set(got) == set(methods)
    for m in methods:
        assert got[m].tokens == want[m].tokens == want["vanilla"].tokens
        assert got[m].prefill_seconds > 0 and [t for st in got[m].steps for t in st.tokens] == got[m].tokens
        if m != "logitspec":  # the cost tree's sizes follow measured times, which differ run to run
            assert got[m].method == want[m].method and got[m].settings == want[m].settings
            assert len(got[m].steps) == len(want[m].steps)
        assert got[m].token_texts  # finished here, with this process's tokenizer
