"""The cost-aware draft tree's sizing: grow a trie while each node pays for its seconds at the run's
rate (`CostSizer`), whatever drafted its branches (LogitSpec's retrieval in retrievaltree.py, the
rivals' in logitspec/drafters/).

Two measured inputs drive it:
- c(n), the forward cost of n tree tokens (`logitspec.sizing.costcurve`);
- each node's chance of acceptance, from its retrieval evidence and rank, calibrated
  online by what this process has seen (`AcceptanceStats`) and fitted to how this run's
  own drafts fare (`RunFit`). Every step reveals the true
  next tokens, so all drafted nodes (verified or not) whose parent was right teach the
  estimator, and it never learns only from what it chose to verify.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.profile import profile_of
from ..core.trace import QueryRecord, TreeNode, TreeSizing
from .costcurve import LiveCost, live_for, observe_forward
from .curve import CostCurve
from .trie import Prefix, Trie, best_prefix

if TYPE_CHECKING:
    from transformers import PreTrainedModel

FRONTIER_SHOWN = 24  # unchosen nodes kept in the trace (marked pruned by cost) for the picture


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
        return min(0.9, base + 0.2 * (g1n >= 1) + 0.1 * min(g1n, 4) + 0.05 * min(g2n, 4))
    _, n, depth = key  # a continuation token, given its parent was right
    return min(0.85, 0.35 + 0.12 * min(n, 4))


MATCH_BUCKETS = (3, 4, 8, 16)  # agreement lengths past an n-gram, as keys: 4-7, 8-15, 16+


def evidence(q: QueryRecord | None) -> int:
    """A query's evidence as a key: 0 unmatched, its n-gram's length, or the bucket of a
    match that agrees further back (copied text)."""
    if q is None or q.matched_n is None:
        return 0
    length = q.match_len or q.matched_n
    return length if length <= 3 else max(b for b in MATCH_BUCKETS if b <= length)


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

    def observe(self, key: tuple, outcomes: Sequence[bool]) -> None:
        """Learn the outcomes of tests of one kind, in order."""
        c = self.counts.setdefault(key, [0.0, 0.0])
        hit, seen, cap = c[0], c[1], self.cap
        for success in outcomes:
            if seen >= cap:
                hit *= 0.99
                seen *= 0.99
            hit += success
            seen += 1.0
        c[0], c[1] = hit, seen


_LOCK = threading.Lock()
TEMPERATURE_STEP = 0.25  # temperatures this close share their acceptance statistics


def temperature_bucket(temperature: float) -> float:
    """The bucket a temperature learns in: 0 (greedy) alone, then steps of TEMPERATURE_STEP."""
    if temperature <= 0:
        return 0.0
    return max(TEMPERATURE_STEP, round(temperature / TEMPERATURE_STEP) * TEMPERATURE_STEP)


def stats_for(model: PreTrainedModel, temperature: float = 0.0) -> AcceptanceStats:
    """Per-model statistics shared by the runs of this process, one set per temperature
    bucket: drafts are accepted less often as the temperature rises, so trees must shrink."""
    with _LOCK:
        return profile_of(model).acceptance.setdefault(temperature_bucket(temperature), AcceptanceStats())



FIT_PRIOR = 4.0  # weight, in observations, of the process-wide chances against the run's record
FIT_EVIDENCE = 3  # evidence levels fitted apart: none, a bare 1-, 2- and 3-gram or longer


def fit_group(key: tuple, origin: str) -> tuple:
    """The group a node kind is fitted in by `RunFit`: its origin, whether it is a first
    token, and the evidence of the match behind it (`evidence`, capped at FIT_EVIDENCE)."""
    if key[0] == "first":  # ("first", rank bucket, g1 evidence, g2 evidence)
        n = key[2] if origin == "g1" else key[3]
    else:  # ("cont", evidence, depth)
        n = key[1]
    return origin, key[0], min(n, FIT_EVIDENCE)


@dataclass
class RunFit:
    """How this run's drafts fare against the process-wide chances, per origin, kind and
    evidence (`fit_group`). A text that copies its prompt keeps drafts after a bare 1- or
    2-gram right far more often than the average text does, while drafts after a long match
    are right in almost any text; one factor for both let the many long matches, right as
    expected, hold down the lift the short ones had earned. The chances follow the record by
    an odds factor: hits over expected hits, against misses over expected misses."""

    record: dict[tuple, list[float]] = field(default_factory=dict)  # [hits, expected, misses, expected]

    def factor(self, group: tuple) -> float:
        h, eh, m, em = self.record.get(group, (0.0, 0.0, 0.0, 0.0))
        return ((h + FIT_PRIOR) / (eh + FIT_PRIOR)) / ((m + FIT_PRIOR) / (em + FIT_PRIOR))

    def adjust(self, group: tuple, p: float) -> float:
        odds = p / max(1e-9, 1.0 - p) * self.factor(group)
        return odds / (1.0 + odds)

    def observe(self, group: tuple, p: float, outcomes: Sequence[bool]) -> None:
        """The outcomes of tests of nodes of one kind, each with chance p."""
        r = self.record.setdefault(group, [0.0, 0.0, 0.0, 0.0])
        n = len(outcomes)
        hits = sum(outcomes)
        r[0] += hits
        r[1] += p * n
        r[2] += n - hits
        r[3] += (1.0 - p) * n


RATE_MEMORY = 0.95  # each step's weight fades by this per step: the rate follows the text


@dataclass
class RunRate:
    """The run's tokens per pass, per c(1) of pass cost: the bar each tree node must clear.

    Each step commits its tokens for the cost of its tree; the run is fastest when the
    tokens of all steps over the seconds of all steps are most, not each step's own ratio.
    A node is worth its cost when its chance beats the run's rate times the seconds it
    adds (the renewal-reward argument), so a step whose drafts are likely grows past its
    own best ratio and a step of unlikely drafts stays smaller. Costs are kept in units of
    c(1) so a change of load does not skew the rate.
    """

    tokens: float = 1.0  # a vanilla pass to start from: one token for one c(1)
    cost: float = 1.0

    def per_second(self, c1: float) -> float:
        return self.tokens / (self.cost * c1)

    def observe(self, tokens: int, relative_cost: float) -> None:
        self.tokens = RATE_MEMORY * self.tokens + tokens
        self.cost = RATE_MEMORY * self.cost + relative_cost


def chance_floor(cost: Sequence[float], capacity: int) -> float:
    """The least chance of acceptance worth putting a drafted node in the trie.

    A node adds p expected tokens to a pass; with at least one token per pass it pays off
    only where p beats the relative cost of the tokens it adds. The first node can ride the
    step from 1 to 2 tokens, which may be free (the few-row kernel makes it so on CPU), so
    the floor looks past it: the nodes after the first must together pay for c(s) - c(2),
    and the floor is the cheapest such cost per node and per second of c(2), over every
    size s. Averaging over sizes keeps one flat step of a measured curve (two sizes that
    timed alike) from dropping the floor to zero, which lets every candidate and its
    continuation into the trie. It is a pruning rule, not a bound: a node under it could
    still pay on a step cheaper than the average (its measured effect: docs/performance.md).
    """
    if capacity < 3:
        return min(((cost[n + 1] - cost[n]) / cost[n] for n in range(1, capacity)), default=1.0)
    return min((cost[s] - cost[2]) / ((s - 2) * cost[2]) for s in range(3, capacity + 1))

class CostSizer:
    """Sizes a step's trie by expected gain per measured second, and learns as it goes: the part
    every cost tree shares (LogitSpec's in retrievaltree.py, the rivals' in logitspec/drafters/).

    A tree grows its trie with `chance` for each node's kind and hands the growing to `size`;
    after the pass, `learn_pass` hears its time and tokens and `learn` the tests of its nodes."""

    def __init__(self, model: PreTrainedModel | None, stats: AcceptanceStats | None = None,
                 curve: CostCurve | None = None) -> None:
        self.model = model
        self.stats = stats or (stats_for(model) if model is not None else AcceptanceStats())
        self.curve = curve
        self.trie: Trie | None = None  # the last sized step's trie, until its truth is learnt
        self.calibration_seconds = 0.0  # time spent measuring c(n) during this run
        self.rate = RunRate()
        self.run_fit = RunFit()
        self._context_len = 0
        self._relative_cost = 1.0  # the built tree's c(size)/c(1), for the rate
        self._chances: dict[tuple, float] = {}  # this step's chance per (kind, origin)

    def chance(self, key: tuple, origin: str) -> float:
        """A node kind's chance as the process learnt it, fitted to how this run's drafts of
        the same origin and kind fare (`RunFit`). Computed once per step and kind: a trie
        holds many nodes of one kind, and nothing learns until the step is over."""
        p = self._chances.get((key, origin))
        if p is None:
            p = self._chances[key, origin] = self.run_fit.adjust(fit_group(key, origin), self.stats.p(key))
        return p

    def _calibrated(self, seconds: float) -> None:
        self.calibration_seconds += seconds

    def _curve(self, context_len: int, capacity: int) -> tuple[CostCurve, LiveCost | None]:
        """The curve for this step and, unless a fixed curve was given, the live model behind it."""
        if self.curve is not None:
            return self.curve, None
        live = live_for(self.model, context_len, capacity, self._calibrated)
        return live.curve(), live

    def size(self, grow: Callable[[float], Trie], capacity: int,
             context_len: int) -> tuple[list[TreeNode], TreeSizing]:
        """Grow the step's trie (`grow` takes the least chance worth a node, `chance_floor`), then
        keep the prefix that gains most over the run's rate (`best_prefix`)."""
        curve, live = self._curve(context_len, capacity)
        cost = curve.table(capacity + 1)
        self._chances = {}
        trie = self.trie = grow(chance_floor(cost, capacity))
        rate = self.rate.per_second(cost[1])
        best = best_prefix(trie, cost, capacity, rate)
        probe = live.probe_size() if live is not None else None
        size = best.size
        if probe is not None:  # now and then verify another prefix, so real passes re-teach c(n)
            size = min(probe, len(best.gains)) if probe > size and len(best.order) >= 2 else min(probe, size)
        probed = size != best.size
        if live is not None:
            live.chose(size, probed)
        self._context_len = context_len  # for the curve check in learn_pass
        self._relative_cost = cost[size] / cost[1]
        sizing = _sizing(best, size, probed, cost, trie.p, rate, capacity)
        # A full tree left out nodes that would have paid for one more token's seconds.
        paid = node_bar(cost, size, rate) if size == capacity else None
        return _select(trie, {0, *best.order[: size - 1]}, paid), sizing

    def learn_pass(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                   threads: int | None = None) -> Trie | None:
        """What every cost tree learns from a pass: its time against the cost curve (unless the
        curve was given) and the run's rate. Returns the step's trie for the tree to test against
        the truth, and forgets it; None when the step drafted no trie to learn from."""
        if seconds is not None and verified and self.model is not None and self.curve is None:
            observe_forward(self.model, self._context_len, verified, seconds, threads=threads)
        if self.trie is None or len(truth) < 2:
            return None
        self.rate.observe(len(truth) - 1, self._relative_cost)  # the root and the accepted drafts
        trie, self.trie = self.trie, None
        return trie

    def learn(self, tests: dict[tuple, list[bool]]) -> None:
        """Learn the outcomes of the step's tests, per (kind, origin), in order."""
        # Each test is held against the chance the step was built with, before any of it is learnt.
        before = {key: self.stats.p(key) for key, _ in tests}
        for (key, origin), outcomes in tests.items():
            self.run_fit.observe(fit_group(key, origin), before[key], outcomes)
            self.stats.observe(key, outcomes)


def walk_tests(trie: Trie, truth: Sequence[int], tests: dict[tuple, list[bool]]) -> tuple[int, int]:
    """Every drafted node whose parent lies on the true path was, in effect, tested: add each
    outcome under its (kind, origin). Returns the deepest right node and its depth."""
    node, reached = 0, 0
    for depth in range(1, len(truth)):
        right = trie.child.get((node, int(truth[depth])))
        for c in trie.children.get(node, ()):
            tests.setdefault((trie.key[c], trie.origin[c]), []).append(c == right)
        if right is None:
            break
        node, reached = right, depth
    return node, reached


def _select(t: Trie, keep: set[int], paid: float | None) -> list[TreeNode]:
    """The chosen nodes, then the most likely unchosen frontier nodes marked pruned:
    verified ones first, so they are the forward pass's rows (as `verified_first`).
    Pruned nodes whose chance is above `paid` (a full tree) were cut by the capacity."""
    frontier = sorted((n for n in range(1, len(t.token)) if n not in keep and t.parent[n] in keep),
                      key=lambda n: -t.p[n])[:FRONTIER_SHOWN]
    # Trie ids grow from parents to children, so each order keeps parents first.
    order = sorted(keep) + sorted(frontier)
    remap = {n: i for i, n in enumerate(order)}
    nodes = [TreeNode(id=0, token=int(t.token[0]), parent=-1, depth=0, origin="root")]
    for i, n in enumerate(order[1:], start=1):
        pruned = i >= len(keep)
        why = ("capacity" if paid is not None and t.p[n] > paid else "cost") if pruned else None
        nodes.append(TreeNode(id=i, token=t.token[n], parent=remap[t.parent[n]], depth=t.depth[n],
                              origin=t.origin[n], rank=t.rank[n], query=t.query[n], pruned=pruned,
                              prune_reason=why, accept_prob=round(t.p[n], 6)))
    return nodes


def node_bar(cost: Sequence[float], size: int, rate: float) -> float:
    """The chance a node added to a tree of `size` tokens needs to pay, at the run's `rate`
    (tokens per second), for the seconds it adds: cost is c(0..)."""
    return rate * (cost[size + 1] - cost[size])


def _sizing(best: Prefix, size: int, probed: bool, cost: Sequence[float], p: Sequence[float], rate: float,
            capacity: int) -> TreeSizing:
    """Why the tree verifies `size` nodes: the most gain over the run's rate, or a probe."""
    gain = best.gains[size - 1]
    nxt = best.order[size - 1] if size - 1 < len(best.order) else best.after
    nxt_p = None if nxt is None else p[nxt]
    reason = _reason(size, gain, cost, None if probed else nxt_p, rate, capacity)
    if probed:
        reason += (f"; verified as a probe instead of the best size ({best.size}), so a real pass re-teaches "
                   "what a tree costs under the machine's load now")
    return TreeSizing(mode="cost", size=size, expected_accepted=gain, expected_seconds=cost[size],
                      next_gain=nxt_p, next_seconds=None if nxt is None else cost[size + 1], reason=reason,
                      run_rate=rate)


def _reason(size: int, expected: float, cost: Sequence[float], nxt_p: float | None, rate: float,
            capacity: int) -> str:
    text = (f"{size} tokens: expected {expected:.2f} accepted per pass in {cost[size] * 1e3:.1f} ms; "
            f"the run makes {rate:.1f} tokens/s")
    if nxt_p is None:
        return text
    extra = cost[size + 1] - cost[size]
    if extra > 0 and nxt_p <= node_bar(cost, size, rate):
        return text + (f"; the next node (p={nxt_p:.3f}) would add {extra * 1e3:.1f} ms, {nxt_p / extra:.1f} "
                       "tokens/s on its own cost, below the run's rate, so the tree stops here")
    return text + f"; the next node (p={nxt_p:.3f}) would pay, but the tree is at its capacity of {capacity}"
