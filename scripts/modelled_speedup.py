"""What the cost-aware tree's choices are worth with timing noise taken out.

    python scripts/modelled_speedup.py --curve-from artifacts/bench/report.json \
        [--limit-per-category 3] [--max-new-tokens 128] [--ngram-evidence-only]
        [--without-run-fit] [--rate-memory 0.95]

Decodes the bench questions with vanilla, prompt lookup and LogitSpec (cost-aware tree,
bundled model, greedy) while every tree is sized by one fixed curve c(n), the one a bench
report measured, and prices every forward pass by that curve: vanilla's n tokens cost
n * c(1), a step that verified n tokens costs c(n). The modelled speed-up is vanilla's
cost over the method's, per category and overall; drafting time is left out, so this
isolates what the tree's choices buy. `--ngram-evidence-only` keys acceptance by the
matched n-gram's length alone, as the tree did before it counted how far back a match
agrees (`logitspec.costtree.evidence`), to set the two side by side. `--without-run-fit`
leaves each run's fit of the chances out (`costtree.RunFit`), and `--rate-memory` sets how
fast the run's rate forgets (`costtree.RATE_MEMORY`; 1 never forgets).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def fixed_curve(report: Path):
    """The shortest-context curve of a bench report, as a CostCurve."""
    from logitspec.costcurve import CostCurve

    try:
        curves = json.loads(report.read_text())["cost_curves"]
        c = min(curves, key=lambda c: c["context_len"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"modelled_speedup: {report} holds no bench report with cost curves ({e})")
    return CostCurve(c["sizes"], c["seconds"], c["context_len"], c["device"], c["dtype"])


def priced_run(lm, prompt: list[int], method: str, settings, curve) -> float:
    """Modelled seconds of one decoding run with trees sized by `curve`."""
    from logitspec.decoders import decode

    return sum(curve(sum(not n.pruned for n in step.tree))
               for step in decode(lm.model, prompt, method, settings, [lm.tokenizer.eos_token_id]) if step.forward)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--curve-from", type=Path, required=True, help="a bench report with cost_curves")
    p.add_argument("--questions", type=Path, default=Path("data/spec_bench_subset.jsonl"))
    p.add_argument("--limit-per-category", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--ngram-evidence-only", action="store_true")
    p.add_argument("--without-run-fit", action="store_true")
    p.add_argument("--rate-memory", type=float, default=None)
    args = p.parse_args()

    from logitspec import costtree
    from logitspec.bench.questions import load_questions
    from logitspec.models import load_model
    from logitspec.settings import DecodeSettings

    curve = fixed_curve(args.curve_from)
    # Every tree is sized by the fixed curve: no live curve, no probes.
    costtree.CostAwareDrafter._curve = lambda self, context_len, capacity: (curve, None)
    if args.ngram_evidence_only:
        costtree.evidence = lambda q: (q.matched_n or 0) if q is not None else 0
    if args.without_run_fit:
        costtree.RunFit.adjust = lambda self, group, p: p
    if args.rate_memory is not None:
        costtree.RATE_MEMORY = args.rate_memory
    lm = load_model()
    settings = DecodeSettings(max_new_tokens=args.max_new_tokens)
    cost: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for q in load_questions(args.questions, None, args.limit_per_category):
        prompt = lm.encode_chat(q["turns"][0])
        for method in ("vanilla", "pld", "logitspec"):
            cost[method][q["category"]] += priced_run(lm, prompt, method, settings, curve)
    cats = sorted(cost["vanilla"])
    print(f"{'category':<16}{'pld':>8}{'logitspec':>11}")
    for c in [*cats, "overall"]:
        base = sum(cost["vanilla"].values()) if c == "overall" else cost["vanilla"][c]
        row = [base / (sum(cost[m].values()) if c == "overall" else cost[m][c]) for m in ("pld", "logitspec")]
        print(f"{c:<16}{row[0]:>7.3f}x{row[1]:>10.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
