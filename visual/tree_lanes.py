"""The lanes of a run's draft trees: each node's row, fixed for the whole run.

Lane 0 holds the root (and the bonus token after the accepted path), lane 1 the g1 (or
prompt lookup) continuation, lane 1 + r the branch of candidate rank r (a recycled candidate
of rank r in the root's matrix row: lane 1 + k + r). A tree of branches (Token Recycling's,
RACER's, SuffixDecoding's) has a lane per branch of the run's trees, by the node's path from the
root (`branch_lanes`): its matrix ranks for Token Recycling, its place among its siblings for the
others. A baseline's lanes are its own (visual.baselines).
"""
from __future__ import annotations

from logitspec.analysis.lanes import node_sources, sources_of
from logitspec.core.trace import RunTrace, StepRecord, TreeNode

from .baselines import BASELINE_METHODS as BASELINES
from .baselines import lane_names as baseline_lane_names
from .baselines import step_lanes as baseline_lanes
from .data import get_step


def _lane(node: TreeNode, k: int) -> int:
    """A node's lane in a tree of lookups; a recycled candidate (rank r in the root's row) goes
    past the logits' k candidates, where its g2 branch (rank k + r) already is."""
    if node.origin == "root":
        return 0
    if node.origin == "g2":
        return 1 + (node.rank or 1)
    if node.origin == "recycled":
        return 1 + k + (node.rank or 1)
    return 1  # g1 / pld


def branched(method: str) -> bool:
    """A method whose trees are branches of its own sources, with no g1 or g2 lane (Token Recycling,
    RACER, SuffixDecoding): the lane table says so."""
    keys = {src.key for src in sources_of(method)[1:]}
    return method not in BASELINES and method != "pld" and bool(keys) and "g1" not in keys


def _branch_paths(trace: RunTrace, s: StepRecord) -> dict[int, tuple[int, ...]]:
    """Each node's path from the root (the root's is ()): Token Recycling's by matrix ranks, the
    others' by each node's place among its siblings."""
    by_id = {n.id: n for n in s.tree}
    place: dict[int, int] = {}
    seen: dict[int, int] = {}
    for n in sorted(s.tree, key=lambda n: n.id):
        seen[n.parent] = place[n.id] = seen.get(n.parent, 0) + 1
    ranked = trace.method == "recycling"
    paths: dict[int, tuple[int, ...]] = {}

    def path(i: int) -> tuple[int, ...]:
        if i not in paths:
            n = by_id[i]
            step = (n.rank or 1) if ranked else place[i]
            paths[i] = () if n.parent < 0 or n.parent not in by_id else (*path(n.parent), step)
        return paths[i]

    for n in s.tree:
        path(n.id)
    return paths


def branch_lanes(trace: RunTrace) -> dict[tuple[int, ...], int]:
    """A lane for each path of the run's trees, fixed for the run: depth first, a node's first
    child drawn anywhere in the run goes on in its lane and each other child opens the next lane;
    the root's children all open lanes (lane 0 holds the root and the bonus)."""
    paths = {p for s in trace.steps for p in _branch_paths(trace, s).values()}
    lanes, opened, new = {(): 0}, set(), 1
    for p in sorted(paths - {()}):  # depth first: a parent's path sorts before its children's
        parent = p[:-1]
        if parent and parent not in opened:
            lanes[p] = lanes[parent]
        else:
            lanes[p], new = new, new + 1
        opened.add(parent)
    return lanes


def _branch_names(trace: RunTrace) -> list[str]:
    """Each branch lane's name: Token Recycling's by the ranks that open it, the others' by the source
    of the node that first opened it in the run, numbered within that source."""
    lanes = branch_lanes(trace)
    first: dict[int, tuple[int, ...]] = {}
    for p, lane in sorted(lanes.items()):
        first.setdefault(lane, p)  # a lane is named for the node that opens it
    count = max(lanes.values()) + 1
    if trace.method == "recycling":
        return ["ranks " + "·".join(map(str, first[x])) for x in range(1, count)]
    origin: dict[tuple[int, ...], str] = {}
    for s in trace.steps:
        by_id = {n.id: n for n in s.tree}
        for i, p in _branch_paths(trace, s).items():
            origin.setdefault(p, by_id[i].origin)
    names, per_source = [], {}
    for x in range(1, count):
        src = node_sources().get(origin.get(first[x], ""))
        words = src.legend.split(": ")[-1] if src else "branch"
        per_source[words] = per_source.get(words, 0) + 1
        names.append(f"{words} {per_source[words]}")
    return names


def node_lanes(trace: RunTrace, s: StepRecord) -> dict[int, int]:
    """Node id -> its lane in the run's fixed lanes (see the module's docstring)."""
    if branched(trace.method):
        lanes = branch_lanes(trace)
        return {i: lanes[p] for i, p in _branch_paths(trace, s).items()}
    if trace.method in BASELINES:
        return baseline_lanes(trace, s)
    k = int(trace.settings.get("k") or 0)
    return {n.id: _lane(n, k) for n in s.tree}


def _max_rank(trace: RunTrace) -> int:
    """The deepest candidate rank any step's tree drew (a recycled one past k): small trees get a short figure."""
    k = 1 if trace.method == "logitspec" else 0
    for s in trace.steps:
        lanes = node_lanes(trace, s)
        k = max([k] + [lanes[n.id] - 1 for n in s.tree if n.origin in ("g2", "recycled")])
    return k


def lane_count(trace: RunTrace) -> int:
    """Lanes the run needs, the same for every step: root, g1 (or PLD), one per candidate rank;
    or a Token Recycling run's branches."""
    if trace.method == "vanilla":
        return 1
    if trace.method == "pld":
        return 2
    if branched(trace.method):
        return max(branch_lanes(trace).values()) + 1
    if trace.method in BASELINES:
        return 1 + len(baseline_lane_names(trace))
    return 2 + _max_rank(trace)


def lane_names(trace: RunTrace) -> list[str]:
    names = ["x_{i+1} · bonus"]
    if trace.method in BASELINES:
        names += baseline_lane_names(trace)
    elif trace.method == "pld":
        names.append("prompt lookup")
    elif branched(trace.method):
        names += _branch_names(trace)
    elif trace.method != "vanilla":
        k = int(trace.settings.get("k") or 0)
        names.append("g1 lookup")
        names += [f"rank {r}" if r <= k or trace.method != "logitspec+recycling" else f"recycled {r - k}"
                  for r in range(1, lane_count(trace) - 1)]
    return names


def wanted_ids(s: StepRecord) -> set[int]:
    """Pruned nodes holding the very token the model chose after the accepted path."""
    if s.bonus is None or not s.accepted_path:
        return set()
    last = s.accepted_path[-1]
    return {n.id for n in s.tree if n.pruned and n.parent == last and n.token == s.bonus}


def shown_lanes(trace: RunTrace, step: int, compact: bool) -> list[int]:
    """The lanes drawn, top to bottom: every lane of the run, or (compact) the root's and those
    holding a verified token or the token the model wanted next (no empty or pruned-only lane)."""
    if not compact:
        return list(range(lane_count(trace)))
    s = get_step(trace, step)
    wanted = wanted_ids(s)
    lanes = node_lanes(trace, s)
    return sorted({0} | {lanes[n.id] for n in s.tree if not n.pruned or n.id in wanted})

