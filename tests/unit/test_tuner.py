"""The thread tuner: a probed count takes over only when clearly faster, and tokens never change."""
from __future__ import annotations

import time

import pytest
import torch

from logitspec.runtime.tuner import PROBE_SECONDS, REFERENCE_SECONDS, ThreadTuner


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def run_passes(tuner: ThreadTuner, clock: Clock, cost: dict[int, float], passes: int, rows: int = 1,
               gap: float = 0.1) -> list[int]:
    """Passes of `rows` tokens, each taking cost[threads] seconds; the count each ran on."""
    counts = []
    for _ in range(passes):
        count = tuner.before(rows)
        assert torch.get_num_threads() == count
        clock.now += gap
        tuner.after(rows, cost[count])
        counts.append(count)
    return counts


def test_a_busy_core_moves_passes_to_fewer_threads_and_back_when_it_is_free(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, clock=clock)
    busy = {2: 0.45, 1: 0.054}  # a second process spins one of two cores
    clock.now = 600.0  # idle time before the first pass does not count towards a probe
    counts = run_passes(tuner, clock, busy, 60)
    first_probe = counts.index(1)
    assert first_probe * busy[2] >= PROBE_SECONDS  # only after that much decoding
    assert tuner.now == 1 and counts[first_probe:].count(2) <= 2  # the probe won; probes back to 2 lose
    idle = {2: 0.035, 1: 0.055}
    counts = run_passes(tuner, clock, idle, 200)
    assert tuner.now == 2 and counts[-20:] == [2] * 20
    assert torch.get_num_threads() == 2


def test_a_probe_that_is_not_clearly_faster_changes_nothing_and_waits_longer(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, clock=clock)
    close = {2: 0.050, 1: 0.047}  # within the margin: not worth a change
    counts = run_passes(tuner, clock, close, 1000)
    probes = [i for i, c in enumerate(counts) if c == 1]
    assert tuner.now == 2 and tuner.switches == 0 and len(probes) >= 3
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert gaps[1] > 1.5 * gaps[0]  # lost probes space out the next ones,
    assert abs(gaps[-1] - gaps[-2]) <= 2  # up to a cap, so a load that goes away is still noticed
    assert torch.get_num_threads() == 2


def test_probes_compare_only_with_recent_passes_of_the_same_size(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, clock=clock)
    run_passes(tuner, clock, {2: 0.4, 1: 0.05}, 5, rows=8)
    clock.now += REFERENCE_SECONDS + PROBE_SECONDS
    # No pass of 3 rows to compare with, nor any recent pass at all: no probe.
    assert tuner.before(3) == 2
    tuner.after(3, 0.4)
    assert tuner.before(8) == 2


def test_a_count_the_user_fixed_is_never_probed(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, fixed=True, clock=clock)
    assert set(run_passes(tuner, clock, {2: 0.45, 1: 0.05}, 100)) == {2}
    assert tuner.settle(lambda: None) == 2


def test_a_count_set_from_outside_is_adopted(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, clock=clock)
    torch.set_num_threads(1)  # as a test fixture or configure_threads would
    assert set(run_passes(tuner, clock, {1: 0.05}, 50)) == {1}
    assert tuner.most == 1


def test_no_probe_straight_after_settling(two_threads):
    clock = Clock()
    tuner = ThreadTuner(most=2, clock=clock)
    run_passes(tuner, clock, {2: 0.05, 1: 0.08}, 30)  # 1.5 s of decoding
    tuner.settle(lambda: time.sleep({2: 0.002, 1: 0.02}[torch.get_num_threads()]))
    counts = run_passes(tuner, clock, {2: 0.05, 1: 0.08}, 20)  # 1 s more
    assert counts == [2] * 20


def test_settle_runs_at_the_fastest_count(two_threads):
    tuner = ThreadTuner(most=2)
    cost = {2: 0.02, 1: 0.002}  # a busy core: one thread is faster

    def one_pass():
        time.sleep(cost[torch.get_num_threads()])

    assert tuner.settle(one_pass) == 1 and torch.get_num_threads() == 1
    cost.update({2: 0.002, 1: 0.02})  # the load is gone
    assert tuner.settle(one_pass) == 2 and torch.get_num_threads() == 2
