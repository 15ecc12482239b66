"""The Token Recycling lane drafts what its authors' code drafts, tree for tree, on the fixture's
contexts (scripts/recycling_reference_fixtures.py recorded the authors' trees at a named commit;
the replay is tests/helpers/recycling_reference.py). The lane is driven through its drafter's own
calls: `draft` for each pass's tree, `observe_rows` for the rows its draft asked to hear."""
from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest
import torch

from helpers.recycling_reference import FIXTURE, K, digest, replay
from logitspec.core.retrieval import NgramPool
from logitspec.core.settings import DecodeSettings
from logitspec.drafters.recycling import RecyclingDrafter

REFERENCE = json.loads(gzip.decompress(FIXTURE.read_bytes()))
STATIC = DecodeSettings(tree="static", recycle_across_runs=False)


def lane_trees(settings: DecodeSettings, contexts: int | None = None) -> list[list[str]]:
    """The first `contexts` contexts (all by default) replayed by one drafter, its matrix shared by
    them all as the authors' is."""
    drafter = RecyclingDrafter(settings)
    drafter.started = True  # the prefill's row: their first pass computes it, the replay has no prefill
    vocab = REFERENCE["vocab"]
    pool, logits = NgramPool(tokens=[0]), torch.zeros(vocab)
    heard: dict[str, list] = {}

    def draft(root: int):
        d = drafter.draft(root, logits, pool, 1)
        heard["nodes"] = [d.nodes[i] for i in d.read_rows]
        return [n.token for n in d.nodes], [n.parent for n in d.nodes]

    def update(tokens: list[int], rows: list[list[int]]) -> None:
        nodes = heard["nodes"]  # read_rows: every node under "every", none under "computed"
        if nodes:
            drafter.observe_rows(nodes, scores([rows[n.id] for n in nodes], vocab))
        else:  # "computed": the rows the lazy head computed; the root's stands for them here
            drafter.observe_logits(tokens[:1], scores(rows[:1], vocab))

    return [[digest(t) for t in replay(c["tokens"], seed, vocab, draft, update)]
            for seed, c in enumerate(REFERENCE["contexts"][:contexts])]


def scores(rows: list[list[int]], vocab: int) -> torch.Tensor:
    """Logits rows [n, vocab] whose top-k, in order, are `rows`."""
    ranks = torch.arange(K, 0, -1, dtype=torch.float).expand(len(rows), K)
    return torch.zeros(len(rows), vocab).scatter_(1, torch.tensor(rows), ranks)


def test_the_fixture_holds_at_least_200_passes_over_several_categories():
    ctxs = REFERENCE["contexts"]
    assert sum(len(c["digests"]) for c in ctxs) >= 200
    assert len({c["name"].split("-")[0] for c in ctxs}) >= 5
    assert REFERENCE["reference"] == "Luowaterbi/TokenRecycling" and len(REFERENCE["commit"]) == 40


def test_the_static_lane_drafts_the_authors_trees_pass_for_pass():
    first = REFERENCE["contexts"][0]["whole"]
    drafted = lane_trees(STATIC)
    for c, mine in zip(REFERENCE["contexts"], drafted):
        theirs = c["digests"]
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        assert at is None and len(mine) == len(theirs), (c["name"], at, len(mine), len(theirs))
    assert len(first[0][0]) == 81  # the template's 80 nodes and the root, cold rows read as token 0


@pytest.mark.parametrize("change", [dict(recycle_unseen_rows="none"), dict(recycle_rows="computed")])
def test_each_named_departure_drafts_other_trees(change):
    """The options off the authors' behaviour are seen by the check: it is not blind to them."""
    drafted = lane_trees(replace(STATIC, **change), contexts=3)
    assert any(mine != c["digests"] for c, mine in zip(REFERENCE["contexts"], drafted))
