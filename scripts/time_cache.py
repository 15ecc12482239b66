"""Time forward passes of the bundled model over transformers' DynamicCache and the buffered
cache (logitspec/runtime/kvcache.py), side by side in one process.

    python scripts/time_cache.py [--context 512 1500] [--rounds 12]

For each context length and n = 1, 2, 4, 8, 16 tree tokens, the two caches take turns
(same model, same tokens); prints the median milliseconds of each.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES = (1, 2, 4, 8, 16)


def main() -> int:
    import torch
    from transformers import DynamicCache

    from logitspec.runtime.kvcache import new_cache
    from logitspec.models import load_model
    from logitspec.runtime.threads import configure_threads
    from logitspec.core.trace import TreeNode
    from logitspec.core.verify import crop_cache, prepare_inputs, verify_tree

    ap = argparse.ArgumentParser()
    ap.add_argument("--context", type=int, nargs="+", default=[512, 1500])
    ap.add_argument("--rounds", type=int, default=12)
    a = ap.parse_args()
    configure_threads(None)
    model = load_model().model
    g = torch.Generator().manual_seed(0)
    trees = {n: [TreeNode(id=i, token=100 + i, parent=i - 1, depth=i, origin="root" if i == 0 else "g2")
                 for i in range(n)] for n in SIZES}
    with torch.inference_mode():
        for ctx_len in a.context:
            ctx = torch.randint(0, model.config.vocab_size, (1, ctx_len), generator=g)
            caches = {"DynamicCache": DynamicCache(config=model.config),
                      "buffered": new_cache(model.config, ctx_len + max(SIZES))}
            for cache in caches.values():
                model(input_ids=ctx, cache=cache, use_cache=True, logits_to_keep=1)
            times: dict[tuple[str, int], list[float]] = {}
            for r in range(a.rounds + 1):  # round 0 warms up
                for n in SIZES:
                    inputs = prepare_inputs(model, trees[n], ctx_len)
                    for name, cache in caches.items():
                        t = time.perf_counter()
                        verify_tree(model, cache, trees[n], inputs)
                        if r:
                            times.setdefault((name, n), []).append(time.perf_counter() - t)
                        crop_cache(cache, ctx_len)
            print(f"context {ctx_len}: median ms over {a.rounds} rounds")
            for n in SIZES:
                row = ", ".join(f"{name} {statistics.median(times[(name, n)]) * 1e3:.1f}" for name in caches)
                print(f"  n={n:2d}: {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
