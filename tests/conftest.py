"""Shared fixtures: the bundled model (loaded once per session) and tiny random models."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from helpers.marks import FOLDER_MARKS
from helpers.paths import TRACE_FIXTURES
from helpers.threads import TEST_THREADS, WORKERS
from helpers.tiny_models import tiny_gpt2 as _build_tiny_gpt2
from helpers.tiny_models import tiny_llama as _build_tiny_llama

MEASURE = "LOGITSPEC_MEASURE_CURVES"
STEADY = "LOGITSPEC_STEADY_CURVES"


def pytest_configure(config):
    if WORKERS > 1:
        torch.set_num_threads(TEST_THREADS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        for mark in FOLDER_MARKS.get(folder, ()):
            item.add_marker(mark)


@pytest.fixture(scope="session", autouse=True)
def no_curve_timing():
    """No c(n) timing anywhere in the run, in this process and every process it starts: cost
    trees start from the default shape and keep it (no pass's time corrects it), so no test
    waits on a timing it does not check, and a tree is sized alike on an idle and a loaded
    machine. tests/unit/test_calibration.py and the correction checks turn each back on."""
    pinned = {MEASURE: "0", STEADY: "1"}
    before = {k: os.environ.get(k) for k in pinned}
    os.environ.update(pinned)
    yield
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def shared_references(tmp_path_factory):
    """On a pytest-xdist worker, vanilla's reference runs (helpers/references.py) go to a folder
    both workers read: each is decoded once a run, by whichever worker asks first."""
    from helpers import references

    if os.environ.get("PYTEST_XDIST_WORKER"):
        references.SHARED["folder"] = tmp_path_factory.getbasetemp().parent / "vanilla-references"
    yield
    references.SHARED.clear()


@pytest.fixture
def curve_corrections(monkeypatch):
    """Passes' times correct the cost curves again, as they do outside the test run."""
    monkeypatch.delenv(STEADY, raising=False)


@pytest.fixture(scope="session")
def bundled_in():
    """The bundled SmolLM2-135M-Instruct on the CPU in a dtype, each dtype loaded once a run."""
    from logitspec.models import load_model

    loaded = {}

    def get(dtype: str = "float32"):
        if dtype not in loaded:
            torch.set_num_threads(TEST_THREADS)
            loaded[dtype] = load_model("bundled", "cpu", dtype)
            if loaded[dtype].half_mode is not None:  # the few-row kernel, whatever the timing at load picked
                from logitspec.runtime.oneshape import apply_half_mode

                loaded[dtype].half_mode = apply_half_mode(loaded[dtype].model, None)
        return loaded[dtype]
    return get


@pytest.fixture(scope="session")
def bundled(bundled_in):
    """The bundled SmolLM2-135M-Instruct, float32, loaded once for the session."""
    return bundled_in("float32")


@pytest.fixture(scope="session")
def tiny_llama():
    """A seeded 2-layer Llama (rotary positions), vocab 128, float32, eval mode."""
    return _build_tiny_llama(seed=0)


@pytest.fixture(scope="session")
def tiny_gpt2():
    """A seeded 2-layer GPT-2 (learned absolute positions), vocab 128, float32, eval mode."""
    return _build_tiny_gpt2(seed=0)


@pytest.fixture
def one_thread():
    """One torch thread for the test: tiny models are all per-op overhead, and on a busy
    machine a second thread spin-waiting costs several times the work itself."""
    from logitspec.runtime.tuner import reset_thread_tuner

    before = torch.get_num_threads()
    reset_thread_tuner(1, fixed=True)  # and no probe of another count, whatever an earlier test left
    yield
    reset_thread_tuner(before)


@pytest.fixture(scope="session")
def fixture_traces() -> list[Path]:
    """The real traces recorded on the bundled model."""
    paths = list(TRACE_FIXTURES.values())
    assert all(p.is_file() for p in paths), f"a trace fixture is missing: {paths}"
    return paths


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """app.py served on a free loopback port, shared by the client and browser tests (its
    model loads once); stopped at the end of the session."""
    from helpers.app_server import start_app, stop_app

    proc, url = start_app(tmp_path_factory.mktemp("app") / "app.log")
    yield url
    stop_app(proc)
