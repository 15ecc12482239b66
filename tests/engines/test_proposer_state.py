"""The proposer's bookkeeping across passes, on a stand-in runner (no engine starts): each
request's row, its state kept by request id and dropped when it leaves the batch, a prefill
chunk, a pass whose rows are not the scheduled drafts', the scheduler's draft budget and the
counts' lines in vLLM's log."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from logitspec.engines import vllm_proposer
from logitspec.engines.vllm_proposer import LOG, LogitSpecProposer

VOCAB, K = 128, 3
PATTERN = [10, 11, 12, 13, 14, 15]  # A's text repeats it, so g1 continues it


class Model:
    def __init__(self) -> None:
        self.next_rows: list[int] = []  # the best token of each row of the next pass

    def compute_logits(self, hidden):
        logits = torch.zeros(len(self.next_rows), VOCAB)
        logits[torch.arange(len(self.next_rows)), torch.tensor(self.next_rows)] = 5.0
        return logits


class Runner:
    """What the proposer reads of vLLM's model runner: its drafter, execute_model (which calls
    compute_logits once) and the input batch's request ids and scheduled drafts."""

    def __init__(self, proposer) -> None:
        self.drafter, self.model = proposer, Model()
        self.input_batch = SimpleNamespace(req_ids=[], spec_token_ids=[])

    def load(self) -> None:
        self.drafter.load_model(self.model)

    def execute_model(self, scheduler_output) -> None:
        self.model.next_rows = scheduler_output.rows
        self.model.compute_logits(None)


@pytest.fixture
def setup():
    config = SimpleNamespace(speculative_config=SimpleNamespace(num_speculative_tokens=K),
                             model_config=SimpleNamespace(max_model_len=1000))
    proposer = LogitSpecProposer(config)
    runner = Runner(proposer)
    runner.load()
    return proposer, runner


def step(proposer, runner, batch: dict[str, tuple[list[int], list[int], list[int]]], rows: list[int],
         budget: int = K):
    """One pass over `batch`: request id -> (its tokens, its drafts scheduled, its sampled tokens);
    `budget` is the scheduler's num_spec_tokens_to_schedule."""
    runner.input_batch.req_ids = list(batch)
    runner.input_batch.spec_token_ids = [drafts for _, drafts, _ in batch.values()]
    runner.execute_model(SimpleNamespace(rows=rows, num_spec_tokens_to_schedule=budget))
    width = max(len(t) for t, _, _ in batch.values())
    tokens = np.zeros((len(batch), width), dtype=np.int64)
    for i, (toks, _, _) in enumerate(batch.values()):
        tokens[i, :len(toks)] = toks
    lengths = np.array([len(t) for t, _, _ in batch.values()])
    return proposer.propose([s for _, _, s in batch.values()], lengths, tokens)


def test_rows_state_and_departures(setup):
    proposer, runner = setup
    a = [1, 2] + PATTERN + [3] + PATTERN[:3]  # ends 10 11 12: g1 continues 13 14 15
    b = [20, 21, 22, 23]
    drafts = step(proposer, runner, {"A": (a, [], [12]), "B": (b, [], [23])}, rows=[12, 23])
    assert drafts[0] == [13, 14, 15] and drafts[1] == []
    assert proposer.counts.rows_read == 2 and proposer.counts.row_mismatch == 0
    # A verified its 3 drafts (4 rows) and accepted 2 + the bonus; B one row; C is a prefill chunk
    a2 = a + [13, 14, 99]
    rows = [13, 14, 99, 0, 24, 7]  # A's rows 0-3 (its last token from row 2), B's row 4, C's row 5
    drafts = step(proposer, runner, {"A": (a2, [13, 14, 15], [13, 14, 99]), "B": (b + [24], [], [24]),
                                     "C": ([5, 6], [], [])}, rows=rows)
    assert drafts[2] == []  # nothing sampled, nothing proposed
    assert proposer.counts.accepted["g1"] == 2
    assert proposer.counts.rows_read == 4 and proposer.counts.row_mismatch == 0
    assert set(proposer.states) == {"A", "B"}
    # A finished and left the batch: its state goes; B's stays
    step(proposer, runner, {"B": (b + [24, 25], [], [25])}, rows=[25])
    assert set(proposer.states) == {"B"}


@pytest.fixture
def said(caplog, monkeypatch):
    """The proposer's lines, each once: caught on its own logger (vLLM's, its parent, may or may not
    pass them on to the root, as vLLM's logging is configured)."""
    caplog.set_level(logging.INFO, logger=LOG.name)
    monkeypatch.setattr(LOG, "propagate", False)
    LOG.addHandler(caplog.handler)
    yield caplog
    LOG.removeHandler(caplog.handler)


def test_a_pass_whose_rows_are_not_the_drafts_reads_none_and_says_so_once(setup, said):
    proposer, runner = setup
    step(proposer, runner, {"A": ([1, 2, 3], [], [3])}, rows=[3])
    # two drafts scheduled (3 rows), but the pass made 2: no row can be trusted
    step(proposer, runner, {"A": ([1, 2, 3, 4], [7, 8], [4])}, rows=[4, 9])
    step(proposer, runner, {"A": ([1, 2, 3, 4, 5], [7, 8], [5])}, rows=[5])
    assert proposer.counts.steps_without_rows == 2 and proposer.counts.rows_read == 1
    warnings = [r for r in said.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "(2) are not its scheduled drafts' (3)" in warnings[0].getMessage()


def test_the_counts_are_logged_every_log_every_passes(setup, said, monkeypatch):
    proposer, runner = setup
    monkeypatch.setattr(vllm_proposer, "LOG_EVERY", 2)
    for n in range(5):
        step(proposer, runner, {"A": ([1, 2, 3 + n], [], [3 + n])}, rows=[3 + n])
    lines = [r.getMessage() for r in said.records if r.levelno == logging.INFO]
    assert len(lines) == 2 and lines[-1].startswith("LogitSpec proposer (g1=2,g2=1): 4 passes;")
    assert "rows read 4, mismatched 0" in lines[-1]


def test_the_schedulers_draft_budget_caps_the_chain(setup):
    proposer, runner = setup
    a = [1, 2] + PATTERN + [3] + PATTERN[:3]  # g1 continues 13 14 15 (K = 3)
    assert step(proposer, runner, {"A": (a, [], [12])}, rows=[12], budget=2)[0] == [13, 14]
    assert step(proposer, runner, {"A": (a + [13], [13, 14], [13])}, rows=[13, 0, 0], budget=0)[0] == []
    assert proposer.counts.proposals["none"] == 1 and proposer.counts.accepted["g1"] == 0


def test_importing_the_proposer_leaves_vllm_unloaded_where_it_is_installed():
    """vLLM loads when vLLM builds the proposer, not when logitspec or the module is imported."""
    import subprocess
    import sys

    code = "import sys, logitspec, logitspec.engines.vllm_proposer; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
