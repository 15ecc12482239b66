"""Record LogitSpec traces on the bundled model for shipping and for test fixtures.

    python scripts/record_traces.py OUT_DIR [--max-new-tokens N] [--tree static|cost] [QUESTION_ID ...]

Each trace is saved as OUT_DIR/<category>-<question_id>.json (with "-cost" before ".json" for
the cost-aware tree). Questions come from the
shipped Spec-Bench subset (data/spec_bench_subset.jsonl).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logitspec.core.settings import DecodeSettings  # noqa: E402
from logitspec.models import load_model  # noqa: E402
from logitspec.runner import run_trace  # noqa: E402
from logitspec.runtime.threads import configure_threads  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("ids", nargs="*", type=int)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--tree", default="static", choices=["static", "cost"])
    ap.add_argument("--questions", type=Path, default=ROOT / "data" / "spec_bench_subset.jsonl")
    a = ap.parse_args()
    qs = [json.loads(line) for line in a.questions.read_text().splitlines() if line.strip()]
    if a.ids:
        qs = [q for q in qs if q["question_id"] in a.ids]
    configure_threads()
    lm = load_model()
    a.out.mkdir(parents=True, exist_ok=True)
    for q in qs:
        tr = run_trace(lm, q["turns"][0], "logitspec", DecodeSettings(max_new_tokens=a.max_new_tokens, tree=a.tree))
        suffix = "-cost" if a.tree == "cost" else ""
        path = a.out / f"{q['category']}-{q['question_id']}{suffix}.json"
        tr.save(path)
        print(f"{path}: {len(tr.tokens)} tokens, {tr.forward_steps} steps, "
              f"{tr.mean_accepted_tokens:.2f} tokens/step, {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
