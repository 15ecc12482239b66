"""Record a race on the bundled model, as the app runs one, for the app's first screen.

    python scripts/record_race.py OUT.json [--question-id 242] [--max-new-tokens 128] [--k 64] [--pld] [--static] [--recycling]

The lanes are decoded exactly as the app's race decodes them (serve.race.model_lanes,
one step of each lane in turn, each on its own measured clock) and saved in one file with
the machine they ran on, so the page can say where the recorded figures came from.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from serve.race import interleave, model_lanes
from logitspec.analysis.race import result_of, save_race  # noqa: E402
from serve.model_cache import warm_cost_curves  # noqa: E402
from logitspec.core.settings import DecodeSettings  # noqa: E402
from logitspec.analysis.lanes import lane, race_order  # noqa: E402
from ui.form import RACED_ALWAYS  # noqa: E402
from logitspec.runtime.fewrows import cpu_description  # noqa: E402


def optional_lanes() -> list[str]:
    """The race lanes the app offers as checkboxes, in the lane table's order."""
    return [n for n in race_order() if n not in RACED_ALWAYS]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--question-id", type=int, default=242)
    ap.add_argument("--max-new-tokens", type=int, default=DecodeSettings().max_new_tokens)
    ap.add_argument("--k", type=int, default=DecodeSettings().k, help="next-next candidates a step keeps")
    for name in optional_lanes():  # --pld, --static, --recycling, ...: each race lane of logitspec/analysis/lanes.py
        ap.add_argument(f"--{name.removeprefix('logitspec-')}", action="append_const", const=name, dest="lanes",
                        default=[], help=f"race {lane(name).label} too")
    ap.add_argument("--questions", type=Path, default=ROOT / "data" / "spec_bench_subset.jsonl")
    a = ap.parse_args()
    qs = {q["question_id"]: q for q in map(json.loads, a.questions.read_text().splitlines()) if q}
    prompt = qs[a.question_id]["turns"][0]

    from logitspec.models import load_model
    from logitspec.runtime.threads import ModelThread, configure_threads

    thread = ModelThread()  # as the app's model cache loads, warms and decodes: all on one thread
    thread.call(configure_threads)
    lm = thread.call(load_model)
    thread.call(warm_cost_curves, lm)  # as the app does before its first race
    methods = list(RACED_ALWAYS) + [n for n in optional_lanes() if n in a.lanes]
    lanes = model_lanes(lm, prompt, methods, DecodeSettings(max_new_tokens=a.max_new_tokens, k=a.k), thread)
    for _ in interleave(lanes):
        pass
    traces = {ln.name: ln.trace for ln in lanes}
    res = result_of(traces)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    save_race(traces, a.out, machine=cpu_description())
    print(f"{a.out}: " + ", ".join(f"{n} {s.tokens_per_second:.1f} tokens/s" for n, s in res.stats.items())
          + f"; LogitSpec {res.speedups['logitspec']:.2f}x vanilla, lossless {res.lossless}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
