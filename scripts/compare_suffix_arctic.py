"""SuffixDecoding's drafts here against arctic-inference's own (its C++ suffix trees), on the same tokens.

Run with the vLLM venv, which holds arctic-inference (make .venv-vllm):
    .venv-vllm/bin/python scripts/compare_suffix_arctic.py
Random texts over small vocabularies (so suffixes repeat), five requests one after another (each
drafting from the earlier responses too): the lane's `SuffixDrafter` is called as the decoding loop
calls it (`draft(root, logits, pool, len(pool))`, the root just sampled and not yet in the pool),
arctic-inference's `SuffixDecodingCache` as vLLM's `suffix` proposer calls it (the sampled tokens
added, then `speculate` on the text's last `max_tree_depth` tokens). Each response goes in 1 to 4
tokens a step. Both modes (a tree, DecodeSettings' default, and vLLM's chain) and varied depths,
probability floors and spec factors; prints how many drafts are the same node for node (tokens,
parents, probabilities) and each one's time per call.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arctic_inference.suffix_decoding import SuffixDecodingCache  # noqa: E402

from logitspec.core.retrieval import NgramPool  # noqa: E402
from logitspec.core.settings import DecodeSettings  # noqa: E402
from logitspec.drafters.suffix import SuffixDrafter  # noqa: E402


def one_text(seed: int, tree: bool, tally: dict) -> None:
    rng = random.Random(seed)
    s = replace(DecodeSettings(), suffix_tree=tree, suffix_cache_requests=rng.choice([3, 10_000]),
                suffix_depth=rng.choice([8, 24]), suffix_min_prob=rng.choice([0.0, 0.1, 0.3]),
                suffix_spec_factor=rng.choice([0.5, 1.0, 2.0]))
    vocab, model = rng.choice([3, 4, 8, 30]), SimpleNamespace()  # a model of its own: a fresh output tree
    cache = SuffixDecodingCache(max_tree_depth=s.suffix_depth, max_cached_requests=s.suffix_cache_requests)
    for r in range(5):
        prompt = [rng.randrange(vocab) for _ in range(rng.randrange(5, 120))]
        resp = [rng.randrange(vocab) for _ in range(rng.randrange(10, 80))]
        lane, pool = SuffixDrafter.build(s, model), NgramPool(tokens=prompt)
        cache.start_request(r, prompt)
        done, sampled = 0, [resp[0]]
        while done < len(resp):
            cache.add_active_response(r, sampled)
            t0 = time.perf_counter()
            d = cache.speculate(r, (pool.tokens + [resp[done]])[-s.suffix_depth:], max_spec_tokens=s.suffix_depth,
                                max_spec_factor=s.suffix_spec_factor, min_token_prob=s.suffix_min_prob,
                                use_tree_spec=tree)
            t1 = time.perf_counter()
            nodes = lane.draft(resp[done], None, pool, len(pool)).nodes
            t2 = time.perf_counter()
            tally["theirs"] += t1 - t0
            tally["ours"] += t2 - t1
            tally["total"] += 1
            tally["same"] += [(n.token, n.parent - 1, n.accept_prob) for n in nodes[1:]] == \
                list(zip(d.token_ids, d.parents, d.probs))
            step = resp[done:done + rng.randint(1, 4)]  # the root and the drafts accepted after it
            pool.extend(step)
            sampled, done = resp[done + 1:done + len(step) + 1], done + len(step)
        cache.stop_request(r)


def main() -> None:
    for tree in (True, False):
        tally = dict.fromkeys(("total", "same", "ours", "theirs"), 0)
        for seed in range(30):
            one_text(seed, tree, tally)
        n = tally["total"]
        print(f"{'tree' if tree else 'chain'}: {tally['same']}/{n} drafts the same node for node; per call: "
              f"here {tally['ours'] / n * 1e3:.2f} ms, arctic-inference {tally['theirs'] / n * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
