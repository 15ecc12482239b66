"""The intra-op thread count, chosen by timing forward passes as the machine's load changes.

One OpenMP thread per core is fastest on an idle machine and several times slower when
another process takes a core, since every parallel region of a pass waits for the thread
that shares it (figures: docs/performance.md, "Threads on a busy machine"). So the count is measured, not assumed: after a few seconds of forward passes,
before the next step, a one-token pass runs on the current count and one on a neighbouring
count, back to back (a probe), and the neighbour takes over when it is clearly faster in
that pair and in a second one. Probes that lose space out the next ones.

A probe is no decoder's work: its seconds are kept apart from every step's (like a cost
curve's measuring), so a race's lanes and the bench's methods are timed on their own passes
only. The count is the same for every decoder (a process's model thread has one tuner), and
tokens do not depend on it: the kernels split output features, not sums, between threads.
"""
from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .. import environment

PROBE_SECONDS = 2.0  # seconds of forward passes between probes (idle time does not count)
PROBE_BACKOFF = 2  # each probe that lost doubles the wait, up to 2**this times
WIN = 0.85  # the neighbour must take at most this share of the current count's time to take over


@dataclass
class ThreadTuner:
    """Chooses the thread count for the passes of one calling thread (torch's count is per thread)."""

    most: int  # the configured count: never more threads than this
    now: int = 0  # the count passes run at
    fixed: bool = False  # a count the user set: never probed
    decoded: float = 0.0  # seconds of forward passes heard so far
    next_probe: float = -1.0  # in `decoded` seconds; PROBE_SECONDS unless given
    lost: int = 0  # probes lost since the count last changed
    side: int = 0  # which neighbour the next probe tries
    passes: dict[int, int] = field(default_factory=dict)  # forward passes heard per count
    probes: int = 0
    switches: int = 0
    _set: int = 0  # the count this tuner last gave torch

    def __post_init__(self) -> None:
        self.now = self.now or self.most
        self.next_probe = PROBE_SECONDS if self.next_probe < 0 else self.next_probe
        self._set = torch.get_num_threads()

    def _use(self, count: int) -> None:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)
        self._set = count

    def _adopt(self) -> None:
        """A count set from outside since (configure_threads, a test) becomes the most and the current."""
        current = torch.get_num_threads()
        if current != self._set:
            self.most = self.now = self._set = current

    def _neighbours(self) -> list[int]:
        return [c for c in (self.now - 1, self.now + 1) if 1 <= c <= self.most]

    def between(self, one_pass: Callable[[], object]) -> float:
        """Before a step: set the count for its pass, probing first when one is due (see the
        module). Returns the seconds the probe took, 0.0 when none ran."""
        self._adopt()
        options = self._neighbours()
        if self.fixed or self.decoded < self.next_probe or not options:
            self._use(self.now)
            return 0.0
        t = time.perf_counter()
        other = options[self.side % len(options)]
        self.side += 1
        self.probes += 1
        # A pair that looks like a win is timed again: under load a lone pass can be lucky,
        # and a wrong move costs seconds of slow passes before the next probe moves back.
        if self._wins(other, one_pass) and self._wins(other, one_pass):
            self.now, self.lost, self.switches = other, 0, self.switches + 1
        else:
            self.lost += 1
        self.next_probe = self.decoded + PROBE_SECONDS * 2 ** min(self.lost, PROBE_BACKOFF)
        self._use(self.now)
        return time.perf_counter() - t

    def _wins(self, other: int, one_pass: Callable[[], object]) -> bool:
        """One pass on the current count, then one on `other`: whether `other` was clearly faster."""
        mine = self._timed(self.now, one_pass)
        return self._timed(other, one_pass) <= WIN * mine

    def _timed(self, count: int, one_pass: Callable[[], object]) -> float:
        self._use(count)
        t = time.perf_counter()
        one_pass()
        return time.perf_counter() - t

    def heard(self, seconds: float) -> None:
        """A forward pass on the current count took `seconds`."""
        self.decoded += seconds
        self.passes[self.now] = self.passes.get(self.now, 0) + 1

    def settle(self, one_pass: Callable[[], object], repeats: int = 3) -> int:
        """Time `one_pass()` on every count from `most` down to half of it, interleaved, and
        run at the fastest: for a measurement that must not start on a count the load made slow."""
        self._adopt()
        if self.fixed:
            return self.now
        counts = list(range(self.most, max(1, self.most // 2) - 1, -1))
        times: dict[int, list[float]] = {c: [] for c in counts}
        for r in range(repeats + 1):  # round 0 warms each count up
            for c in counts:
                seconds = self._timed(c, one_pass)
                if r:
                    times[c].append(seconds)
        best = min(counts, key=lambda c: statistics.median(times[c]))
        if best != self.now:
            self.now, self.switches = best, self.switches + 1
        self._use(self.now)
        self.next_probe = self.decoded + PROBE_SECONDS  # just measured: no probe straight after
        return self.now


_local = threading.local()


def env_threads() -> int:
    """The count LOGITSPEC_THREADS fixes, 0 when it fixes none."""
    return environment.THREADS.read()


def thread_tuner() -> ThreadTuner:
    """The calling thread's tuner, made on first use from its configured count. A count set
    in LOGITSPEC_THREADS is kept fixed, as is any count when LOGITSPEC_TUNE_THREADS=0."""
    tuner = getattr(_local, "tuner", None)
    if tuner is None:
        fixed = bool(env_threads()) or not environment.TUNE_THREADS.read()
        tuner = _local.tuner = ThreadTuner(most=torch.get_num_threads(), fixed=fixed)
    return tuner


def reset_thread_tuner(most: int | None = None, fixed: bool | None = None) -> ThreadTuner:
    """A fresh tuner for the calling thread (after `configure_threads`, or for a bench phase)."""
    if most is not None:
        torch.set_num_threads(most)
    _local.tuner = None
    tuner = thread_tuner()
    if fixed is not None:
        tuner.fixed = fixed
    return tuner
