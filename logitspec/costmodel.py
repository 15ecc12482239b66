"""The cost-aware draft tree: grow the tree by expected gain while tokens per second rise.

Two measured inputs drive it:
- c(n), the forward cost of n tree tokens for this model, device and dtype at the current
  context length (`CostCurve`, measured once and cached, refreshed when the context grows);
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


@torch.inference_mode()
def measure_cost_curve(model, context_len: int = 256, max_n: int = 64, rounds: int = 4) -> CostCurve:
    """Time tree forward passes of n = 1..max_n tokens over a cache of `context_len` tokens.

    Uses the same call path as verification (a 4D mask and position ids, or the plain
    causal call for a single token) so c(n) is what a step really costs. Sizes are timed
    in interleaved rounds and the fastest round kept: load from other work on a shared
    machine only ever adds time, and a median still bent the curve when a burst of it
    lasted several rounds.
    """
    from .kvcache import new_cache
    from .verify import crop_cache, free_head_rows, prepare_inputs, verify_tree

    device = model.device
    vocab = int(model.config.vocab_size)
    g = torch.Generator().manual_seed(0)
    ctx = torch.randint(0, vocab, (1, context_len), generator=g).to(device)
    cache = new_cache(model.config, context_len + max_n)
    model(input_ids=ctx, cache=cache, use_cache=True)
    sizes = sorted({n for n in SIZES if n <= max_n} | {max_n})
    toks = torch.randint(0, vocab, (max_n,), generator=g).tolist()
    trees = {}
    for n in sizes:
        # A bushy tree with the shape of a real one: a chain plus siblings under the root.
        nodes = [TreeNode(id=0, token=toks[0], parent=-1, depth=0, origin="root")]
        for i in range(1, n):
            parent = i - 1 if i % 2 else 0
            nodes.append(TreeNode(id=i, token=toks[i], parent=parent, depth=nodes[parent].depth + 1, origin="g2"))
        trees[n] = nodes
    runs: dict[int, list[float]] = {n: [] for n in sizes}
    head_rows = free_head_rows(model)
    for r in range(rounds + 1):  # round 0 warms up kernels and allocators
        for n in sizes:
            inputs = prepare_inputs(model, trees[n], context_len)
            if device.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            verify_tree(model, cache, trees[n], inputs, head_rows)
            if r:
                runs[n].append(time.perf_counter() - t)
            crop_cache(cache, context_len)
    secs = [min(runs[n]) for n in sizes]
    # A forward pass never gets cheaper with more tokens; noise can say otherwise.
    secs = list(np.maximum.accumulate(secs))
    return CostCurve(sizes, [float(s) for s in secs], context_len, str(device), str(model.dtype).replace("torch.", ""))


_CURVES: "weakref.WeakKeyDictionary[torch.nn.Module, dict[int, CostCurve]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


# Context lengths at which c(n) is measured. Attention over the cache is a small share of
# a step next to the weights, so the curve's shape drifts slowly with context: one curve
# serves short contexts and a second, measured when a run first gets there, long ones.
CONTEXT_BUCKETS = ((1536, 512), (10**9, 3072))  # (contexts below this, measured at)


def _bucket(context_len: int) -> int:
    return next(at for below, at in CONTEXT_BUCKETS if context_len < below)


def cost_curve_for(model, context_len: int, max_n: int,
                   on_measure: Callable[[float], None] | None = None) -> CostCurve:
    """The cached curve for this model at this context length, measured on first need, and
    again when decoding has shown it wrong (see `observe_forward`).

    `on_measure` hears how many seconds a measurement took, so callers can keep that
    one-off calibration apart from the time of decoding.
    """
    bucket = _bucket(context_len)
    with _LOCK:
        curves = _CURVES.setdefault(model, {})
        curve = curves.get(bucket)
        stale = bucket in _STALE.get(model, set())
        if curve is None or curve.sizes[-1] < max_n or stale:
            t = time.perf_counter()
            limit = getattr(model.config, "max_position_embeddings", None) or bucket + max_n
            fresh = measure_cost_curve(model, context_len=min(bucket, limit - max_n - 1), max_n=max(max_n, 8))
            if curve is not None and curve.sizes == fresh.sizes:
                # Load on a shared machine only ever adds time: keep each size's fastest.
                fresh.seconds = list(np.maximum.accumulate(np.minimum(curve.seconds, fresh.seconds)))
                fresh.measurements = curve.measurements + 1
            curves[bucket] = curve = fresh
            _STALE.get(model, set()).discard(bucket)
            _CHECKS.setdefault(model, {}).pop(bucket, None)
            if on_measure:
                on_measure(time.perf_counter() - t)
        return curve


# Decoding checks the curve: every step's forward time is set against c(n). A curve measured
# while other work held the cores can be wrong for some sizes only (load comes and goes
# within a measurement), and a wrong curve sizes every tree of the process.
CHECK_MIN = 12  # steps of a size before its times are compared
CHECK_TOLERANCE = 0.10  # relative gap between sizes that makes a curve stale
CHECK_MAX_MEASUREMENTS = 3  # a noisy machine must not re-measure forever
_STALE: "weakref.WeakKeyDictionary[torch.nn.Module, set[int]]" = weakref.WeakKeyDictionary()
_CHECKS: "weakref.WeakKeyDictionary[torch.nn.Module, dict[int, dict[int, list[float]]]]" = weakref.WeakKeyDictionary()


def observe_forward(model, context_len: int, n: int, seconds: float) -> bool:
    """Set one decoding step's measured forward time against the curve; True if the curve
    is now marked stale (re-measured on its next use).

    What matters for sizing is the curve's shape, so the test is relative: the median of
    observed / modelled time for n-token steps against the same for 1-token steps. Past
    CHECK_TOLERANCE apart, the curve no longer says what a tree costs here.
    """
    bucket = _bucket(context_len)
    with _LOCK:
        curve = _CURVES.get(model, {}).get(bucket)
        if curve is None or curve.measurements >= CHECK_MAX_MEASUREMENTS or n > curve.sizes[-1]:
            return False
        ratios = _CHECKS.setdefault(model, {}).setdefault(bucket, {})
        seen = ratios.setdefault(n, [])
        seen.append(seconds / curve(n))
        del seen[:-4 * CHECK_MIN]  # a recent window
        one = ratios.get(1, [])
        if n == 1 or len(seen) < CHECK_MIN or len(one) < CHECK_MIN:
            return False
        gap = float(np.median(seen)) / float(np.median(one)) - 1.0
        if abs(gap) <= CHECK_TOLERANCE:
            return False
        _STALE.setdefault(model, set()).add(bucket)
        return True


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
    """Every curve measured so far for this model, by context length."""
    with _LOCK:
        return sorted(_CURVES.get(model, {}).values(), key=lambda c: c.context_len)


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


_STATS: "weakref.WeakKeyDictionary[torch.nn.Module, AcceptanceStats]" = weakref.WeakKeyDictionary()


def stats_for(model) -> AcceptanceStats:
    """Per-model statistics shared by the runs of this process."""
    with _LOCK:
        return _STATS.setdefault(model, AcceptanceStats())


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

    def _curve(self, context_len: int, capacity: int) -> CostCurve:
        if self.curve is not None:
            return self.curve
        return cost_curve_for(self.model, context_len, capacity, on_measure=self._calibrated)

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
        curve = self._curve(context_len, capacity)
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
        while heap and size < capacity:
            negp, nid = heapq.heappop(heap)
            order.append(nid)
            size += 1
            expected -= negp
            rate = expected / cost[size]
            if rate > best[0]:
                best = (rate, size, expected)
            for c in trie.kids.get(nid, ()):
                heapq.heappush(heap, (-p[c], c))
        size = best[1]
        self._context_len = context_len  # for the curve check in observe
        keep = {0, *order[: size - 1]}
        nxt = order[size - 1] if size - 1 < len(order) else (heap[0][1] if heap else None)
        nxt_p = None if nxt is None else p[nxt]
        sizing = TreeSizing(
            mode="cost", size=size, expected_accepted=best[2], expected_seconds=cost[size],
            next_gain=nxt_p, next_seconds=None if nxt is None else curve(size + 1),
            reason=_reason(size, best[2], curve, nxt_p),
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
