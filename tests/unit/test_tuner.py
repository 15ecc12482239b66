"""The thread tuner: a probed count takes over only when clearly faster, and tokens never change."""
from __future__ import annotations

import pytest
import torch

from logitspec.runtime.tuner import PROBE_SECONDS, ThreadTuner


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


class Machine:
    """Passes whose seconds depend on the thread count they run on (no real work, no sleeping)."""

    def __init__(self, cost: dict[int, float]) -> None:
        self.cost = cost
        self.probe_passes: list[int] = []

    def one_pass(self) -> None:
        self.probe_passes.append(torch.get_num_threads())


def run_steps(tuner: ThreadTuner, machine: Machine, steps: int, monkeypatch) -> list[int]:
    """Steps as decoding runs them: `between` (with a probe when due), then a pass heard at
    the machine's cost. Probe passes are timed by a clock that reads the machine's cost."""
    from logitspec.runtime import tuner as tuning

    clock = {"t": 0.0}

    def perf_counter() -> float:
        return clock["t"]

    def one_pass() -> None:
        machine.one_pass()
        clock["t"] += machine.cost[torch.get_num_threads()]

    monkeypatch.setattr(tuning.time, "perf_counter", perf_counter)
    counts = []
    for _ in range(steps):
        tuner.between(one_pass)
        count = torch.get_num_threads()
        assert count == tuner.now
        tuner.heard(machine.cost[count])
        counts.append(count)
    monkeypatch.undo()
    return counts


def test_a_busy_core_moves_passes_to_fewer_threads_and_back_when_it_is_free(two_threads, monkeypatch):
    tuner = ThreadTuner(most=2)
    busy = Machine({2: 0.45, 1: 0.054})  # a second process spins one of two cores
    counts = run_steps(tuner, busy, 60, monkeypatch)
    first = counts.index(1)
    assert first * 0.45 >= PROBE_SECONDS  # only after that much decoding
    assert set(counts[first:]) == {1} and tuner.now == 1
    idle = Machine({2: 0.035, 1: 0.055})
    counts = run_steps(tuner, idle, 400, monkeypatch)
    assert tuner.now == 2 and counts[-20:] == [2] * 20
    assert torch.get_num_threads() == 2


def test_a_probe_that_is_not_clearly_faster_changes_nothing_and_waits_longer(two_threads, monkeypatch):
    tuner = ThreadTuner(most=2)
    close = Machine({2: 0.050, 1: 0.047})  # within the margin: not worth a change
    counts = run_steps(tuner, close, 1000, monkeypatch)
    assert set(counts) == {2} and tuner.switches == 0 and tuner.probes >= 3
    # each probe: the current count, then the neighbour, back to back (no second pair: no win)
    assert close.probe_passes[:4] == [2, 1, 2, 1] and len(close.probe_passes) == 2 * tuner.probes
    assert tuner.next_probe - tuner.decoded > 2 * PROBE_SECONDS  # lost probes space out the next ones
    assert tuner.probes < 1000 * 0.05 / PROBE_SECONDS / 2


def test_a_lucky_pass_on_the_other_count_is_not_enough_to_move(two_threads, monkeypatch):
    from logitspec.runtime import tuner as tuning

    tuner = ThreadTuner(most=2, now=1)
    tuner.heard(PROBE_SECONDS)  # a probe is due
    clock = {"t": 0.0}
    monkeypatch.setattr(tuning.time, "perf_counter", lambda: clock["t"])
    two = iter([0.03, 0.45])  # a busy core: two threads are slow, once in a while not

    def one_pass() -> None:
        clock["t"] += next(two) if torch.get_num_threads() == 2 else 0.055

    spent = tuner.between(one_pass)
    assert tuner.now == 1 and tuner.switches == 0
    assert spent == pytest.approx(0.055 + 0.03 + 0.055 + 0.45)  # the win was timed again, and failed


def test_a_probe_costs_no_step_its_seconds_are_returned_apart(two_threads, monkeypatch):
    from logitspec.runtime import tuner as tuning

    tuner = ThreadTuner(most=2)
    tuner.heard(PROBE_SECONDS)  # a probe is due
    clock = {"t": 0.0}
    monkeypatch.setattr(tuning.time, "perf_counter", lambda: clock["t"])

    def one_pass() -> None:
        clock["t"] += {2: 0.4, 1: 0.05}[torch.get_num_threads()]

    assert tuner.between(one_pass) == pytest.approx(2 * 0.45)  # a win is timed twice
    assert tuner.now == 1 and tuner.passes == {2: 1}  # probe passes are not decoding's passes
    assert tuner.between(one_pass) == 0.0  # the next probe waits for more decoding


def test_a_count_the_user_fixed_is_never_probed(two_threads, monkeypatch):
    tuner = ThreadTuner(most=2, fixed=True)
    machine = Machine({2: 0.45, 1: 0.05})
    assert set(run_steps(tuner, machine, 100, monkeypatch)) == {2} and machine.probe_passes == []
    assert tuner.settle(machine.one_pass) == 2


def test_a_count_set_from_outside_is_adopted(two_threads, monkeypatch):
    tuner = ThreadTuner(most=2)
    torch.set_num_threads(1)  # as configure_threads would
    assert set(run_steps(tuner, Machine({1: 0.05}), 100, monkeypatch)) == {1}
    assert tuner.most == 1


def test_settle_runs_at_the_fastest_count_and_the_next_probe_waits(two_threads, monkeypatch):
    import time

    tuner = ThreadTuner(most=2)
    cost = {2: 0.02, 1: 0.002}  # a busy core: one thread is faster

    def one_pass():
        time.sleep(cost[torch.get_num_threads()])

    tuner.heard(10.0)  # a probe is long due
    assert tuner.settle(one_pass) == 1 and torch.get_num_threads() == 1
    assert tuner.next_probe == tuner.decoded + PROBE_SECONDS  # it has just measured
    cost.update({2: 0.002, 1: 0.02})  # the load is gone
    assert tuner.settle(one_pass) == 2 and torch.get_num_threads() == 2
