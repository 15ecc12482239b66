"""c(n), the forward cost of n tree tokens for this model, device and dtype.

It is held as a measured shape c(n)/c(1), corrected by real passes of different sizes,
times the load level c(1) that every step re-estimates (`LiveCost`), so it stays right when
other work comes and goes on the machine. The cost-aware tree (`logitspec.sizing.costtree`) reads it;
one curve's record and the default shape are in `logitspec.sizing.curve`.
"""
from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from .. import environment
from ..core.profile import profile_of
from ..runtime import measuring_allowed
from ..runtime.tuner import thread_tuner
from ..core.trace import TreeNode
from .curve import CostCurve, default_curve, interp_sorted

if TYPE_CHECKING:
    from transformers import Cache, PreTrainedModel

# Every size up to the few-row kernel's 16 rows: its cost steps by row blocks, and a line
# between 8 and 16 overpriced 9-12 tokens by up to 15% (docs/performance.md).
SIZES = (*range(1, 17), 17, 24, 32, 48, 64, 128, 256)


# ---------------------------------------------------------------- forward cost c(n)
class CurveMeasurement:
    """Times tree forward passes of n = 1..max_n tokens over a cache of `context_len` tokens,
    one pass per `step()`, so the work can be cut into chunks that fit between other work.

    Uses the same call path as verification (a 4D mask and position ids, or the plain
    causal call for a single token) so c(n) is what a step really costs. Sizes are timed
    in interleaved rounds and the fastest round kept: load from other work on a shared
    machine only ever adds time, and a median still bent the curve when a burst of it
    lasted several rounds.
    """

    def __init__(self, model: PreTrainedModel, context_len: int = 256, max_n: int = 64,
                 rounds: int = 4) -> None:
        self.model, self.context_len, self.max_n, self.rounds = model, context_len, max_n, rounds
        self.sizes = sorted({n for n in SIZES if n <= max_n} | {max_n})
        self.runs: dict[int, list[float]] = {n: [] for n in self.sizes}
        self._todo = [(r, n) for r in range(rounds + 1) for n in self.sizes]  # round 0 warms up
        self._cache: Cache | None = None  # holds a random context of `context_len` tokens
        self.threads: int | None = None  # the count it is timed on, settled before the first pass

    @property
    def done(self) -> bool:
        return not self._todo

    @torch.inference_mode()
    def _prepare(self) -> None:
        from ..runtime.kvcache import new_cache
        from ..core.verify import head_batch_rows

        model, vocab = self.model, int(self.model.config.vocab_size)
        g = torch.Generator().manual_seed(0)
        ctx = torch.randint(0, vocab, (1, self.context_len), generator=g).to(model.device)  # [1, context_len]
        self._cache = new_cache(model.config, self.context_len + self.max_n)
        model(input_ids=ctx, cache=self._cache, use_cache=True)
        toks = torch.randint(0, vocab, (self.max_n,), generator=g).tolist()
        self._trees = {}
        for n in self.sizes:
            # A bushy tree with the shape of a real one: a chain plus siblings under the root.
            nodes = [TreeNode(id=0, token=toks[0], parent=-1, depth=0, origin="root")]
            for i in range(1, n):
                parent = i - 1 if i % 2 else 0
                nodes.append(TreeNode(id=i, token=toks[i], parent=parent, depth=nodes[parent].depth + 1, origin="g2"))
            self._trees[n] = nodes
        self._head_rows = head_batch_rows(model)
        # The curve is timed on the count decoding will use under the load there is now.
        one = self._trees[1]
        tuner = thread_tuner()
        self.threads = tuner.settle(lambda: self._time(1, one)) if model.device.type == "cpu" else tuner.now

    @torch.inference_mode()
    def step(self) -> bool:
        """Do the next chunk (the prefill, or one timed pass); True once every pass is timed."""
        if self._cache is None:
            self._prepare()
            return self.done
        r, n = self._todo.pop(0)
        seconds = self._time(n, self._trees[n])
        if r:
            self.runs[n].append(seconds)
        if self.done:
            self._cache = self._trees = None  # free the cache as soon as the curve is known
        return self.done

    def _time(self, n: int, tree: list[TreeNode]) -> float:
        """Seconds of one verification pass of `tree` (n tokens) over the context; the cache is left as it was."""
        from ..core.verify import trial_pass

        return trial_pass(self.model, self._cache, tree, self.context_len, self._head_rows)

    def result(self) -> CostCurve:
        secs = [min(self.runs[n]) for n in self.sizes]
        # A forward pass never gets cheaper with more tokens; noise can say otherwise.
        secs = isotonic(secs, [1.0] * len(secs))
        return CostCurve(self.sizes, secs, self.context_len, str(self.model.device),
                         str(self.model.dtype).replace("torch.", ""), threads=self.threads)


def measure_cost_curve(model: PreTrainedModel, context_len: int = 256, max_n: int = 64,
                       rounds: int = 4) -> CostCurve:
    """The whole curve at once (see `CurveMeasurement`)."""
    m = CurveMeasurement(model, context_len, max_n, rounds)
    while not m.step():
        pass
    return m.result()


# ---------------------------------------------------------------- c(n) under a changing load
def isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The weighted least-squares non-decreasing fit of `values` (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([float(v), w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            b = blocks[-1]
            total = b[1] + w2
            if b[1] != float("inf"):  # a block of infinite weight (a fixed point) keeps its value
                b[0] = v2 if w2 == float("inf") else (b[0] * b[1] + v2 * w2) / total
            b[1], b[2] = total, b[2] + c2
    return [v for v, _, c in blocks for _ in range(int(c))]


PAIR_WINDOW = 3.0  # seconds within which two passes are taken to share the machine's load
PAIR_RECENT = 6  # passes remembered for pairing
OBSERVED_KEPT = 12  # ratios kept per size: a recent window
SHAPE_PRIOR = 2.0  # weight of the measured shape against real ratios, in observations
LEVEL_RATE = 0.2  # weight of each step in the load level's moving average
PROBE_EVERY = 8  # steps of trees that stayed the same size before a probe
PROBE_SIZES = (4, 8, 6, 16)  # larger sizes probed in turn, so the shape is learnt at a few points
PROBE_BACKOFF = 3  # each probe that did not grow the trees doubles the interval, up to 2**this
SMALL_TREE = 2  # trees of one and two tokens count as one size (they alternate on small gains)
# A pass this many times what the curve predicts is a stall (a collection, another process's
# burst), not the shape: alone it teaches nothing, but two in a row are a new load.
STALL = 2.5


@dataclass
class Pass:
    """One verification pass as decoding saw it."""

    at: float  # time.monotonic() when it was observed
    n: int
    seconds: float


@dataclass
class LiveCost:
    """c(n) for one model and context bucket: the measured shape c(n)/c(1), corrected by
    time-local ratios of real passes, times the load level (c(1) now).

    Load from other work scales c(1) and c(n) roughly alike, hence a shape times a level
    that every step re-estimates. A curve measured while the load came and went can still
    have a wrong shape; real passes of different sizes close in time share the load, so
    their ratio corrects it. Trees that stay at one size never show a larger pass, so now
    and then a step verifies a larger tree to ask (a probe).
    """

    base: CostCurve
    level: float
    observed: dict[int, list[float]] = field(default_factory=dict)  # n -> real c(n)/c(1)
    recent: deque = field(default_factory=lambda: deque(maxlen=PAIR_RECENT))
    passes: dict[int, int] = field(default_factory=dict)  # passes seen per size
    settled: int = 1  # the size the trees last chose on their own
    steady_steps: int = 0  # consecutive steps that chose `settled` again (a probe ends the run)
    vain_probes: int = 0  # probes since the trees last grew on their own
    probes: int = 0
    threads: int | None = None  # the thread count of the passes `level` and `recent` come from
    stalled: bool = False  # the last pass was held out as a stall
    _curve: CostCurve | None = field(default=None, repr=False)
    # The corrected shape (sizes, c(n)/c(1)): rebuilt only when a real ratio or the base
    # changes, while the level changes every step.
    _shape: tuple[list[int], list[float]] | None = field(default=None, repr=False)
    _base_ratios: dict[int, float] = field(default_factory=dict, repr=False)
    _shape_by_n: list[float] | None = field(default=None, repr=False)
    _fixes: dict[int, float] = field(default_factory=dict, repr=False)  # n -> _corrected(n)

    def set_base(self, base: CostCurve) -> None:
        """A newly measured shape; what decoding has learnt (level, real ratios) is kept."""
        self.base, self._curve, self._shape, self._shape_by_n = base, None, None, None
        self._base_ratios.clear()
        self._fixes.clear()

    def base_ratio(self, n: int) -> float:
        r = self._base_ratios.get(n)
        if r is None:
            r = self._base_ratios[n] = self.base(n) / self.base(1)
        return r

    def ratio(self, n: int) -> float:
        """The corrected shape c(n)/c(1)."""
        by_n = self._by_n()
        if type(n) is int and 0 < n < len(by_n):
            return by_n[n]
        sizes, ratios = self.shape()
        return float(np.interp(n, sizes, ratios))

    def _corrected(self, n: int) -> float:
        seen = self.observed.get(n)
        if not seen:
            return self.base_ratio(n)
        k = len(seen)
        # statistics.median: numpy's costs ~10 us on a dozen floats, and this runs per size per step
        return (SHAPE_PRIOR * self.base_ratio(n) + k * statistics.median(seen)) / (SHAPE_PRIOR + k)

    def _fix(self, n: int) -> float:
        """`_corrected(n)`, kept until a real ratio of that size arrives."""
        f = self._fixes.get(n)
        if f is None:
            f = self._fixes[n] = self._corrected(n)
        return f

    def shape(self) -> tuple[list[int], list[float]]:
        """The measured shape corrected by the real ratios: sizes and c(n)/c(1)."""
        if self._shape is None:
            b = self.base
            points = sorted(n for n in self.observed if 1 < n <= b.sizes[-1])
            # The real ratios made non-decreasing by a fit weighted by their evidence, not a
            # running maximum: one size seen dear a few times must not price every larger one.
            fitted = isotonic([1.0, *(self._fix(n) for n in points)],
                              [float("inf"), *(SHAPE_PRIOR + len(self.observed[n]) for n in points)])
            # The correction factor at observed sizes, 1 at n = 1, held flat past the last one.
            fx = [1, *points]
            fy = [1.0, *(r / self.base_ratio(n) for n, r in zip(points, fitted[1:]))]
            sizes = sorted(set(b.sizes) | set(points))
            # Plain Python: these lists are a few dozen long, and between forward passes each
            # numpy call costs tens of microseconds (docs/performance.md).
            ratios, top = [], 0.0
            for n, f in zip(sizes, interp_sorted(sizes, fx, fy)):
                top = max(top, self.base_ratio(n) * f)  # a pass never gets cheaper with more tokens
                ratios.append(top)
            self._shape = (sizes, ratios)
            self._shape_by_n = None
        return self._shape

    def _by_n(self) -> list[float]:
        """The corrected shape at every whole size from 0 (0) to one past the largest measured."""
        sizes, ratios = self.shape()
        if self._shape_by_n is None:
            self._shape_by_n = [0.0, *interp_sorted(range(1, sizes[-1] + 2), sizes, ratios)]
        return self._shape_by_n

    def curve(self) -> CostCurve:
        """The curve the tree search uses now: the shape at the load level."""
        if self._curve is None:
            b = self.base
            sizes, ratios = self.shape()
            level = self.level
            # c(0..) per whole size comes with it: the tree search reads it per node.
            self._curve = CostCurve(sizes, [level * r for r in ratios], b.context_len, b.device, b.dtype,
                                    b.measurements, threads=self.threads or b.threads,
                                    _table=[level * r for r in self._by_n()])
        return self._curve

    def observe(self, n: int, seconds: float, at: float, threads: int | None = None) -> None:
        """Learn from one real pass: its time-local ratio to a pass of another size, and
        the load level it implies."""
        if seconds <= 0:
            return
        moved = threads is not None and self.threads is not None and threads != self.threads
        last = self.base.sizes[-1]
        stall = bool(self.passes) and not moved and seconds > STALL * self.level * self.ratio(min(n, last))
        if stall and not self.stalled:
            # One slow pass paired into the shape priced every larger tree as dear as it, for
            # good: the trees then never verified that size again to correct it.
            self.stalled = True
            return
        self.stalled = False
        moved = moved or stall  # a second stall in a row: the load changed
        if moved:  # another thread count or load: a new level, and no pairs across the change
            self.recent.clear()
        self.threads = threads if threads is not None else self.threads
        other = next((p for p in reversed(self.recent) if p.n != n and at - p.at <= PAIR_WINDOW), None)
        if other is not None:
            small, big = sorted((other, Pass(at, n, seconds)), key=lambda p: p.n)
            if big.n <= self.base.sizes[-1]:
                r_small = 1.0 if small.n == 1 else self.ratio(small.n)
                seen = self.observed.setdefault(big.n, [])
                seen.append(big.seconds / small.seconds * r_small)
                del seen[:-OBSERVED_KEPT]
                self._fixes.pop(big.n, None)
                self._curve = self._shape = None
        est = seconds / self.ratio(min(n, last))
        first = moved or not self.passes
        self.level = est if first else (1 - LEVEL_RATE) * self.level + LEVEL_RATE * est
        self.recent.append(Pass(at, n, seconds))
        self.passes[n] = self.passes.get(n, 0) + 1
        self._curve = None

    def probe_size(self) -> int | None:
        """Another size to verify this step instead of the chosen one, or None: only after
        PROBE_EVERY steps at one size (any size: a wrong shape can hold trees at 3 as well as
        at 1), less often after probes that changed nothing. Larger sizes in turn for trees
        that stay small; a lone root for trees that stay large, since a shape that prices
        them too low holds them there and only a one-token pass beside them shows their cost
        (it can only ever shrink the trees' passes, so the probe is always possible)."""
        if self.steady_steps < PROBE_EVERY * 2 ** min(self.vain_probes, PROBE_BACKOFF):
            return None
        if self.settled > 2 * SMALL_TREE:
            return 1
        # The next size up first: a shape too dear there holds the trees below it for good.
        larger = [self.settled + 1, *(n for n in PROBE_SIZES if n > self.settled + 1)]
        return larger[self.probes % len(larger)]

    def chose(self, size: int, probed: bool) -> None:
        """Hear the size a step verified."""
        with _LOCK:
            self._chose(size, probed)

    def _chose(self, size: int, probed: bool) -> None:
        if probed:
            self.probes += 1
            self.vain_probes += 1
            self.steady_steps = 0
            return
        if size > max(self.settled, SMALL_TREE) or SMALL_TREE < size < self.settled:
            self.vain_probes = 0  # the trees changed size on their own: probing paid
        same = size == self.settled or max(size, self.settled) <= SMALL_TREE
        self.steady_steps = self.steady_steps + 1 if same else 0
        self.settled = max(size, SMALL_TREE) if size <= SMALL_TREE else size


_LOCK = threading.RLock()  # a LiveCost is read by the model thread and the app's threads


CONTEXT_BUCKETS = ((1536, 512), (10**9, 3072))  # (contexts below this, measured at)


def _bucket(context_len: int) -> int:
    """The context length whose curve serves `context_len`. Attention over the cache is a
    small share of a step next to the weights, so the curve's shape drifts slowly with
    context: one curve serves short contexts and a second, measured when a run first gets
    there, long ones."""
    return next(at for below, at in CONTEXT_BUCKETS if context_len < below)


def measure_context(model: PreTrainedModel, bucket: int, max_n: int) -> int:
    """The context length a bucket's curve is measured at, within the model's positions."""
    limit = getattr(model.config, "max_position_embeddings", None) or bucket + max_n
    return min(bucket, limit - max_n - 1)


def install_curve(model: PreTrainedModel, bucket: int, base: CostCurve) -> LiveCost:
    """Make `base` the measured shape of this model's bucket; what decoding has learnt
    (the load level and the real ratios) is kept."""
    with _LOCK:
        lives = profile_of(model).curves
        live = lives.get(bucket)
        if live is None:
            live = lives[bucket] = LiveCost(base, base(1))
        else:
            live.set_base(base)
        return live


def live_cost(model: PreTrainedModel, bucket: int) -> LiveCost | None:
    with _LOCK:
        return profile_of(model).curves.get(bucket)


def live_for(model: PreTrainedModel, context_len: int, max_n: int,
             on_measure: Callable[[float], None] | None) -> LiveCost:
    """This bucket's LiveCost, measuring its shape here only when none was installed."""
    bucket = _bucket(context_len)
    with _LOCK:
        live = profile_of(model).curves.get(bucket)
        if (live is None or live.base.sizes[-1] < max_n) and not measuring_allowed():
            return install_curve(model, bucket, default_curve(model, bucket, max(max_n, 8)))
        if live is None or live.base.sizes[-1] < max_n:
            t = time.perf_counter()
            fresh = measure_cost_curve(model, context_len=measure_context(model, bucket, max_n),
                                       max_n=max(max_n, 8))
            live = install_curve(model, bucket, fresh)
            if on_measure:
                on_measure(time.perf_counter() - t)
        return live


def cost_curve_for(model: PreTrainedModel, context_len: int, max_n: int,
                   on_measure: Callable[[float], None] | None = None) -> CostCurve:
    """The curve for this model at this context length now: the installed shape (measured
    here on first need when the app installed none) corrected by decoding, at the load level.

    `on_measure` hears how many seconds a measurement took, so callers can keep that
    one-off calibration apart from the time of decoding.
    """
    return live_for(model, context_len, max_n, on_measure).curve()


def corrections_allowed() -> bool:
    """LOGITSPEC_STEADY_CURVES=1: no pass's time corrects the installed curve, so trees are
    sized from the text alone, alike at any pace (a reproducible run; the test suite)."""
    return not environment.STEADY_CURVES.read()


def observe_forward(model: PreTrainedModel, context_len: int, n: int, seconds: float,
                    at: float | None = None, threads: int | None = None) -> None:
    """Set one decoding step's measured forward time (n tokens on `threads` threads) against the curve."""
    if not corrections_allowed():
        return
    with _LOCK:
        live = profile_of(model).curves.get(_bucket(context_len))
        if live is not None:
            live.observe(n, seconds, time.monotonic() if at is None else at, threads)


def warm_up(model: PreTrainedModel, max_context: int, capacity: int = 64) -> float:
    """Measure every curve a run up to `max_context` tokens may need; return the seconds."""
    from ..core.verify import head_batch_rows

    t = time.perf_counter()
    head_batch_rows(model)
    for below, at in CONTEXT_BUCKETS:
        cost_curve_for(model, min(at, max_context), capacity)
        if max_context < below:
            break
    return time.perf_counter() - t


def measured_curves(model: PreTrainedModel) -> list[CostCurve]:
    """Every curve in use for this model, by context length (as decoding has corrected it)."""
    with _LOCK:
        return sorted((live.curve() for live in profile_of(model).curves.values()), key=lambda c: c.context_len)
