"""What a decoding step spends between forward passes, phase by phase, timed inside decoding.

    python scripts/time_phases.py [--categories coding,extraction,translation] [--max-new-tokens 128]

Decodes the first bench question of each category with prompt lookup and LogitSpec on the
bundled model: once to warm up, once plain (the steps' own draft and bookkeeping seconds,
per method and question) and once with a timer around each phase of a step (speculate,
retrieve, build the tree, learn, the pass's inputs, the cache compaction; ms per call).
The plain run also times the garbage collector's pauses (`gc.callbacks`), which land in
whichever phase, or forward pass, allocates when a collection is due.
The timers add a little to what they time, so the two tables are read apart. Run it alone:
another process at work changes every figure.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def timed(store: dict[str, list[float]], name: str, fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        store[name].append(time.perf_counter() - t)
        return out
    return wrapper


class CollectorPauses:
    """Seconds the garbage collector spends, per generation, while installed."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._start

    def __enter__(self) -> "CollectorPauses":
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


def wrap_phases(store: dict[str, list[float]]) -> None:
    """Put a timer around each phase, where LogitSpec's drafter and the loop and retrievaltree.py look it up."""
    from logitspec.core import logitspec_drafter, loop
    from logitspec.sizing import retrievaltree

    for module, name in ((logitspec_drafter, "speculate"), (logitspec_drafter, "retrieve"), (loop, "prepare_inputs"),
                         (loop, "compact_cache")):
        setattr(module, name, timed(store, name, getattr(module, name)))
    tree = retrievaltree.RetrievalCostTree
    tree.build = timed(store, "build the tree", tree.build)
    tree.observe = timed(store, "learn", tree.observe)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=Path, default=Path("data/spec_bench_subset.jsonl"))
    p.add_argument("--categories", default="coding,extraction,translation")
    p.add_argument("--max-new-tokens", type=int, default=128)
    args = p.parse_args(argv)

    from logitspec.bench.questions import load_questions
    from logitspec.decoders import decode
    from logitspec.models import load_model
    from logitspec.runtime.threads import configure_threads
    from logitspec.core.settings import DecodeSettings

    configure_threads()
    lm = load_model(None, None, "float32")
    wanted = args.categories.split(",")
    questions = [q for q in load_questions(args.questions, None, 1) if q["category"] in wanted]
    prompts = [(q["category"], lm.encode_chat(q["turns"][0])) for q in questions]
    s = DecodeSettings(max_new_tokens=args.max_new_tokens)

    def run(method: str, prompt: list[int]) -> list:
        return [r for r in decode(lm.model, prompt, method, s, lm.eos_ids) if r.forward]

    for _, prompt in prompts:  # warm-up: the cost curve, the kernel, the process-wide chances
        for method in ("pld", "logitspec"):
            run(method, prompt)
    print("per step, ms      draft  bookkeeping  forward  steps  collector (young, middle, full)")
    for category, prompt in prompts:
        for method in ("pld", "logitspec"):
            with CollectorPauses() as pauses:
                steps = run(method, prompt)
            draft, book, fwd = (1e3 * statistics.mean(getattr(r, f) for r in steps)
                                for f in ("draft_seconds", "bookkeeping_seconds", "forward_seconds"))
            collector = ", ".join(f"{1e3 * s / len(steps):.3f}" for s in pauses.seconds)
            print(f"{category:12s} {method:9s} {draft:6.3f} {book:12.3f} {fwd:8.2f} {len(steps):6d}  {collector}")
    store: dict[str, list[float]] = defaultdict(list)
    wrap_phases(store)
    for _, prompt in prompts:
        for method in ("pld", "logitspec"):
            run(method, prompt)
    print("\nper call, ms (timers around each phase)")
    for name, secs in store.items():
        print(f"{name:16s} {1e3 * statistics.mean(secs):6.3f}  ({len(secs)} calls)")


if __name__ == "__main__":
    main()
