"""RACER's lane drafts, node for node, what hkr04/RACER's own automaton drafted over the same token
histories and logits rows (scripts/racer_reference_fixtures.py): at fc494a3, their first public code
(tests/fixtures/racer_reference.json.gz), and at 4b25165, whose Logits Tree has the paper's breadths
(racer_reference_4b25165.json.gz), each with its racer_logits_rule."""
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from logitspec.core.settings import DecodeSettings
from logitspec.drafters.racer import RacerDrafter, logits_branches
from logitspec.drafters.recycling import SuccessorMatrix

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("racer_reference_fixtures", ROOT / "scripts" / "racer_reference_fixtures.py")
fixtures = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, fixtures)  # its dataclass looks its module up there
_spec.loader.exec_module(fixtures)


class Lane:
    """The lane's drafter fed as the reference's loop feeds its automaton (rows stored as heard)."""

    def __init__(self, **settings) -> None:
        self.s = DecodeSettings(tree="static", **settings)

    def start(self, prompt: list[int], rows) -> None:
        self.d = RacerDrafter(self.s)
        assert self.d.wants_prompt_rows  # the loop hands it every prompt position's row (loop.hear_prompt)
        logits = torch.stack([_scores(r) for _, r in rows])
        self.d.observe_logits([t for t, _ in rows], logits)
        self.text, self.first = list(prompt), logits[-1]

    def draft(self, root: int) -> list[list[int]]:
        nodes = self.d.draft(root, self.first, SimpleNamespace(tokens=self.text), len(self.text)).nodes
        paths = {0: [nodes[0].token]}
        for n in nodes[1:]:
            paths[n.id] = paths[n.parent] + [n.token]
        return list(paths.values())

    def heard(self, text: list[int], rows) -> None:
        for tok, r in rows:
            self.d.matrix.rows[tok] = tuple(r)
        self.text = list(text)


def _scores(row: list[int], vocab: int = 49152) -> torch.Tensor:
    """A logits row whose top-k is `row`, best first."""
    out = torch.zeros(vocab)
    out[list(row)] = torch.arange(len(row), 0, -1, dtype=torch.float)
    return out


REVISIONS = {"fc494a3": (fixtures.FIXTURE, "first-release"), "4b25165": (fixtures.LATER, "paper")}


def _fixture(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.mark.parametrize("commit", sorted(REVISIONS))
def test_the_fixture_covers_enough_contexts_and_categories(commit):
    doc = _fixture(REVISIONS[commit][0])
    assert doc["reference"] == "hkr04/RACER" and len(doc["commit"]) == 40 and doc["commit"].startswith(commit)
    assert len(doc["contexts"]) >= 200
    assert len({c["name"].rsplit("-", 1)[0] for c in doc["contexts"]}) >= 8


@pytest.mark.parametrize("commit", sorted(REVISIONS))
def test_the_lane_drafts_what_the_reference_drafted_step_by_step(commit):
    path, rule = REVISIONS[commit]
    doc, lane, bad = _fixture(path), Lane(racer_logits_rule=rule), []
    for c in doc["contexts"]:
        ctx = fixtures.Context(c["name"], c["tokens"], c["prompt"], c["seed"])
        got = fixtures.replay(ctx, lane)
        want = [tuple(s) for s in c["steps"]]
        if got != want:
            first = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            bad.append((c["name"], first, got[first:first + 1], want[first:first + 1]))
    assert not bad, f"{len(bad)} of {len(doc['contexts'])} contexts differ; first: {bad[:5]}"


def test_the_logits_tree_breadths_follow_the_paper_or_the_first_release():
    """The paper (and 4b25165) keeps the breadth at the root: the root's 8 children get 8, 4, 2, 1...;
    fc494a3 halves it there and keeps it at depth 1 (automaton.cpp:99): 4, 2, 1, 1..."""
    m = SuccessorMatrix(8)
    m.rows = {0: tuple(range(10, 18)), **{t: tuple(range(100 * t, 100 * t + 8)) for t in range(10, 18)}}
    first = [b.tokens[0] for b in logits_branches(m, 0, 64, 8, "first-release")]
    assert [first.count(t) for t in range(10, 18)] == [4, 2, 1, 1, 1, 1, 1, 1]
    paper = [b.tokens[0] for b in logits_branches(m, 0, 64, 8, DecodeSettings().racer_logits_rule)]
    assert [paper.count(t) for t in range(10, 18)] == [8, 4, 2, 1, 1, 1, 1, 1]
    with pytest.raises(ValueError):
        logits_branches(m, 0, 64, 8, "halved")


def test_a_token_with_no_row_reads_zeros_as_the_reference_or_nothing():
    """The reference's matrix starts all zeros (automaton.cpp:59-62): a token never run on has token 0 x k as its top-k."""
    m = SuccessorMatrix(8)
    m.rows = {5: (7, 8)}
    assert sorted(tuple(b.tokens) for b in logits_branches(m, 5, 3, 8, "paper", (0,) * 8)) == [(7, 0), (8,)]
    assert sorted(tuple(b.tokens) for b in logits_branches(m, 5, 3, 8, "paper")) == [(7,), (8,)]


def test_every_verified_nodes_row_is_asked_for_and_kept_deepest_last():
    """inference_racer.py:108-110: each tree node's row after the pass, rejected nodes too."""
    from logitspec.core.trace import TreeNode

    d = RacerDrafter(DecodeSettings(tree="static"))
    draft = d.draft(5, torch.zeros(32), SimpleNamespace(tokens=[1, 2, 3, 4]), 4)
    assert draft.read_rows == list(range(len(draft.nodes))) and not d.wants_logits
    nodes = [TreeNode(id=1, token=7, parent=0, depth=2, origin="copied"), TreeNode(id=0, token=7, parent=-1, depth=1, origin="copied")]
    rows = torch.zeros(2, 32)
    rows[0, 9], rows[1, 8] = 1.0, 1.0  # the deeper node's row puts 9 first, the shallower's 8
    d.observe_rows(nodes, rows)
    assert d.matrix.successors(7)[0] == 9
    assert RacerDrafter(DecodeSettings(tree="static", racer_rows="computed")).wants_logits


def test_the_automaton_and_matrix_outlive_a_run_as_the_references_one_ac():
    """inference_racer.py:262, 285: one automaton (and its state) for every question; off, each run its own."""
    model = SimpleNamespace(device=SimpleNamespace(type="cpu"))
    s = DecodeSettings(tree="static")
    first, second = RacerDrafter(s, model), RacerDrafter(s, model)
    assert first.ac is second.ac and first.matrix is second.matrix
    first.draft(3, torch.zeros(32), SimpleNamespace(tokens=list(range(12))), 12)
    assert second.ac.walk(list(range(10))) is not None  # the first run's prompt n-grams, for the next run
    assert RacerDrafter(DecodeSettings(tree="static", racer_nodes=500), model).ac is not first.ac  # other settings
    alone = DecodeSettings(tree="static", racer_across_runs=False)
    assert RacerDrafter(alone, model).ac is not RacerDrafter(alone, model).ac


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("rows", ["every", "computed"])
def test_every_prompt_positions_row_is_stored_as_the_references_prefill_stores_them(tiny_llama, rows):
    """inference_racer.py:51-53: the prefill's logits at every prompt position, top-k stored in order
    (a token's later position wins); shared or not, the prefill hands them over. "computed" stores none."""
    from logitspec.core.loop import decode_run

    prompt = [5, 9, 5, 17, 33, 9, 60, 2, 71, 5, 44]
    full = tiny_llama(input_ids=torch.tensor([prompt])).logits[0]
    last = {tok: i for i, tok in enumerate(prompt)}
    for share in (False, True, True):  # the second shared run copies the first one's prefill
        s = DecodeSettings(tree="static", max_new_tokens=1, racer_rows=rows, racer_across_runs=False,
                           share_prefill=share)
        d = RacerDrafter(s, tiny_llama)
        list(decode_run(tiny_llama, prompt, d, s))  # one token: the prefill's root, no draft
        if rows == "computed":
            assert d.matrix.rows == {}
            continue
        assert set(d.matrix.rows) == set(prompt)
        for tok, i in last.items():
            got, want = full[i][list(d.matrix.rows[tok])], torch.topk(full[i], 8).values
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
