"""The verified tree as a networkx DiGraph: shared prefixes merged, origins and fates as the
trace records them, node-link JSON that round-trips, and a tidy layout without overlaps."""
from __future__ import annotations

import json

import networkx as nx
import pytest

from helpers.paths import FIXTURES
from logitspec.core.trace import RunTrace
from visual.trie import drafted_graph, node_link_json, step_graph, tidy_positions, trie_figure


@pytest.fixture(scope="module")
def summ() -> RunTrace:
    return RunTrace.load(FIXTURES / "summarization-241.json.gz")


def _chains(step) -> list[tuple[str, list[int]]]:
    """(lookup label, tokens under the root) for every query, read straight off the records."""
    cands = {c.rank: c.token for c in step.candidates}
    out = []
    for q in step.queries:
        if q.kind == "g2":
            out.append((f"g2 rank {q.candidate_rank}", [cands[q.candidate_rank], *q.continuation]))
        else:
            out.append(("g1" if q.kind == "g1" else "PLD", list(q.continuation)))
    return out


def _path(step, node_id: int) -> list[int]:
    by_id = {n.id: n for n in step.tree}
    toks = []
    while node_id > 0:
        toks.append(by_id[node_id].token)
        node_id = by_id[node_id].parent
    return toks[::-1]


def test_the_graph_is_the_trace_tree_with_shared_prefixes_merged(summ):
    shared_seen = 0
    for i, step in enumerate(summ.steps):
        g = step_graph(summ, i)
        assert g.number_of_nodes() == len(step.tree)
        assert nx.is_arborescence(g)
        for n in g:  # a trie: no two children of a node hold the same token
            kids = [g.nodes[k]["token"] for k in g.successors(n)]
            assert len(kids) == len(set(kids)), f"step {i}: node {n} has a repeated child token"
        for n in step.tree:
            if n.id == 0:
                continue
            path = _path(step, n.id)
            want = [label for label, chain in _chains(step) if chain[:len(path)] == path]
            assert sorted(g.nodes[n.id]["sources"]) == sorted(set(want)), f"step {i}, node {n.id}"
            shared_seen += len(want) > 1
    assert shared_seen > 0, "the fixture holds branches that share a prefix; none was found shared"


def test_origins_and_fates_follow_the_trace(summ):
    i = max(range(len(summ.steps)), key=lambda j: len(summ.steps[j].tokens))
    step = summ.steps[i]
    g = step_graph(summ, i)
    on_path = set(step.accepted_path)
    for n in step.tree:
        d = g.nodes[n.id]
        assert (d["token"], d["depth"], d["origin"], d["rank"]) == (n.token, n.depth, n.origin, n.rank)
        assert d["position_id"] == step.context_len + n.depth
        want = "pruned" if n.pruned else ("accepted" if n.id in on_path else "rejected")
        assert d["fate"] == want
        assert d["origin_label"] == {"root": "root", "g1": "g1", "pld": "PLD"}.get(n.origin, f"g2 rank {n.rank}")
    accepted = [n for n in g if g.nodes[n]["fate"] == "accepted"]
    assert sorted(accepted) == sorted(step.accepted_path) and len(accepted) == len(step.tokens) >= 2
    assert [g.nodes[n]["token"] for n in step.accepted_path] == step.tokens
    assert g.graph["bonus"] == step.bonus


def test_node_link_json_round_trips(summ):
    data = json.loads(node_link_json(summ, 4))
    assert {"nodes", "links"} <= set(data) and data["links"]
    back = nx.node_link_graph(data, directed=True, multigraph=False, edges="links")
    g = step_graph(summ, 4)
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert sorted(back.edges(data=True)) == sorted(g.edges(data=True))
    assert back.graph == g.graph


def test_the_drafted_trie_holds_every_tree_node_and_pruning_removes_the_rest(summ):
    for i in (4, 10, 31):
        step, d = summ.steps[i], drafted_graph(summ, i)
        kept = {d.nodes[n]["tree_id"] for n in d if d.nodes[n]["tree_id"] is not None}
        assert kept == {n.id for n in step.tree}
        assert sum(d.nodes[n]["verified"] for n in d) == sum(not n.pruned for n in step.tree)
        prefixes = {tuple(chain[:j]) for _, chain in _chains(step) for j in range(1, len(chain) + 1)}
        assert d.number_of_nodes() == 1 + len(prefixes)


def test_tidy_layout_centres_parents_and_never_overlaps(summ):
    g = step_graph(summ, 31)
    pos = tidy_positions(g)
    assert set(pos) == set(g)
    for n in g:
        kids = sorted(g.successors(n))
        assert pos[n][0] == g.nodes[n]["depth"]
        if kids:
            assert pos[n][1] == (pos[kids[0]][1] + pos[kids[-1]][1]) / 2
    leaves = [pos[n][1] for n in g if g.out_degree(n) == 0]
    assert sorted(leaves) == list(range(len(leaves)))
    fig = trie_figure(summ, 31)
    assert fig.layout.meta["nodes"] == len(summ.steps[31].tree)


def test_the_app_trie_takes_its_containers_width_and_slides_through_deep_tries(summ):
    deep = max(range(len(summ.steps)), key=lambda i: max((n.depth for n in summ.steps[i].tree), default=0))
    page = trie_figure(summ, deep)
    app = trie_figure(summ, deep, fit=True)
    assert page.layout.width and page.layout.width > 1000  # laid out at its own pitch for a page
    assert app.layout.width is None and app.layout.autosize
    assert app.layout.xaxis.rangeslider.visible and app.layout.xaxis.range[1] < page.layout.xaxis.range[1]
