"""scripts/chain_replay.py's step arithmetic: a step starts after the tokens the last one
accepted, and vLLM's mean accepted length counts drafted steps alone."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import chain_replay  # noqa: E402
from chain_replay import Case, replay  # noqa: E402

ROW = ([0], [0.0], [1.0])


def test_a_right_draft_moves_k_plus_one_tokens_and_a_wrong_one_one():
    out = list(range(100, 112))  # 12 tokens; the prefill samples the first
    case = Case([1, 2, 3], out, [ROW] * 15)
    right = replay([case], lambda cid, ctx, row: (case.prompt + out)[len(ctx):len(ctx) + 5], 5)
    # the prefill's 100 | 5 drafts 101-105 and the bonus 106 | 5 drafts 107-111, the output's end
    assert right == {"mean_accepted_length": 6.0, "tokens_per_step": 12 / 3, "drafted_steps": 2}
    wrong = replay([case], lambda cid, ctx, row: [7], 5)
    assert wrong == {"mean_accepted_length": 1.0, "tokens_per_step": 1.0, "drafted_steps": 11}
    none = replay([case], lambda cid, ctx, row: [], 5)
    assert none["mean_accepted_length"] is None and none["drafted_steps"] == 0


def test_ngram_continues_the_earliest_five_token_match():
    text = [1, 2, 3, 4, 5, 6, 9, 1, 2, 3, 4, 5, 7, 1, 2, 3, 4, 5]
    assert chain_replay.ngram_draft(text, 5) == [6, 9, 1, 2, 3]
    assert chain_replay.ngram_draft(text[:-1], 5) == []  # (1, 2, 3, 4) is four tokens
