"""SuffixDecoding's drafts here against arctic-inference's own (its C++ suffix trees), on the same tokens.

Run with the vLLM venv, which holds arctic-inference (make .venv-vllm):
    .venv-vllm/bin/python scripts/compare_suffix_arctic.py
Random texts over small vocabularies (so suffixes repeat): a prompt, three earlier outputs and a
response added five tokens at a time; after each piece both draft with tree speculation and the
project's defaults (DecodeSettings' suffix_*). Prints how many drafts hold the same tokens, how many
the same score, match length and size (ties between equally likely children may be broken apart),
and each one's time per call.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arctic_inference.suffix_decoding import SuffixDecodingCache  # noqa: E402

from logitspec.core.settings import DecodeSettings  # noqa: E402
from logitspec.drafters.suffix import OUTPUT_TREE, PROMPT_TREE, OutputTree, SuffixTrie, best_speculation  # noqa: E402


def one_text(seed: int, s: DecodeSettings, tally: dict) -> None:
    rng = random.Random(seed)
    vocab = rng.choice([4, 8, 30])
    prompt = [rng.randrange(vocab) for _ in range(200)]
    earlier = [[rng.randrange(vocab) for _ in range(120)] for _ in range(3)]
    resp = [rng.randrange(vocab) for _ in range(60)]
    cache = SuffixDecodingCache(max_tree_depth=s.suffix_depth, max_cached_requests=100)
    out = OutputTree(s.suffix_depth, 10**6, 10**9)
    for i, e in enumerate(earlier):
        cache.start_request(f"e{i}", [0])
        cache.add_active_response(f"e{i}", e)
        cache.stop_request(f"e{i}")
        out.start().append(e)
    cache.start_request("r", prompt)
    local, active, mine = SuffixTrie(s.suffix_depth), [], out.start()
    active = local.extend(active, prompt)
    for j in range(0, len(resp), 5):
        piece = resp[j:j + 5]
        cache.add_active_response("r", piece)
        active = local.extend(active, piece)
        mine.append(piece)
        ctx = prompt + resp[: j + 5]
        t0 = time.perf_counter()
        d = cache.speculate("r", ctx[-s.suffix_depth:], max_spec_tokens=s.suffix_depth,
                            max_spec_factor=s.suffix_spec_factor, min_token_prob=s.suffix_min_prob, use_tree_spec=True)
        t1 = time.perf_counter()
        spec = best_speculation([(PROMPT_TREE, local), (OUTPUT_TREE, out.trie)], ctx, s, s.suffix_depth)
        t2 = time.perf_counter()
        tally["theirs"] += t1 - t0
        tally["ours"] += t2 - t1
        got = sorted((t, round(p, 6)) for t, _, p in spec.nodes) if spec else []
        tally["total"] += 1
        tally["tokens"] += got == sorted((t, round(p, 6)) for t, p in zip(d.token_ids, d.probs))
        tally["score"] += (abs((spec.score if spec else 0.0) - d.score) < 1e-6
                           and (spec.match_len if spec else 0) == d.match_len and len(got) == len(d.token_ids))


def main() -> None:
    s = DecodeSettings()
    tally = dict.fromkeys(("total", "tokens", "score", "ours", "theirs"), 0)
    for seed in range(30):
        one_text(seed, s, tally)
    n = tally["total"]
    print(f"{tally['tokens']}/{n} drafts hold the same tokens, {tally['score']}/{n} the same score, match length "
          f"and size; per call: here {tally['ours'] / n * 1e3:.2f} ms, arctic-inference {tally['theirs'] / n * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
