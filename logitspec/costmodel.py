"""The cost-aware draft tree: grow the tree by expected gain while tokens per second rise.

Two measured inputs drive it:
- c(n), the forward cost of n tree tokens for this model, device and dtype at the current
  context length: a measured shape c(n)/c(1), corrected by real passes, times the load
  level c(1) that every step re-estimates (`LiveCost`), so it stays right when other work
  comes and goes on the machine;
- each node's chance of acceptance, from its retrieval evidence and rank, calibrated
  online by what this process has seen (`AcceptanceStats`). Every step reveals the true
  next tokens, so all drafted nodes (verified or not) whose parent was right teach the
  estimator, and it never learns only from what it chose to verify.
"""
from __future__ import annotations

import functools
import heapq
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .trace import Candidate, QueryRecord, TreeNode, TreeSizing
from .tree import DraftTree

SIZES = (1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 256)  # dense where trees usually stop
FRONTIER_SHOWN = 24  # unchosen nodes kept in the trace (marked pruned by cost) for the picture


# ---------------------------------------------------------------- forward cost c(n)
@dataclass
class CostCurve:
    """Median seconds of one forward pass of n tree tokens, at a given context length."""

    sizes: list[int]
    seconds: list[float]
    context_len: int
    device: str
    dtype: str
    measurements: int = 1  # measured this many times; each size keeps its fastest
    _table: list[float] | None = field(default=None, repr=False, compare=False)

    def __call__(self, n: int) -> float:
        return float(np.interp(n, self.sizes, self.seconds))

    def table(self, max_n: int) -> list[float]:
        """c(0..max_n) as a list, computed once per curve: the tree search reads it per node."""
        cached = self._table
        if cached is None or len(cached) <= max_n:
            cached = [0.0] + np.interp(np.arange(1, max_n + 1), self.sizes, self.seconds).tolist()
            self._table = cached
        return cached

    def to_dict(self) -> dict:
        return {"sizes": self.sizes, "seconds": self.seconds, "context_len": self.context_len,
                "device": self.device, "dtype": self.dtype, "measurements": self.measurements}


class CurveMeasurement:
    """Times tree forward passes of n = 1..max_n tokens over a cache of `context_len` tokens,
    one pass per `step()`, so the work can be cut into chunks that fit between other work.

    Uses the same call path as verification (a 4D mask and position ids, or the plain
    causal call for a single token) so c(n) is what a step really costs. Sizes are timed
    in interleaved rounds and the fastest round kept: load from other work on a shared
    machine only ever adds time, and a median still bent the curve when a burst of it
    lasted several rounds.
    """

    def __init__(self, model, context_len: int = 256, max_n: int = 64, rounds: int = 4) -> None:
        self.model, self.context_len, self.max_n, self.rounds = model, context_len, max_n, rounds
        self.sizes = sorted({n for n in SIZES if n <= max_n} | {max_n})
        self.runs: dict[int, list[float]] = {n: [] for n in self.sizes}
        self._todo = [(r, n) for r in range(rounds + 1) for n in self.sizes]  # round 0 warms up
        self._cache = None

    @property
    def done(self) -> bool:
        return not self._todo

    @torch.inference_mode()
    def _prepare(self) -> None:
        from .kvcache import new_cache
        from .verify import free_head_rows

        model, vocab = self.model, int(self.model.config.vocab_size)
        g = torch.Generator().manual_seed(0)
        ctx = torch.randint(0, vocab, (1, self.context_len), generator=g).to(model.device)
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
        self._head_rows = free_head_rows(model)

    @torch.inference_mode()
    def step(self) -> bool:
        """Do the next chunk (the prefill, or one timed pass); True once every pass is timed."""
        from .verify import crop_cache, prepare_inputs, verify_tree

        if self._cache is None:
            self._prepare()
            return self.done
        r, n = self._todo.pop(0)
        inputs = prepare_inputs(self.model, self._trees[n], self.context_len)
        if self.model.device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        verify_tree(self.model, self._cache, self._trees[n], inputs, self._head_rows)
        if r:
            self.runs[n].append(time.perf_counter() - t)
        crop_cache(self._cache, self.context_len)
        if self.done:
            self._cache = self._trees = None  # free the cache as soon as the curve is known
        return self.done

    def result(self) -> CostCurve:
        secs = [min(self.runs[n]) for n in self.sizes]
        # A forward pass never gets cheaper with more tokens; noise can say otherwise.
        secs = list(np.maximum.accumulate(secs))
        return CostCurve(self.sizes, [float(s) for s in secs], self.context_len, str(self.model.device),
                         str(self.model.dtype).replace("torch.", ""))


def measure_cost_curve(model, context_len: int = 256, max_n: int = 64, rounds: int = 4) -> CostCurve:
    """The whole curve at once (see `CurveMeasurement`)."""
    m = CurveMeasurement(model, context_len, max_n, rounds)
    while not m.step():
        pass
    return m.result()


# ---------------------------------------------------------------- c(n) under a changing load
# Load from other work scales c(1) and c(n) roughly alike, so the curve is held as a shape
# relative to c(1) times a load level that every step re-estimates. A curve measured while
# the load came and went can still have a wrong shape; real passes of different sizes close
# in time share the load, so their ratio corrects it. Trees that stay at one token never
# show a tree pass, so now and then a step verifies a larger tree to ask.
PAIR_WINDOW = 3.0  # seconds within which two passes are taken to share the machine's load
PAIR_RECENT = 6  # passes remembered for pairing
OBSERVED_KEPT = 12  # ratios kept per size: a recent window
SHAPE_PRIOR = 2.0  # weight of the measured shape against real ratios, in observations
LEVEL_RATE = 0.2  # weight of each step in the load level's moving average
PROBE_EVERY = 8  # steps of trees of one or two tokens before a probe
PROBE_SIZES = (4, 8, 6)  # tree sizes probed in turn, so the shape is learnt at a few points
PROBE_BACKOFF = 3  # each probe that did not grow the trees doubles the interval, up to 2**this
SMALL_TREE = 2  # trees this small or smaller count towards a probe


@dataclass
class Pass:
    """One verification pass as decoding saw it."""

    at: float  # time.monotonic() when it was observed
    n: int
    seconds: float


@dataclass
class LiveCost:
    """c(n) for one model and context bucket: the measured shape c(n)/c(1), corrected by
    time-local ratios of real passes, times the load level (c(1) now)."""

    base: CostCurve
    level: float
    observed: dict[int, list[float]] = field(default_factory=dict)  # n -> real c(n)/c(1)
    recent: deque = field(default_factory=lambda: deque(maxlen=PAIR_RECENT))
    passes: dict[int, int] = field(default_factory=dict)  # passes seen per size
    small_steps: int = 0  # consecutive chosen trees of at most SMALL_TREE tokens
    vain_probes: int = 0  # probes since the trees last grew on their own
    probes: int = 0
    _curve: CostCurve | None = field(default=None, repr=False)

    def base_ratio(self, n: int) -> float:
        return self.base(n) / self.base(1)

    def ratio(self, n: int) -> float:
        """The corrected shape c(n)/c(1)."""
        return self.curve()(n) / self.curve()(1)

    def _corrected(self, n: int) -> float:
        seen = self.observed.get(n)
        if not seen:
            return self.base_ratio(n)
        k = len(seen)
        return (SHAPE_PRIOR * self.base_ratio(n) + k * float(np.median(seen))) / (SHAPE_PRIOR + k)

    def curve(self) -> CostCurve:
        """The curve the tree search uses now (rebuilt after each observation)."""
        if self._curve is not None:
            return self._curve
        b = self.base
        points = sorted(n for n in self.observed if 1 < n <= b.sizes[-1])
        # The correction factor at observed sizes, 1 at n = 1, held flat past the last one.
        fx = [1, *points]
        fy = [1.0, *(self._corrected(n) / self.base_ratio(n) for n in points)]
        sizes = sorted(set(b.sizes) | set(points))
        secs = [self.level * self.base_ratio(n) * float(np.interp(n, fx, fy)) for n in sizes]
        secs = [float(s) for s in np.maximum.accumulate(secs)]
        self._curve = CostCurve(sizes, secs, b.context_len, b.device, b.dtype, b.measurements)
        return self._curve

    def observe(self, n: int, seconds: float, at: float) -> None:
        """Learn from one real pass: its time-local ratio to a pass of another size, and
        the load level it implies."""
        if seconds <= 0:
            return
        other = next((p for p in reversed(self.recent) if p.n != n and at - p.at <= PAIR_WINDOW), None)
        if other is not None:
            small, big = sorted((other, Pass(at, n, seconds)), key=lambda p: p.n)
            if big.n <= self.base.sizes[-1]:
                r_small = 1.0 if small.n == 1 else self.ratio(small.n)
                seen = self.observed.setdefault(big.n, [])
                seen.append(big.seconds / small.seconds * r_small)
                del seen[:-OBSERVED_KEPT]
                self._curve = None
        est = seconds / self.ratio(min(n, self.base.sizes[-1]))
        first = not self.passes
        self.level = est if first else (1 - LEVEL_RATE) * self.level + LEVEL_RATE * est
        self.recent.append(Pass(at, n, seconds))
        self.passes[n] = self.passes.get(n, 0) + 1
        self._curve = None

    def probe_size(self) -> int | None:
        """The size to verify this step instead of the chosen one, or None: only after
        PROBE_EVERY small trees in a row, less often after probes that changed nothing."""
        if self.small_steps < PROBE_EVERY * 2 ** min(self.vain_probes, PROBE_BACKOFF):
            return None
        return PROBE_SIZES[self.probes % len(PROBE_SIZES)]

    def chose(self, size: int, probed: bool) -> None:
        """Hear the size a step verified."""
        if probed:
            self.probes += 1
            self.vain_probes += 1
            self.small_steps = 0
        elif size > SMALL_TREE:
            self.small_steps = self.vain_probes = 0
        else:
            self.small_steps += 1


_LIVE: "weakref.WeakKeyDictionary[torch.nn.Module, dict[int, LiveCost]]" = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()


# Context lengths at which c(n) is measured. Attention over the cache is a small share of
# a step next to the weights, so the curve's shape drifts slowly with context: one curve
# serves short contexts and a second, measured when a run first gets there, long ones.
CONTEXT_BUCKETS = ((1536, 512), (10**9, 3072))  # (contexts below this, measured at)


def _bucket(context_len: int) -> int:
    return next(at for below, at in CONTEXT_BUCKETS if context_len < below)


def measure_context(model, bucket: int, max_n: int) -> int:
    """The context length a bucket's curve is measured at, within the model's positions."""
    limit = getattr(model.config, "max_position_embeddings", None) or bucket + max_n
    return min(bucket, limit - max_n - 1)


def install_curve(model, bucket: int, base: CostCurve) -> LiveCost:
    """Make `base` the measured shape of this model's bucket; what decoding has learnt
    (the load level and the real ratios) is kept."""
    with _LOCK:
        lives = _LIVE.setdefault(model, {})
        live = lives.get(bucket)
        if live is None:
            live = lives[bucket] = LiveCost(base, base(1))
        else:
            live.base, live._curve = base, None
        return live


def live_cost(model, bucket: int) -> LiveCost | None:
    with _LOCK:
        return _LIVE.get(model, {}).get(bucket)


def _live_for(model, context_len: int, max_n: int, on_measure: Callable[[float], None] | None) -> LiveCost:
    """This bucket's LiveCost, measuring its shape here only when none was installed."""
    bucket = _bucket(context_len)
    with _LOCK:
        live = _LIVE.get(model, {}).get(bucket)
        if live is None or live.base.sizes[-1] < max_n:
            t = time.perf_counter()
            fresh = measure_cost_curve(model, context_len=measure_context(model, bucket, max_n),
                                       max_n=max(max_n, 8))
            live = install_curve(model, bucket, fresh)
            if on_measure:
                on_measure(time.perf_counter() - t)
        return live


def cost_curve_for(model, context_len: int, max_n: int,
                   on_measure: Callable[[float], None] | None = None) -> CostCurve:
    """The curve for this model at this context length now: the installed shape (measured
    here on first need when the app installed none) corrected by decoding, at the load level.

    `on_measure` hears how many seconds a measurement took, so callers can keep that
    one-off calibration apart from the time of decoding.
    """
    return _live_for(model, context_len, max_n, on_measure).curve()


def observe_forward(model, context_len: int, n: int, seconds: float, at: float | None = None) -> None:
    """Set one decoding step's measured forward time (n tokens) against the curve."""
    with _LOCK:
        live = _LIVE.get(model, {}).get(_bucket(context_len))
        if live is not None:
            live.observe(n, seconds, time.monotonic() if at is None else at)


def warm_up(model, max_context: int, capacity: int = 64) -> float:
    """Measure every curve a run up to `max_context` tokens may need; return the seconds."""
    from .verify import free_head_rows

    t = time.perf_counter()
    free_head_rows(model)
    for below, at in CONTEXT_BUCKETS:
        cost_curve_for(model, min(at, max_context), capacity)
        if max_context < below:
            break
    return time.perf_counter() - t


def measured_curves(model) -> list[CostCurve]:
    """Every curve in use for this model, by context length (as decoding has corrected it)."""
    with _LOCK:
        return sorted((live.curve() for live in _LIVE.get(model, {}).values()), key=lambda c: c.context_len)


# ---------------------------------------------------------------- acceptance estimates
RANK_BUCKETS = (1, 2, 3, 4, 8, 16, 32, 64, 256)


def rank_bucket(rank: int | None) -> int:
    if rank is None:
        return 0
    if rank <= 4:  # the common case, without the loop
        return rank
    for b in RANK_BUCKETS:
        if rank <= b:
            return b
    return RANK_BUCKETS[-1]


@functools.lru_cache(maxsize=4096)
def prior_mean(key: tuple) -> float:
    """Starting guesses before any evidence; the data takes over within a few steps."""
    kind = key[0]
    if kind == "first":  # a guess for x_{i+2}: (kind, rank bucket, g1 n, g2 n)
        _, bucket, g1n, g2n = key
        base = {0: 0.02, 1: 0.25, 2: 0.10, 3: 0.06, 4: 0.04, 8: 0.03, 16: 0.015, 32: 0.008}.get(bucket, 0.004)
        return min(0.9, base + 0.2 * (g1n >= 1) + 0.1 * g1n + 0.05 * g2n)
    _, n, depth = key  # a continuation token, given its parent was right
    return min(0.85, 0.35 + 0.12 * n)


@dataclass
class AcceptanceStats:
    """Beta-smoothed acceptance rates per node kind, with forgetting so old runs fade."""

    strength: float = 4.0  # weight of the prior, in observations
    cap: float = 400.0  # observations kept per kind before old ones fade
    counts: dict[tuple, list[float]] = field(default_factory=dict)

    def p(self, key: tuple) -> float:
        m = prior_mean(key)
        hit, seen = self.counts.get(key, (0.0, 0.0))
        return (hit + self.strength * m) / (seen + self.strength)

    def observe(self, key: tuple, success: bool) -> None:
        c = self.counts.setdefault(key, [0.0, 0.0])
        if c[1] >= self.cap:
            c[0] *= 0.99
            c[1] *= 0.99
        c[0] += float(success)
        c[1] += 1.0


_STATS: "weakref.WeakKeyDictionary[torch.nn.Module, dict[float, AcceptanceStats]]" = weakref.WeakKeyDictionary()
TEMPERATURE_STEP = 0.25  # temperatures this close share their acceptance statistics


def temperature_bucket(temperature: float) -> float:
    """The bucket a temperature learns in: 0 (greedy) alone, then steps of TEMPERATURE_STEP."""
    if temperature <= 0:
        return 0.0
    return max(TEMPERATURE_STEP, round(temperature / TEMPERATURE_STEP) * TEMPERATURE_STEP)


def stats_for(model, temperature: float = 0.0) -> AcceptanceStats:
    """Per-model statistics shared by the runs of this process, one set per temperature
    bucket: drafts are accepted less often as the temperature rises, so trees must shrink."""
    with _LOCK:
        return _STATS.setdefault(model, {}).setdefault(temperature_bucket(temperature), AcceptanceStats())


# ---------------------------------------------------------------- the tree
class _Trie:
    """The full trie of every drafted branch, in flat lists (it is rebuilt every step)."""

    def __init__(self, root: int) -> None:
        self.token, self.parent, self.depth = [root], [-1], [0]
        self.origin: list[str] = ["root"]
        self.rank: list[int | None] = [None]
        self.query: list[int | None] = [None]
        self.key: list[tuple | None] = [None]
        self.p: list[float] = [1.0]  # chance the whole path to the node is accepted
        self.child: dict[tuple[int, int], int] = {}
        self.kids: dict[int, list[int]] = {}

    def add(self, parent: int, token: int, origin: str, rank: int | None, query: int, key: tuple) -> int:
        nid = len(self.token)
        self.token.append(token), self.parent.append(parent), self.depth.append(self.depth[parent] + 1)
        self.origin.append(origin), self.rank.append(rank), self.query.append(query), self.key.append(key)
        self.p.append(0.0)
        self.child[(parent, token)] = nid
        self.kids.setdefault(parent, []).append(nid)
        return nid


def chance_floor(cost: Sequence[float], capacity: int) -> float:
    """The least chance of acceptance worth putting a drafted node in the trie.

    A node adds p expected tokens to a pass; with at least one token per pass it pays off
    only where p beats the relative cost of the tokens it adds. The first node can ride the
    step from 1 to 2 tokens, which may be free (the few-row kernel makes it so on CPU), so
    the floor looks past it: the nodes after the first must together pay for c(s) - c(2),
    and the floor is the cheapest such cost per node and per second of c(2), over every
    size s. Averaging over sizes keeps one flat step of a measured curve (two sizes that
    timed alike) from dropping the floor to zero: with a zero floor all 64 candidates and
    their continuations went into the trie every step, about 120 nodes for trees of four
    or five. It is a pruning rule, not a bound: a node under it could still pay on a step
    cheaper than the average. Against no floor at all, in one process over 10 bench
    questions twice, tokens per pass stayed the same (1.496 against 1.488) and drafting
    fell from 1.33 to 0.88 ms a step.
    """
    if capacity < 3:
        return min(((cost[n + 1] - cost[n]) / cost[n] for n in range(1, capacity)), default=1.0)
    return min((cost[s] - cost[2]) / ((s - 2) * cost[2]) for s in range(3, capacity + 1))


class CostAwareDrafter:
    """Builds each step's tree by expected gain per measured second; learns as it goes."""

    def __init__(self, model, stats: AcceptanceStats | None = None, curve: CostCurve | None = None) -> None:
        self.model = model
        self.stats = stats or (stats_for(model) if model is not None else AcceptanceStats())
        self.curve = curve
        self._trie: _Trie | None = None
        self._skipped: list[tuple[int, tuple]] = []  # first tokens left out of the trie, for learning
        self.calibration_seconds = 0.0  # time spent measuring c(n) during this run
        self._context_len = 0

    @staticmethod
    def first_key(cand: Candidate | None, g1n: int, g2n: int) -> tuple:
        """The kind of a guess for x_{i+2}: its rank bucket (0 for g1's own guess) and the
        n-gram lengths by which g1 and its g2 query back it."""
        return ("first", rank_bucket(cand.rank if cand is not None else None), g1n, g2n)

    @staticmethod
    def cont_key(n: int, depth: int) -> tuple:
        """The kind of a continuation token at `depth` after a match of an n-gram."""
        return ("cont", n, min(depth, 8))

    def _calibrated(self, seconds: float) -> None:
        self.calibration_seconds += seconds

    def _curve(self, context_len: int, capacity: int) -> tuple[CostCurve, LiveCost | None]:
        """The curve for this step and, unless a fixed curve was given, the live model behind it."""
        if self.curve is not None:
            return self.curve, None
        live = _live_for(self.model, context_len, capacity, self._calibrated)
        return live.curve(), live

    def build(
        self,
        root: int,
        g1: QueryRecord | None,
        g2: Sequence[tuple[Candidate, QueryRecord]],
        capacity: int,
        g1_len: int,
        context_len: int,
    ) -> tuple[list[TreeNode], TreeSizing]:
        """Insert the drafted branches into one trie, then keep the prefix with the best rate."""
        curve, live = self._curve(context_len, capacity)
        cost = curve.table(capacity + 1)
        floor = chance_floor(cost, capacity)
        p_of, trie = self.stats.p, _Trie(root)
        self._trie, self._skipped = trie, []
        g1n = (g1.matched_n or 0) if g1 is not None else 0
        if g1 is not None and g1.continuation:
            node, prob = 0, 1.0
            for d, tok in enumerate(g1.continuation[:g1_len]):
                key = self.first_key(None, g1n, 0) if d == 0 else self.cont_key(g1n, d + 1)
                prob *= p_of(key)
                if d > 0 and prob < floor:
                    break
                node = trie.add(node, int(tok), "g1", None, 0, key)
                trie.p[node] = prob
        for i, (cand, q) in enumerate(g2):
            g2n = q.matched_n or 0
            first = trie.child.get((0, cand.token))
            key = self.first_key(cand, g1n if first is not None else 0, g2n)
            prob = p_of(key)
            if first is not None:  # g1 drafted the same token: more evidence, one node
                trie.key[first], trie.rank[first] = key, cand.rank
                trie.p[first] = prob = max(prob, trie.p[first])
                node = first
            elif prob < floor:
                self._skipped.append((cand.token, key))
                continue
            else:
                node = trie.add(0, cand.token, "g2", cand.rank, 1 + i, key)
                trie.p[node] = prob
            for d, tok in enumerate(q.continuation, start=2):
                key = self.cont_key(g2n, d)
                prob *= p_of(key)
                if prob < floor:
                    break
                nxt = trie.child.get((node, int(tok)))
                if nxt is None:
                    nxt = trie.add(node, int(tok), "g2", cand.rank, 1 + i, key)
                    trie.p[nxt] = prob
                elif prob > trie.p[nxt]:
                    trie.p[nxt], trie.key[nxt] = prob, key
                node = nxt
        # A node's chance can never exceed its parent's (an upgraded parent lifts nothing here).
        for nid in range(1, len(trie.token)):
            par = trie.parent[nid]
            if par > 0 and trie.p[nid] > trie.p[par]:
                trie.p[nid] = trie.p[par]

        # Greedy by path probability: a child never beats its parent, so parents come first.
        p = trie.p
        heap = [(-p[c], c) for c in trie.kids.get(0, [])]
        heapq.heapify(heap)
        expected, size = 1.0, 1
        best = (expected / cost[1], 1, expected)
        order: list[int] = []
        gains = [1.0]  # expected accepted tokens of each prefix size (index = size - 1)
        while heap and size < capacity:
            negp, nid = heapq.heappop(heap)
            order.append(nid)
            size += 1
            expected -= negp
            gains.append(expected)
            rate = expected / cost[size]
            if rate > best[0]:
                best = (rate, size, expected)
            for c in trie.kids.get(nid, ()):
                heapq.heappush(heap, (-p[c], c))
        size = best[1]
        probe = live.probe_size() if live is not None else None
        probed = probe is not None and len(order) >= 2 and min(probe, len(gains)) > size
        chosen = size
        if probed:  # verify a larger prefix now and then, so real passes re-teach c(n) for trees
            size = min(probe, len(gains))
            best = (gains[size - 1] / cost[size], size, gains[size - 1])
        if live is not None:
            with _LOCK:
                live.chose(size, probed)
        self._context_len = context_len  # for the curve check in observe
        keep = {0, *order[: size - 1]}
        nxt = order[size - 1] if size - 1 < len(order) else (heap[0][1] if heap else None)
        nxt_p = None if nxt is None else p[nxt]
        sizing = TreeSizing(
            mode="cost", size=size, expected_accepted=best[2], expected_seconds=cost[size],
            next_gain=nxt_p, next_seconds=None if nxt is None else curve(size + 1),
            reason=_reason(size, best[2], curve, None if probed else nxt_p)
            + (f"; verified as a probe instead of the best size ({chosen}), so a real pass re-teaches "
               "what a tree costs under the machine's load now" if probed else ""),
        )
        return self._select(keep), sizing

    def _select(self, keep: set[int]) -> list[TreeNode]:
        """The chosen nodes, plus the most likely unchosen frontier nodes marked pruned."""
        t = self._trie
        frontier = sorted((n for n in range(1, len(t.token)) if n not in keep and t.parent[n] in keep),
                          key=lambda n: -t.p[n])[:FRONTIER_SHOWN]
        shown = keep | set(frontier)
        out = DraftTree(t.token[0])
        remap = {0: 0}
        for n in range(1, len(t.token)):
            if n not in shown:
                continue
            pruned = n not in keep
            new = TreeNode(id=len(out.nodes), token=t.token[n], parent=remap[t.parent[n]], depth=t.depth[n],
                           origin=t.origin[n], rank=t.rank[n], query=t.query[n], pruned=pruned,
                           prune_reason="cost" if pruned else None, accept_prob=round(t.p[n], 6))
            out.nodes.append(new)
            out._child[(new.parent, new.token)] = new.id
            remap[n] = new.id
        return out.finalize()

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None) -> None:
        """Learn from the step's truth: root, the accepted drafts, then the bonus token; and
        check the cost curve against the step's measured forward time (`verified` tokens in
        `seconds`).

        Every drafted node whose parent lies on the true path was, in effect, tested, and so
        was every candidate left out of the trie for its low chance.
        """
        if seconds is not None and verified and self.model is not None and self.curve is None:
            observe_forward(self.model, self._context_len, verified, seconds)
        t = self._trie
        if t is None or len(truth) < 2:
            return
        seen = self.stats.observe
        for tok, key in self._skipped:
            seen(key, tok == truth[1])
        node = 0
        for depth in range(1, len(truth)):
            right = t.child.get((node, int(truth[depth])))
            for c in t.kids.get(node, ()):
                seen(t.key[c], c == right)
            if right is None:
                break
            node = right
        self._trie = None


def _reason(size: int, expected: float, curve: CostCurve, nxt_p: float | None) -> str:
    rate = expected / curve(size)
    text = (f"{size} tokens: expected {expected:.2f} accepted per pass in {curve(size) * 1e3:.1f} ms "
            f"= {rate:.1f} tokens/s")
    if nxt_p is not None:
        r2 = (expected + nxt_p) / curve(size + 1)
        text += (f"; the next node (p={nxt_p:.3f}) would cost {curve(size + 1) * 1e3:.1f} ms "
                 f"for {r2:.1f} tokens/s, so the tree stops here")
    return text
