"""scripts/chain_replay.py's `ngram` is vLLM's own: on texts with and without repeats its
draft equals vLLM's n-gram proposer's (5-gram matches, its defaults) for every prefix."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import chain_replay  # noqa: E402


def test_the_replays_ngram_drafts_what_vllms_does():
    from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as vllm_ngram

    rng, drafted = random.Random(0), 0
    for _ in range(40):
        phrase = [rng.randrange(6) for _ in range(rng.randrange(3, 9))]
        text = [rng.randrange(6) for _ in range(rng.randrange(0, 6))]
        while len(text) < 60:  # phrases repeated between random tokens: matches of many lengths and places
            text += phrase if rng.random() < 0.5 else [rng.randrange(6)]
        for end in range(1, len(text) + 1):
            want = vllm_ngram(np.array(text[:end]), 5, 5, 4096, 5).tolist()
            assert chain_replay.ngram_draft(text[:end], 5) == want, (text[:end], want)
            drafted += bool(want)
    assert drafted > 100  # the texts did exercise matches
