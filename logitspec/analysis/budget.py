"""Accepted tokens against tree budget: what a tree of at most B nodes would have accepted on a run.

A run's output is fixed (greedy, or sampled with noise keyed by position alone: sampling.py),
so after a step's root x_{i+1} the true path is the output that follows it, whatever the
tree. A drafted node is accepted at budget B when it is among the first B nodes (root
included) of an ordering of the step's nodes and it, and every node above it, lies on that
path. The run's steps are replayed one by one for B = 1..BUDGET_MAX, in three orderings:

- paper: the paper's static tree with capacity B (logitspec.core.tree.build_static_tree: g1's
  continuation, then each candidate's branch by rank, cut by the rank rule), rebuilt from
  the step's own candidates and queries. Its nodes become verified in insertion order, so
  the tree of capacity B is the first B verified nodes of the tree of capacity 64.
- cost: the cost-aware tree's own ranking (sizing.trie.best_prefix: greedily by path chance,
  a child never before its parent), from the chance each node of the trace records.
- pld: prompt lookup's chain of B nodes: the root and the B - 1 tokens that followed the
  longest matching n-gram (n <= 3), looked up again in the step's context (the prompt and
  the output before the root), as retrieval.NgramPool finds them for any chain length.

What the replay can know, and what it cannot:
- The run's steps stay as they were: step i starts at the root the run had there. A run
  with another budget would have split the output into other steps and drafted from other
  roots; those steps never happened, so each point is the mean over the run's own steps.
- paper and pld are exact per step: their tokens are all in the trace or in the context. A
  LogitSpec step keeps every candidate and each lookup's continuation, at least as long as
  the rank rule keeps (g1 to its length plus a few, g2 to retrieval.G2_COST_LEN or to the
  rule's keep plus a few), so the paper's tree is rebuilt with the run's own k, g1 length
  and rule; only LogitSpec runs record candidates. Prompt lookup's chain needs only the
  context, so it is replayed for any run (vanilla and Token Recycling included).
- cost knows only the nodes the step built and the trace kept: the chosen nodes and at most
  costtree.FRONTIER_SHOWN unchosen ones next to them, with their chances rounded to six
  decimals. Up to the step's own size the ranking is the tree's own; past it, nodes the
  trie held but the trace dropped (below an unchosen node, or less likely ones) and nodes
  the trie never held (under its chance floor) are neither ranked nor counted, so the
  curve is then what the recorded nodes could add, and stays flat where they run out.
  Traces written before the frontier was recorded hold the chosen nodes only.
- A node can be accepted only up to the run's end: the truth is the output, cut at EOS or
  at max_new_tokens as the run was.

Replayed at each pass's own size in the ordering its own tree followed (cost, paper or pld),
the run gives back its real tokens (BudgetReplay.own_tokens; tests check it on every shipped
trace). One fixed budget B, even B equal to the run's mean size, need not give that count:
the cost tree chooses each step's size apart, so a fixed B keeps other nodes at every step.
Tokens per pass count as visual.counts does: every output token over the forward passes,
a final commit that needed no pass included. Pure Python over the trace: no torch, no model.
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.limits import InputError
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings, PruningRule
from ..core.trace import QueryRecord, RunTrace, StepRecord, TreeNode
from ..core.tree import TreeIndex, build_static_tree

BUDGET_MAX = 64  # the paper's capacity: what a GPU verifies in one pass
ORDERINGS = ("paper", "cost", "pld")
PLD_MAX_N = 3  # prompt lookup's longest n-gram (as drafters/lookup.py's PromptLookupDrafter)


def true_path(nodes: Sequence[TreeNode], truth: Sequence[int]) -> list[int]:
    """Positions in `nodes` of the nodes the greedy walk accepts along `truth` (truth[0]: the
    root, nodes[0]), root excluded. Each node's parent must be in `nodes`."""
    where = {n.id: i for i, n in enumerate(nodes)}
    path = []
    for node in TreeIndex.of(nodes).follow(truth[1:], start=nodes[0].id):
        if node is None:
            break
        path.append(where[node])
    return path


def accepted(nodes: Sequence[TreeNode], truth: Sequence[int]) -> int:
    """Drafted tokens the greedy walk accepts: verified nodes along `truth` (truth[0]: the root)."""
    return len(true_path([n for n in nodes if not n.pruned], truth))


def prompt_lookup(pool: NgramPool, root: int, length: int) -> QueryRecord:
    """Prompt lookup's chain after `root`: `length` tokens after the longest n-gram (n <= 3)
    that matches the context's tail and the root."""
    sizes = [n for n in pool.sizes if n <= PLD_MAX_N]
    return pool.query("pld", pool.tokens[-PLD_MAX_N:] + [root], length, sizes=sizes)


def chain_accepted(chain: Sequence[int], truth: Sequence[int]) -> int:
    """Tokens of a drafted chain the walk accepts: its prefix that agrees with truth[1:]."""
    n = 0
    while n < len(chain) and n + 1 < len(truth) and chain[n] == truth[n + 1]:
        n += 1
    return n


def paper_order(step: StepRecord, g1_len: int, rule: PruningRule) -> list[TreeNode]:
    """The verified nodes of the paper's tree of capacity BUDGET_MAX, in the order the tree took
    them, rebuilt from the step's candidates and queries (g1 first); the root alone without g1."""
    if not step.queries or step.queries[0].kind != "g1":
        return [TreeNode(id=0, token=step.root, parent=-1, depth=0, origin="root")]
    pairs = list(zip(step.candidates, step.queries[1:]))
    nodes = build_static_tree(step.root, step.queries[0], pairs, BUDGET_MAX, g1_len, rule)
    return [n for n in nodes if not n.pruned]


def cost_order(step: StepRecord) -> list[TreeNode]:
    """The step's recorded nodes as the cost tree ranks them (sizing.trie.best_prefix): the root,
    then greedily the likeliest node whose parent is taken; ties to the chosen, then lower id."""
    if step.sizing is None or step.sizing.mode != "cost" or not step.tree:
        return []
    kids: dict[int, list[TreeNode]] = {}
    for n in step.tree[1:]:
        kids.setdefault(n.parent, []).append(n)
    # Verified nodes carry the lower ids (verified_first), so the id breaks ties toward them.
    heap = [(-(c.accept_prob or 0.0), c.id, c) for c in kids.get(step.tree[0].id, [])]
    heapq.heapify(heap)
    order = [step.tree[0]]
    while heap:
        _, _, n = heapq.heappop(heap)
        order.append(n)
        for c in kids.get(n.id, []):
            heapq.heappush(heap, (-(c.accept_prob or 0.0), c.id, c))
    return order


@dataclass
class StepBudget:
    """One forward step replayed under one ordering."""

    path: list[int]  # positions in the ordering (root at 0) of the accepted nodes, increasing
    nodes: int  # nodes the ordering holds, root included

    def committed(self, budget: int) -> int:
        """Tokens the step would have committed with at most `budget` nodes: root + accepted."""
        return 1 + sum(p < budget for p in self.path)


def step_budgets(step: StepRecord, truth: Sequence[int], pool: NgramPool, s: DecodeSettings,
                 orderings: Sequence[str]) -> dict[str, StepBudget]:
    """A forward step under each of `orderings` (`truth`: the output from its root)."""
    out = {}
    for name in orderings:
        if name == "pld":
            chain = prompt_lookup(pool, step.root, BUDGET_MAX - 1).continuation
            out[name] = StepBudget(list(range(1, 1 + chain_accepted(chain, truth))), 1 + len(chain))
            continue
        order = paper_order(step, s.continuation, s.rule) if name == "paper" else cost_order(step)
        out[name] = StepBudget(true_path(order, truth), len(order)) if order else StepBudget([], 1)
    return out


def orderings_of(trace: RunTrace) -> list[str]:
    """The orderings the trace can replay: prompt lookup's for any run; the paper's tree for a
    LogitSpec run (it records candidates and queries); the cost tree's for its own runs."""
    if trace.method != "logitspec":
        return ["pld"]
    return ["paper", "cost", "pld"] if own_ordering(trace) == "cost" else ["paper", "pld"]


@dataclass
class BudgetCurve:
    """One ordering's tokens per pass at each budget B = 1..len(tokens)."""

    name: str  # "paper" | "cost" | "pld"
    tokens: list[int]  # index B - 1: output tokens the run would have made with trees of B nodes
    reached: list[int]  # index B - 1: forward passes whose ordering held at least B nodes
    passes: int

    @property
    def per_pass(self) -> list[float]:
        return [t / self.passes if self.passes else 0.0 for t in self.tokens]


@dataclass
class BudgetReplay:
    """A run (or runs pooled) replayed at every budget, beside what it really did."""

    passes: int  # forward passes
    tokens: int  # output tokens, as the run made them
    nodes: int  # tree nodes the run verified, summed over its passes
    own_tokens: int | None  # the run's tokens replayed at each pass's own size in its own ordering
    own: str | None  # the ordering of the run's own tree: "cost", "paper", "pld" (None: vanilla, other)
    curves: dict[str, BudgetCurve] = field(default_factory=dict)

    @property
    def own_budget(self) -> float:
        """The budget the run used: mean nodes verified per pass, root included."""
        return self.nodes / self.passes if self.passes else 0.0

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0

    def summary(self) -> dict:
        """Plain JSON values for a report: the budget used, tokens per pass (real, and replayed
        at each pass's own size) and each ordering's tokens per pass at B = 1.."""
        own = self.own_tokens / self.passes if self.own_tokens is not None and self.passes else None
        return {"passes": self.passes, "own_budget": round(self.own_budget, 4), "own": self.own,
                "tokens_per_pass": round(self.tokens_per_pass, 4),
                "own_replayed": None if own is None else round(own, 4),
                "curves": {n: [round(v, 4) for v in c.per_pass] for n, c in self.curves.items()}}


def _settings(trace: RunTrace) -> DecodeSettings:
    """The run's n-gram sizes, g1 length and rank rule (defaults where the trace has none)."""
    d, s = DecodeSettings(), trace.settings
    rule = s.get("rule")
    return DecodeSettings(ngram_sizes=tuple(int(n) for n in s.get("ngram_sizes", d.ngram_sizes)),
                          continuation=int(s.get("continuation", d.continuation)),
                          pool=str(s.get("pool", "recent")),  # traces from before the setting: the latest occurrence
                          rule=PruningRule(**rule) if isinstance(rule, dict) else d.rule)


def own_ordering(trace: RunTrace) -> str | None:
    """The ordering the run's own trees followed."""
    if trace.method == "pld":
        return "pld"
    modes = {st.sizing.mode for st in trace.steps if st.forward and st.sizing is not None}
    if trace.method != "logitspec" or len(modes) != 1:
        return None
    return "cost" if modes == {"cost"} else "paper"


def replay_budgets(trace: RunTrace, budgets: int = BUDGET_MAX) -> BudgetReplay:
    """Every forward step of the run replayed at budgets 1..`budgets` (module docstring);
    InputError when the steps' contexts do not add up to the prompt and the output."""
    s, own, names = _settings(trace), own_ordering(trace), orderings_of(trace)
    pool, output = NgramPool(s.ngram_sizes, trace.prompt_tokens, s.pool, s.continuation), trace.tokens
    tokens = {name: [0] * budgets for name in names}
    reached = {name: [0] * budgets for name in names}
    rep = BudgetReplay(passes=0, tokens=len(output), nodes=0, own_tokens=0 if own else None, own=own)
    for step in (st for st in trace.steps if st.forward):
        if step.context_len != len(pool):
            raise InputError(f"step {step.index} says it searched {step.context_len} tokens but the prompt and "
                             f"the tokens before it are {len(pool)}: the trace does not add up")
        size = len(step.verified_nodes)
        rep.passes, rep.nodes = rep.passes + 1, rep.nodes + size
        truth = output[len(pool) - len(trace.prompt_tokens):]
        for name, sb in step_budgets(step, truth, pool, s, names).items():
            tokens[name] = [t + sb.committed(b) for b, t in enumerate(tokens[name], start=1)]
            reached[name] = [r + (sb.nodes >= b) for b, r in enumerate(reached[name], start=1)]
            if name == own:
                rep.own_tokens += sb.committed(size)
        pool.extend(step.tokens)
    # A final commit without a pass (decoders.decode) adds its tokens at every budget, as the run counts them.
    free = len(output) - sum(len(st.tokens) for st in trace.steps if st.forward)
    rep.curves = {n: BudgetCurve(n, [t + free for t in tokens[n]], reached[n], rep.passes) for n in names}
    if rep.own_tokens is not None:
        rep.own_tokens += free
    return rep


def pooled(replays: Sequence[BudgetReplay]) -> BudgetReplay:
    """Several runs as one: tokens, passes and nodes summed, so each curve is all the runs'
    tokens over all their passes (as a bench pools tokens per pass). A curve or the own
    replay is kept only where every run has it."""
    names = [n for n in ORDERINGS if replays and all(n in r.curves for r in replays)]
    owns = {r.own for r in replays}
    own = owns.pop() if len(owns) == 1 else None
    own_tokens = [r.own_tokens for r in replays]
    out = BudgetReplay(passes=sum(r.passes for r in replays), tokens=sum(r.tokens for r in replays),
                       nodes=sum(r.nodes for r in replays), own=own,
                       own_tokens=sum(own_tokens) if own and None not in own_tokens else None)
    for n in names:
        cs = [r.curves[n] for r in replays]
        out.curves[n] = BudgetCurve(n, [sum(v) for v in zip(*(c.tokens for c in cs))],
                                    [sum(v) for v in zip(*(c.reached for c in cs))], out.passes)
    return out
