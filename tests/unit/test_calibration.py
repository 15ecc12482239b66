"""c(n) without measuring in front of a visitor: stored curves, the default shape, and the
measurement done in chunks while the model thread is idle."""
from __future__ import annotations

import json
import threading
import time

import pytest

from logitspec.sizing import calibration, costcurve
from logitspec.sizing.curve import DEFAULT_MS, CostCurve
from helpers.tiny_models import tiny_llama

pytestmark = pytest.mark.usefixtures("one_thread", "curve_timing")


@pytest.fixture
def curve_timing(monkeypatch):
    """These tests are about measuring c(n): the run's switch that turns it off is undone here."""
    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "1")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def measured(monkeypatch):
    """Counts measurements in front of decoding (cost_curve_for's fallback)."""
    calls = []
    real = costcurve.measure_cost_curve

    def counting(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(costcurve, "measure_cost_curve", counting)
    return calls


def test_a_stored_curve_comes_back_only_for_its_own_key(cache_dir):
    model = tiny_llama(seed=1)
    key = calibration.curve_key(model, 512, 8)
    curve = CostCurve([1, 2, 4, 8], [0.01, 0.011, 0.013, 0.02], 512, "cpu", "float32", 2)
    path = calibration.save_curve(key, curve)
    assert path.parent.parent == cache_dir and [p.name for p in path.parent.iterdir()] == [path.name]
    back = calibration.load_curve(key)
    assert back.sizes == curve.sizes and back.seconds == curve.seconds and back.measurements == 2
    assert calibration.load_curve({**key, "threads": key["threads"] + 1}) is None  # another machine setting
    assert calibration.load_curve({**key, "kernel": "other"}) is None


def test_a_curve_timed_on_another_build_of_the_kernel_is_not_used(cache_dir, monkeypatch, tmp_path):
    from logitspec.runtime import fewrows

    model = tiny_llama(seed=1)
    monkeypatch.setattr(fewrows, "kernel_variant", lambda: ("avx2", "built"))
    key = calibration.curve_key(model, 512, 8)
    calibration.save_curve(key, CostCurve([1, 8], [0.01, 0.02], 512, "cpu", "float32"))
    changed = tmp_path / "few_linear.cpp"
    changed.write_text(fewrows.SOURCE.read_text() + "\n// another kernel\n")
    monkeypatch.setattr(fewrows, "SOURCE", changed)
    rebuilt = calibration.curve_key(model, 512, 8)
    assert rebuilt["kernel"] == key["kernel"] and calibration.load_curve(rebuilt) is None
    assert calibration.load_curve(key) is not None


@pytest.mark.parametrize("damage", ["{not json", '{"format": "logitspec-cost-curve/1"}', "truncated"])
def test_a_damaged_stored_curve_is_not_trusted(cache_dir, damage):
    model = tiny_llama(seed=1)
    key = calibration.curve_key(model, 512, 8)
    path = calibration.save_curve(key, CostCurve([1, 8], [0.01, 0.02], 512, "cpu", "float32"))
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    else:
        path.write_text(damage)
    assert calibration.load_curve(key) is None
    data = json.loads(text)
    data["curve"]["seconds"] = [0.01, -1.0]  # nonsense times
    path.write_text(json.dumps(data))
    assert calibration.load_curve(key) is None


def test_the_app_starts_on_the_default_shape_without_measuring(cache_dir, measured):
    from logitspec.core.settings import DecodeSettings
    from logitspec.decoders import decode

    model = tiny_llama(seed=2)
    starts = calibration.start_curves(model, max_context=1024, capacity=8)
    assert [s.stored for s in starts] == [False]
    curve = costcurve.cost_curve_for(model, 100, 8)
    assert curve(4) / curve(1) == pytest.approx(DEFAULT_MS[3] / DEFAULT_MS[0], rel=1e-6)
    prompt = [5, 17, 99, 3, 5, 17, 42, 8] * 4
    steps = list(decode(model, prompt, "logitspec", DecodeSettings(max_new_tokens=12, tree="cost", capacity=8)))
    assert steps and not measured and sum(s.calibration_seconds for s in steps) == 0


class FakeRunner:
    """A model thread whose idleness the test sets; records when chunks ran."""

    def __init__(self) -> None:
        self.idle = 0.0
        self.chunks_while_busy = 0
        self.chunks = 0

    def idle_seconds(self) -> float:
        return self.idle

    def background(self, fn):
        self.chunks += 1
        self.chunks_while_busy += self.idle < 1.0
        return fn()


def test_the_background_measures_only_while_idle_then_installs_and_stores(cache_dir, measured):
    model = tiny_llama(seed=4)
    starts = calibration.start_curves(model, max_context=1024, capacity=8)
    runner = FakeRunner()
    job = calibration.BackgroundCalibration(model, starts, runner=runner, idle_seconds=1.0)
    job.start()
    time.sleep(0.3)
    assert runner.chunks == 0 and job.is_alive()  # a race is running: nothing measured
    runner.idle = 5.0
    job.join(30)
    assert not job.is_alive() and runner.chunks_while_busy == 0 and runner.chunks > 10
    assert len(job.measured) == 1 and not measured
    live = costcurve.live_cost(model, 512)
    assert live.base is job.measured[0]  # installed for decoding
    again = calibration.start_curves(model, max_context=1024, capacity=8)  # the next start
    assert [s.stored for s in again] == [True] and again[0].curve.seconds == job.measured[0].seconds


def test_a_stopped_background_measurement_installs_nothing(cache_dir):
    model = tiny_llama(seed=5)
    starts = calibration.start_curves(model, max_context=1024, capacity=8)
    job = calibration.BackgroundCalibration(model, starts, runner=FakeRunner())
    job.start()
    job.stop_event.set()
    job.join(10)
    assert not job.is_alive() and job.measured == []
    assert calibration.load_curve(starts[0].key) is None


class ClosedRunner(FakeRunner):
    """A model thread whose pool refuses work, as a process's pools do once it is exiting."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.idle, self.error = 5.0, error

    def background(self, fn):
        raise RuntimeError(self.error)


def test_a_background_measurement_ends_quietly_when_the_process_exits(cache_dir):
    """A script's last lines can run while the measuring thread asks for the model: it stops,
    installing nothing, where it printed a traceback; any other error still surfaces."""
    model = tiny_llama(seed=6)
    starts = calibration.start_curves(model, max_context=1024, capacity=8)
    job = calibration.BackgroundCalibration(model, starts, runner=ClosedRunner(
        "cannot schedule new futures after interpreter shutdown"), idle_seconds=0.0)
    job.run()  # in this thread: returns, raises nothing
    assert job.measured == [] and calibration.load_curve(starts[0].key) is None
    job = calibration.BackgroundCalibration(model, starts, runner=ClosedRunner("a real fault"), idle_seconds=0.0)
    with pytest.raises(RuntimeError, match="a real fault"):
        job.run()


def test_model_thread_idleness_ignores_background_work():
    from logitspec.runtime.threads import ModelThread

    mt = ModelThread()
    mt.call(lambda: None)
    gate, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        gate.wait(5)

    t = threading.Thread(target=mt.call, args=(slow,))
    t.start()
    started.wait(5)
    assert mt.idle_seconds() == 0.0  # foreground work pending
    gate.set()
    t.join(5)
    time.sleep(0.05)
    before = mt.idle_seconds()
    mt.background(lambda: time.sleep(0.05))
    assert mt.idle_seconds() > before  # the background call did not reset it


def test_warm_up_at_load_measures_nothing_in_front_and_leaves_the_rest_to_the_background(cache_dir, measured):
    from types import SimpleNamespace

    from serve.model_cache import warm_cost_curves

    model = tiny_llama(seed=6)
    job = warm_cost_curves(SimpleNamespace(model=model), capacity=8)
    try:
        assert job is not None and not measured
        assert costcurve.live_cost(model, 512).base.measurements == 0  # the default shape, for now
    finally:
        job.stop_event.set()
        job.join(10)


def test_no_background_measuring_when_the_environment_says_so(cache_dir, measured, monkeypatch):
    from types import SimpleNamespace

    from serve.model_cache import warm_cost_curves

    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "0")
    model = tiny_llama(seed=7)
    assert warm_cost_curves(SimpleNamespace(model=model), capacity=8) is None and not measured
    assert costcurve.live_cost(model, 512).base.measurements == 0  # the default shape serves


def test_decoding_never_times_c_n_when_the_environment_says_so(measured, monkeypatch):
    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "0")
    model = tiny_llama(seed=8)
    curve = costcurve.cost_curve_for(model, 40, 16)
    assert not measured and curve.measurements == 0 and curve.sizes[-1] >= 16  # the default shape
    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "1")
    costcurve.cost_curve_for(tiny_llama(seed=9), 40, 16)
    assert measured  # and with it on, the first need measures


def test_a_run_that_times_nothing_starts_from_the_default_shape_though_a_curve_was_stored(cache_dir, monkeypatch):
    """A curve an earlier start timed on this machine (`make demo`) would size the test run's trees by
    its CPU: where nothing may be timed, nothing timed is loaded either."""
    model = tiny_llama(seed=10)
    key = calibration.curve_key(model, 512, 8)
    calibration.save_curve(key, CostCurve([1, 8], [0.01, 0.5], 512, "cpu", "float32", 3))
    assert [s.stored for s in calibration.start_curves(model, max_context=100, capacity=8)] == [True]
    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "0")
    starts = calibration.start_curves(tiny_llama(seed=10), max_context=100, capacity=8)
    assert [s.stored for s in starts] == [False] and starts[0].curve.measurements == 0
    assert starts[0].curve(8) / starts[0].curve(1) == pytest.approx(DEFAULT_MS[7] / DEFAULT_MS[0])
