"""The intra-op thread count, chosen by timing real forward passes as the machine's load changes.

One OpenMP thread per core is fastest on an idle machine and far slower on a busy one: with
a second process spinning one of two cores, a one-token pass of the bundled model took
430-470 ms on two threads against 54 ms on one, because every one of a pass's parallel
regions waits for the thread that shares its core (docs/performance.md, "Threads on a busy
machine"). So the count is measured, not assumed: now and then one pass runs on a neighbouring
count (a probe) and, when it is clearly faster than the same-sized passes just before it,
that count takes over. Probes that lose space out the next ones.

The count is the same for every decoder (all passes of a process's model thread share one
tuner), so a race still compares decoders. Tokens do not depend on it: the kernels split
output features, not sums, between threads.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

PROBE_SECONDS = 2.0  # seconds of forward passes between probes of another count (idle time does not count)
PROBE_BACKOFF = 2  # each probe that lost doubles the wait, up to 2**this times
WIN = 0.85  # a probe must take at most this share of the reference to take over
REFERENCE_SECONDS = 3.0  # same-sized passes this recent are the probe's reference
KEPT = 5  # passes kept per size at the current count


@dataclass
class ThreadTuner:
    """Chooses the thread count for each pass of one calling thread (torch's count is per thread)."""

    most: int  # the configured count: never more threads than this
    now: int = 0  # the count passes run at
    fixed: bool = False  # a count the user set: never probed
    clock: Callable[[], float] = time.monotonic
    recent: dict[int, deque] = field(default_factory=dict)  # rows -> (at, seconds) at `now`
    decoded: float = 0.0  # seconds of forward passes heard so far
    next_probe: float = -1.0  # in `decoded` seconds; PROBE_SECONDS unless given
    lost: int = 0  # probes lost since the count last changed
    probing: int | None = None  # the count this pass runs at when it is a probe
    side: int = 0  # which neighbour the next probe tries
    passes: dict[int, int] = field(default_factory=dict)  # passes run per count (probes included)
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
            self.recent.clear()

    def _candidates(self) -> list[int]:
        return [c for c in (self.now - 1, self.now + 1) if 1 <= c <= self.most]

    def before(self, rows: int) -> int:
        """Set the count for a pass of `rows` tree tokens and return it."""
        self._adopt()
        count = self.now
        near = self.recent.get(rows)
        at = self.clock()
        if (not self.fixed and self.decoded >= self.next_probe and near and at - near[-1][0] <= REFERENCE_SECONDS
                and (options := self._candidates())):
            count = self.probing = options[self.side % len(options)]
            self.side += 1
        self._use(count)
        return count

    def after(self, rows: int, seconds: float) -> bool:
        """Hear how long the pass took; True when it was a probe (its time is not the run's count)."""
        at = self.clock()
        count, self.probing = self.probing, None
        self.decoded += seconds
        self.passes[count or self.now] = self.passes.get(count or self.now, 0) + 1
        if count is None:
            self.recent.setdefault(rows, deque(maxlen=KEPT)).append((at, seconds))
            return False
        ref = [s for t, s in self.recent.get(rows, ()) if at - t <= REFERENCE_SECONDS]
        if ref and seconds <= WIN * statistics.median(ref):
            self.now, self.lost, self.switches = count, 0, self.switches + 1
            self.recent.clear()
        else:
            self.lost += 1
            self._use(self.now)
        self.next_probe = self.decoded + PROBE_SECONDS * 2 ** min(self.lost, PROBE_BACKOFF)
        return True

    def settle(self, one_pass, repeats: int = 3) -> int:
        """Time `one_pass()` on every count from `most` down to half of it, interleaved, and
        run at the fastest: for a measurement that must not start on a count the load made slow."""
        self._adopt()
        if self.fixed:
            return self.now
        counts = list(range(self.most, max(1, self.most // 2) - 1, -1))
        times: dict[int, list[float]] = {c: [] for c in counts}
        for r in range(repeats + 1):  # round 0 warms each count up
            for c in counts:
                self._use(c)
                t = time.perf_counter()
                one_pass()
                if r:
                    times[c].append(time.perf_counter() - t)
        best = min(counts, key=lambda c: statistics.median(times[c]))
        if best != self.now:
            self.now, self.switches = best, self.switches + 1
            self.recent.clear()
        self._use(self.now)
        self.next_probe = self.decoded + PROBE_SECONDS  # just measured: no probe straight after
        return self.now


_local = threading.local()


def thread_tuner() -> ThreadTuner:
    """The calling thread's tuner, made on first use from its configured count. A count set
    in LOGITSPEC_THREADS is kept fixed, as is any count when LOGITSPEC_TUNE_THREADS=0."""
    tuner = getattr(_local, "tuner", None)
    if tuner is None:
        fixed = bool(int(os.environ.get("LOGITSPEC_THREADS", "0") or 0)) or \
            os.environ.get("LOGITSPEC_TUNE_THREADS", "1") == "0"
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
