"""LogitSpec inside vLLM is lossless: greedy outputs equal vLLM's own without speculation,
token for token, at batch 1 and batch 8, and every last-logits row read is the row that chose
the request's last token. Each engine runs once for the module, through the bench's runner."""
from __future__ import annotations

import pytest

from helpers.vllm_runs import MAX_TOKENS, decode

PROPOSERS = ("logitspec", "logitspec@precise")  # the proposer under its default rule and its precise one


@pytest.fixture(scope="module")
def runs(plain, model_dir, questions_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("engines")
    return {"none": plain, **{m: decode(m, model_dir, questions_file, out) for m in PROPOSERS}}


@pytest.mark.parametrize("proposer", PROPOSERS)
@pytest.mark.parametrize("batch", [1, 8])
def test_greedy_outputs_equal_vllm_without_speculation(runs, batch, proposer):
    plain, spec = runs["none"][batch], runs[proposer][batch]
    assert len(plain["tokens"]) == 8
    for i, (a, b) in enumerate(zip(plain["tokens"], spec["tokens"])):
        assert b == a, f"prompt {i} at batch {batch}: first difference at token " \
                       f"{next(j for j, (x, y) in enumerate(zip(a + [None], b + [None])) if x != y)}"


@pytest.mark.parametrize("proposer", PROPOSERS)
@pytest.mark.parametrize("batch", [1, 8])
def test_every_row_read_is_the_row_that_chose_the_last_token(runs, batch, proposer):
    """Under greedy decoding the best entry of the row read for a request is its last token:
    a row of another request, or of another position, would not be."""
    counts = runs[proposer][batch]["logitspec"]
    assert counts["rows_read"] >= 8 * (MAX_TOKENS // 6)  # nearly every step of every request reads one
    assert counts["row_mismatch"] == 0
    assert counts["steps_without_rows"] == 0


@pytest.mark.parametrize("proposer", PROPOSERS)
def test_the_proposer_drafted_and_vllm_accepted(runs, proposer):
    """The engine ran LogitSpec's drafts under its rule: vLLM counted them and accepted some,
    and the precise rule drafted on fewer steps than the default."""
    spec = runs[proposer][8]["spec"]
    assert spec["vllm:spec_decode_num_draft_tokens"] > 0
    assert spec["vllm:spec_decode_num_accepted_tokens"] > 0
    counts = runs[proposer][8]["logitspec"]
    assert counts["proposals"]["g1"] + counts["proposals"]["g2"] > 0
    drafted = {p: runs[p][8]["spec"]["vllm:spec_decode_num_drafts"] for p in PROPOSERS}
    assert drafted["logitspec@precise"] < drafted["logitspec"]
