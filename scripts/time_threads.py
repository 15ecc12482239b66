"""Vanilla decoding speed by where the model is loaded and where its steps run.

    python scripts/time_threads.py [--max-new-tokens 128] [--runs 2]

Each setup runs in a fresh process (OpenMP keeps a thread's helper team for the life of
the thread): the bundled model loaded and decoded on the main thread; loaded on the main
thread and decoded on the model thread (`logitspec.runtime.threads.ModelThread`); loaded and
decoded on the model thread, as the app does. The prompt is the first summarisation
question of data/spec_bench_subset.jsonl. Prints tokens per second of each run (prefill
and decoding).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETUPS = {
    "main/main": "loaded and decoded on the main thread",
    "main/model": "loaded on the main thread, decoded on the model thread",
    "model/model": "loaded and decoded on the model thread (the app)",
}


def one_setup(setup: str, max_new_tokens: int, runs: int) -> None:
    from logitspec.bench.questions import load_questions
    from logitspec.decoders import decode
    from logitspec.models import load_model
    from logitspec.core.settings import DecodeSettings
    from logitspec.runtime.threads import ModelThread, configure_threads

    load_on, decode_on = setup.split("/")
    mt = ModelThread()
    here = (lambda fn, *a: fn(*a)) if load_on == "main" else mt.call
    here(configure_threads)
    lm = here(load_model)
    question = load_questions(ROOT / "data" / "spec_bench_subset.jsonl", ["summarization"], 1)[0]
    prompt = lm.encode_chat(question["turns"][0])
    settings = DecodeSettings(max_new_tokens=max_new_tokens, share_prefill=False)  # each timing pays its prefill
    speeds = []
    for _ in range(runs):
        steps = decode(lm.model, prompt, "vanilla", settings, lm.eos_ids)
        t = time.perf_counter()
        tokens = sum(len(s.tokens) for s in (mt.iterate(steps) if decode_on == "model" else steps))
        speeds.append(tokens / (time.perf_counter() - t))
    print(f"{SETUPS[setup]}: " + ", ".join(f"{v:.1f}" for v in speeds) + " tokens/s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--setup", choices=sorted(SETUPS), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.setup:
        one_setup(a.setup, a.max_new_tokens, a.runs)
        return 0
    for setup in SETUPS:
        done = subprocess.run([sys.executable, __file__, "--setup", setup, "--max-new-tokens",
                               str(a.max_new_tokens), "--runs", str(a.runs)], stderr=subprocess.DEVNULL)
        if done.returncode:
            print(f"{setup}: failed with exit code {done.returncode}", file=sys.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
