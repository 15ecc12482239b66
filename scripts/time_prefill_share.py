"""A race's lanes with one shared prefill against each lane prefilling its own prompt.

    python scripts/time_prefill_share.py [--max-new-tokens 32] [--repeats 3]

Runs the race's three default lanes (vanilla, prompt lookup, LogitSpec) one after another on
the bundled model, as a race's first steps do, with `share_prefill` on and off in turn (paired,
alternating which goes first), for a short chat prompt and a summary of two Spec-Bench articles.
Prints the wall seconds of all three lanes, min / median / max over the repeats.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LANES = ("vanilla", "pld", "logitspec")


def prompts() -> dict[str, str]:
    with (ROOT / "data" / "spec_bench_subset.jsonl").open(encoding="utf-8") as f:
        turns = {int(r["question_id"]): r["turns"][0] for r in map(json.loads, f) if r}
    articles = "\n\n".join(turns[q].removeprefix("Summarize: ") for q in (241, 242))
    return {"chat": "Hi! How are you today?", "two articles": f"Summarize the two articles below.\n\n{articles}"}


def lanes_seconds(lm, text: str, settings) -> tuple[float, bool]:
    """Wall seconds of the three lanes, and whether the later ones copied the prefill."""
    from logitspec.core.profile import profile_of
    from logitspec.runner import run_trace

    if profile_of(lm.model).prefills:
        profile_of(lm.model).prefills.clear()  # every race starts from a prompt not yet run
    t0 = time.perf_counter()
    traces = [run_trace(lm, text, m, settings) for m in LANES]
    return time.perf_counter() - t0, all(t.prefill_reused for t in traces[1:])


def main(argv: list[str] | None = None) -> None:
    from logitspec.core.settings import DecodeSettings
    from logitspec.models import load_model
    from logitspec.runtime.threads import configure_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    configure_threads()
    lm = load_model("bundled")
    base = DecodeSettings(max_new_tokens=args.max_new_tokens)
    for name, text in prompts().items():
        n = len(lm.encode_chat(text))
        lanes_seconds(lm, text, base)  # warm-up: allocations, the cost curve
        got: dict[bool, list[float]] = {True: [], False: []}
        for r in range(args.repeats):
            for share in ((True, False) if r % 2 == 0 else (False, True)):
                seconds, copied = lanes_seconds(lm, text, replace(base, share_prefill=share))
                assert copied == share
                got[share].append(seconds)
        for share, xs in got.items():
            print(f"{name} ({n} prompt tokens), {'one shared prefill' if share else 'a prefill per lane'}: "
                  f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f} s")


if __name__ == "__main__":
    main()
