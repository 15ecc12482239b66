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

import heapq
import statistics
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .trace import Candidate, QueryRecord, TreeNode, TreeSizing
from .tree import DraftTree

SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
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

    def __call__(self, n: int) -> float:
        return float(np.interp(n, self.sizes, self.seconds))

    def table(self, max_n: int) -> list[float]:
        """c(0..max_n) as a list, computed once per curve: the tree search reads it per node."""
        cached = getattr(self, "_table", None)
        if cached is None or len(cached) <= max_n:
            cached = [0.0] + np.interp(np.arange(1, max_n + 1), self.sizes, self.seconds).tolist()
            self._table = cached
        return cached

    def to_dict(self) -> dict:
        return {"sizes": self.sizes, "seconds": self.seconds, "context_len": self.context_len,
                "device": self.device, "dtype": self.dtype}


@torch.inference_mode()
def measure_cost_curve(model, context_len: int = 256, max_n: int = 64, rounds: int = 3) -> CostCurve:
    """Time tree forward passes of n = 1..max_n tokens over a cache of `context_len` tokens.

    Uses the same call path as verification (a 4D mask and position ids, or the plain
    causal call for a single token) so c(n) is what a step really costs. Sizes are timed
    in interleaved rounds and the median kept, so a burst of load on a shared machine
    hits every size alike instead of bending the curve.
    """
    from transformers import DynamicCache

    from .verify import prepare_inputs, verify_tree

    device = model.device
    vocab = int(model.config.vocab_size)
    g = torch.Generator().manual_seed(0)
    ctx = torch.randint(0, vocab, (1, context_len), generator=g).to(device)
    cache = DynamicCache(config=model.config)
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
    for r in range(rounds + 1):  # round 0 warms up kernels and allocators
        for n in sizes:
            inputs = prepare_inputs(model, trees[n], context_len)
            if device.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            verify_tree(model, cache, trees[n], inputs)
            if r:
                runs[n].append(time.perf_counter() - t)
            for layer in cache.layers:
                layer.keys = layer.keys[..., :context_len, :]
                layer.values = layer.values[..., :context_len, :]
    secs = [statistics.median(runs[n]) for n in sizes]
    # A forward pass never gets cheaper with more tokens; noise can say otherwise.
    secs = list(np.maximum.accumulate(secs))
    return CostCurve(sizes, [float(s) for s in secs], context_len, str(device), str(model.dtype).replace("torch.", ""))


_CURVES: "weakref.WeakKeyDictionary[torch.nn.Module, dict[int, CostCurve]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


# Context lengths at which c(n) is measured. Attention over the cache is a small share of
# a step next to the weights, so the curve's shape drifts slowly with context: one curve
# serves short contexts and a second, measured when a run first gets there, long ones.
CONTEXT_BUCKETS = ((1536, 512), (10**9, 3072))  # (contexts below this, measured at)


def cost_curve_for(model, context_len: int, max_n: int,
                   on_measure: Callable[[float], None] | None = None) -> CostCurve:
    """The cached curve for this model at this context length, measured on first need.

    `on_measure` hears how many seconds a measurement took, so callers can keep that
    one-off calibration apart from the time of decoding.
    """
    bucket = next(at for below, at in CONTEXT_BUCKETS if context_len < below)
    with _LOCK:
        curves = _CURVES.setdefault(model, {})
        curve = curves.get(bucket)
        if curve is None or curve.sizes[-1] < max_n:
            t = time.perf_counter()
            limit = getattr(model.config, "max_position_embeddings", None) or bucket + max_n
            curve = measure_cost_curve(model, context_len=min(bucket, limit - max_n - 1), max_n=max(max_n, 8))
            curves[bucket] = curve
            if on_measure:
                on_measure(time.perf_counter() - t)
        return curve


def warm_up(model, max_context: int, capacity: int = 64) -> float:
    """Measure every curve a run up to `max_context` tokens may need; return the seconds."""
    t = time.perf_counter()
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
    for b in RANK_BUCKETS:
        if rank <= b:
            return b
    return RANK_BUCKETS[-1]


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
@dataclass
class _Info:
    key: tuple
    p_cond: float
    p_path: float = 0.0


class CostAwareDrafter:
    """Builds each step's tree by expected gain per measured second; learns as it goes."""

    def __init__(self, model, stats: AcceptanceStats | None = None, curve: CostCurve | None = None) -> None:
        self.model = model
        self.stats = stats or (stats_for(model) if model is not None else AcceptanceStats())
        self.curve = curve
        self._full: DraftTree | None = None
        self._info: dict[int, _Info] = {}
        self._kids: dict[int, list[int]] = {}
        self.calibration_seconds = 0.0  # time spent measuring c(n) during this run

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
        """Insert every drafted branch into a full trie, then keep the best prefix by rate."""
        full = DraftTree(root)
        info: dict[int, _Info] = {}
        big = 10**9  # the full trie is not limited; selection below sizes it
        if g1 is not None and g1.continuation:
            ids = full.add_branch(0, g1.continuation[:g1_len], keep=big, capacity=big, origin="g1", query=0)
            for d, nid in enumerate(ids):
                info[nid] = _Info(("first", 0, g1.matched_n or 0, 0) if d == 0 else ("cont", g1.matched_n or 0, min(d + 1, 8)), 0.0)
        for i, (cand, q) in enumerate(g2):
            ids = full.add_branch(0, [cand.token] + list(q.continuation), keep=big, capacity=big,
                                  origin="g2", rank=cand.rank, query=1 + i)
            for d, nid in enumerate(ids):
                if d == 0:
                    old = info.get(nid)
                    g1n = old.key[2] if old is not None else 0
                    info[nid] = _Info(("first", rank_bucket(cand.rank), g1n, q.matched_n or 0), 0.0)
                elif nid not in info or info[nid].key[1] < (q.matched_n or 0):
                    info[nid] = _Info(("cont", q.matched_n or 0, min(d + 1, 8)), 0.0)
        nodes = full.nodes
        for n in nodes[1:]:
            inf = info[n.id]
            inf.p_cond = self.stats.p(inf.key)
            parent_p = 1.0 if n.parent == 0 else info[n.parent].p_path
            inf.p_path = parent_p * inf.p_cond
        self._full, self._info = full, info

        # Greedy by path probability: a child never beats its parent, so parents come first.
        curve = self._curve(context_len, capacity)
        cost = curve.table(capacity + 1)
        chosen = [0]
        heap = [(-info[c].p_path, c) for (par, _), c in full._child.items() if par == 0]
        heapq.heapify(heap)
        children: dict[int, list[int]] = {}
        for (par, _), c in full._child.items():
            children.setdefault(par, []).append(c)
        self._kids = children
        expected = 1.0
        best = (expected / cost[1], 1, expected)
        order: list[tuple[int, float]] = []
        while heap and len(chosen) < capacity:
            negp, nid = heapq.heappop(heap)
            chosen.append(nid)
            order.append((nid, -negp))
            expected += -negp
            rate = expected / cost[len(chosen)]
            if rate > best[0]:
                best = (rate, len(chosen), expected)
            for c in children.get(nid, []):
                heapq.heappush(heap, (-info[c].p_path, c))
        size = best[1]
        keep = set([0] + [nid for nid, _ in order[: size - 1]])
        nxt = order[size - 1] if size - 1 < len(order) else None
        if nxt is None and heap:
            nxt = (heap[0][1], -heap[0][0])
        sizing = TreeSizing(
            mode="cost", size=size, expected_accepted=best[2], expected_seconds=curve(size),
            next_gain=None if nxt is None else nxt[1], next_seconds=None if nxt is None else curve(size + 1),
            reason=_reason(size, best[2], curve, nxt),
        )
        return self._select(keep), sizing

    def _select(self, keep: set[int]) -> list[TreeNode]:
        """The chosen nodes, plus the most likely unchosen frontier nodes marked pruned."""
        full, info = self._full, self._info
        frontier = sorted((n for n in full.nodes if n.id not in keep and n.parent in keep),
                          key=lambda n: -info[n.id].p_path)[:FRONTIER_SHOWN]
        shown = keep | {n.id for n in frontier}
        out = DraftTree(full.nodes[0].token)
        remap = {0: 0}
        for n in full.nodes[1:]:
            if n.id not in shown:
                continue
            pruned = n.id not in keep
            new = TreeNode(id=len(out.nodes), token=n.token, parent=remap[n.parent], depth=n.depth,
                           origin=n.origin, rank=n.rank, query=n.query, pruned=pruned,
                           prune_reason="cost" if pruned else None, accept_prob=round(info[n.id].p_path, 6))
            out.nodes.append(new)
            out._child[(new.parent, new.token)] = new.id
            remap[n.id] = new.id
        return out.finalize()

    def observe(self, truth: Sequence[int]) -> None:
        """Learn from the step's truth: root, the accepted drafts, then the bonus token.

        Every drafted node whose parent lies on the true path was, in effect, tested.
        """
        full, kids = self._full, self._kids
        if full is None:
            return
        node = 0
        for depth in range(1, len(truth)):
            right = full.child(node, int(truth[depth]))
            for c in kids.get(node, ()):
                self.stats.observe(self._info[c].key, c == right)
            if right is None:
                break
            node = right
        self._full = None


def _reason(size: int, expected: float, curve: CostCurve, nxt: tuple[int, float] | None) -> str:
    rate = expected / curve(size)
    text = (f"{size} tokens: expected {expected:.2f} accepted per pass in {curve(size) * 1e3:.1f} ms "
            f"= {rate:.1f} tokens/s")
    if nxt is not None:
        r2 = (expected + nxt[1]) / curve(size + 1)
        text += (f"; the next node (p={nxt[1]:.3f}) would cost {curve(size + 1) * 1e3:.1f} ms "
                 f"for {r2:.1f} tokens/s, so the tree stops here")
    return text
