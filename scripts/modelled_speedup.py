"""What the cost-aware tree's choices are worth with timing noise taken out.

    python scripts/modelled_speedup.py [--runs FILE | --record FILE] [--curve-from REPORT]
        [--limit-per-category 3] [--max-new-tokens 128] [--passes 2] [--drafting-ms 0,0]
        [--ngram-evidence-only] [--without-run-fit] [--fit-without-evidence] [--rate-memory 0.95]
        [--pool recent|longest]

Greedy output does not depend on the drafter, so the bundled model decodes each bench
question once with vanilla, and the logits behind every output token are kept (their top
65, from one forward pass over prompt and answer; `--record FILE` saves them, `--runs FILE`
reads them back). Prompt lookup and LogitSpec are then replayed over those runs in pure
Python: each step drafts from the real retrieval and the real cost-aware tree, the true
tokens decide what it accepts, and its forward pass is priced by one fixed curve c(n) (a
bench report's shortest-context curve with `--curve-from`, else the built-in default,
`logitspec.sizing.calibration`); vanilla's n tokens cost n - 1 passes of c(1). A replay takes
seconds where decoding takes minutes, so variants of the tree can be set side by side.

The modelled speed-up is vanilla's cost over the method's, per category and overall, on
the last of `--passes` passes over the questions (the earlier ones teach the process-wide
chances, as a bench's repetitions do). `--drafting-ms PLD,LOGITSPEC` adds a drafting time
per step (0 by default: the tree's choices alone). `--ngram-evidence-only` keys acceptance
by the matched n-gram's length alone (`logitspec.sizing.retrievaltree.evidence`), `--without-run-fit`
leaves each run's fit of the chances out (`costtree.RunFit`), `--fit-without-evidence` fits
it per origin and kind only (`costtree.fit_group` without the evidence level), and
`--rate-memory` sets how fast the run's rate forgets (`costtree.RATE_MEMORY`; 1 never forgets).
`--pool` sets which occurrence of an n-gram the pool continues (the paper's static tree is
replayed too, and every method's tokens per pass printed beside its speed-up).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOP = 65  # logits kept per output token: k = 64 candidates besides the root


def fixed_curve(report: Path | None):
    """The shortest-context curve of a bench report, or the built-in default, as a CostCurve."""
    from logitspec.sizing.curve import DEFAULT_MS, DEFAULT_SIZES, CostCurve

    if report is None:
        return CostCurve(list(DEFAULT_SIZES), [ms / 1e3 for ms in DEFAULT_MS], 512, "cpu", "float32")
    try:
        curves = json.loads(report.read_text())["cost_curves"]
        c = min(curves, key=lambda c: c["context_len"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"modelled_speedup: {report} holds no bench report with cost curves ({e})")
    return CostCurve(c["sizes"], c["seconds"], c["context_len"], c["device"], c["dtype"])


def record(questions: Path, limit: int, max_new_tokens: int) -> list[dict]:
    """Each question's prompt, vanilla output and the top logits behind every output token."""
    import torch

    from logitspec.bench.questions import load_questions
    from logitspec.decoders import decode
    from logitspec.models import load_model
    from logitspec.core.settings import DecodeSettings

    lm, runs = load_model(), []
    for q in load_questions(questions, None, limit):
        prompt = lm.encode_chat(q["turns"][0])
        steps = decode(lm.model, prompt, "vanilla", DecodeSettings(max_new_tokens=max_new_tokens), lm.eos_ids)
        tokens = [t for st in steps for t in st.tokens]
        with torch.inference_mode():
            logits = lm.model(input_ids=torch.tensor([prompt + tokens])).logits[0].float()
        rows = logits[len(prompt) - 1: len(prompt) - 1 + len(tokens)]  # rows[j] chose tokens[j]
        if rows.argmax(-1).tolist() != tokens:
            raise SystemExit(f"modelled_speedup: question {q['question_id']}: one pass over the answer "
                             "does not reproduce vanilla's tokens")
        top = torch.topk(rows, TOP)
        probs = torch.softmax(rows, -1).gather(1, top.indices)
        runs.append({"category": q["category"], "prompt": prompt, "tokens": tokens, "eos": sorted(lm.eos_ids),
                     "top_ids": top.indices.tolist(), "top_logits": top.values.tolist(), "top_probs": probs.tolist()})
    return runs


def candidates(run: dict, i: int, k: int) -> list:
    """The next-next candidates of output position i, as `speculate` makes them."""
    from logitspec.core.speculation import rank_candidates

    return rank_candidates(run["top_ids"][i], run["top_logits"][i], run["top_probs"][i], run["tokens"][i], k)[0]


def draft(run: dict, i: int, pool, method: str, s, drafter) -> tuple[int, int]:
    """One step at output position i: (tree tokens verified, drafted tokens accepted)."""
    from logitspec.analysis.budget import accepted, chain_accepted, prompt_lookup
    from logitspec.core.retrieval import retrieve

    root, truth = run["tokens"][i], run["tokens"][i:]
    if method == "pld":
        q = prompt_lookup(pool, root, s.pld_tokens)
        return 1 + len(q.continuation), chain_accepted(q.continuation, truth)
    cands = candidates(run, i, s.k)
    if method == "static":  # the paper's tree at its fixed capacity
        from dataclasses import replace

        from logitspec.core.tree import build_static_tree

        st = replace(s, tree="static")
        queries = retrieve(root, cands, pool, st)
        nodes = build_static_tree(root, queries[0], list(zip(cands, queries[1:])), st.capacity, st.continuation,
                                  st.rule)
        return sum(not n.pruned for n in nodes), accepted(nodes, truth)
    queries = retrieve(root, cands, pool, s)
    nodes, sizing = drafter.build(root, queries[0], list(zip(cands, queries[1:])), s.capacity, s.continuation,
                                  len(pool))
    return sizing.size, accepted(nodes, truth)


def replay(run: dict, method: str, s, curve, drafter=None) -> tuple[float, int]:
    """Modelled seconds and forward passes of one run decoded by `method`, lossless by construction."""
    from logitspec.core.retrieval import NgramPool

    tokens, i, seconds, passes = run["tokens"], 0, 0.0, 0
    pool = NgramPool(s.ngram_sizes, run["prompt"], s.pool, s.continuation)
    while i < len(tokens) - 1 and tokens[i] not in run["eos"]:
        size, acc = draft(run, i, pool, method, s, drafter)
        n = min(acc + 1, len(tokens) - i)
        if drafter is not None:
            drafter.observe(tokens[i:i + n + 1])
        seconds, passes = seconds + curve(size), passes + 1
        pool.extend(tokens[i:i + n])
        i += n
    return seconds, passes


def modelled(runs: list[dict], curve, passes: int, drafting: tuple[float, float], pool: str = "recent") -> dict:
    """Modelled seconds per method and category on the last of `passes` passes; under
    "passes:" + method, its forward passes (tokens per pass: vanilla's count over them)."""
    from logitspec.sizing.costtree import AcceptanceStats
    from logitspec.sizing.retrievaltree import RetrievalCostTree
    from logitspec.core.settings import DecodeSettings

    s, stats = DecodeSettings(max_new_tokens=max(len(r["tokens"]) for r in runs), pool=pool), AcceptanceStats()
    for _ in range(passes):
        cost: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for run in runs:
            cost["vanilla"][run["category"]] += (len(run["tokens"]) - 1) * curve(1)
            cost["tokens"][run["category"]] += len(run["tokens"])
            for method, extra in zip(("pld", "logitspec", "static"), (*drafting, drafting[1])):
                drafter = RetrievalCostTree(None, stats, curve) if method == "logitspec" else None
                seconds, steps = replay(run, method, s, curve, drafter)
                cost[method][run["category"]] += seconds + steps * extra
                cost["passes:" + method][run["category"]] += steps
    return cost


def print_table(cost: dict) -> None:
    cats = sorted(cost["vanilla"])
    print(f"{'category':<16}{'pld':>8}{'logitspec':>11}{'static':>8}   tokens per pass: pld, logitspec, static")

    def total(key: str, c: str) -> float:
        return sum(cost[key].values()) if c == "overall" else cost[key][c]

    for c in [*cats, "overall"]:
        row = [total("vanilla", c) / total(m, c) for m in ("pld", "logitspec", "static")]
        tpp = [total("tokens", c) / total("passes:" + m, c) for m in ("pld", "logitspec", "static")]
        print(f"{c:<16}{row[0]:>7.3f}x{row[1]:>10.3f}x{row[2]:>7.3f}x   " + ", ".join(f"{t:.3f}" for t in tpp))


def variants(args: argparse.Namespace) -> None:
    """Switch the tree to the variant the flags ask for."""
    from logitspec.sizing import costtree, retrievaltree

    if args.ngram_evidence_only:
        retrievaltree.evidence = lambda q: (q.matched_n or 0) if q is not None else 0
    if args.without_run_fit:
        costtree.RunFit.adjust = lambda self, group, p: p
    if args.fit_without_evidence:
        costtree.fit_group = lambda key, origin: (origin, key[0])
    if args.rate_memory is not None:
        costtree.RATE_MEMORY = args.rate_memory


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, help="replay runs saved by --record instead of decoding")
    p.add_argument("--record", type=Path, help="save the decoded runs here")
    p.add_argument("--curve-from", type=Path, help="a bench report with cost_curves")
    p.add_argument("--questions", type=Path, default=Path("data/spec_bench_subset.jsonl"))
    p.add_argument("--limit-per-category", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--drafting-ms", default="0,0", help="drafting time per step: PLD,LOGITSPEC")
    p.add_argument("--ngram-evidence-only", action="store_true")
    p.add_argument("--without-run-fit", action="store_true")
    p.add_argument("--fit-without-evidence", action="store_true")
    p.add_argument("--rate-memory", type=float, default=None)
    p.add_argument("--pool", default="recent", choices=("recent", "longest"),
                   help="which occurrence of an n-gram retrieval continues (DecodeSettings.pool)")
    args = p.parse_args()
    try:
        drafting = tuple(float(x) / 1e3 for x in args.drafting_ms.split(","))
        assert len(drafting) == 2
    except (ValueError, AssertionError):
        raise SystemExit(f"modelled_speedup: --drafting-ms wants two numbers, PLD,LOGITSPEC (got {args.drafting_ms!r})")
    if args.runs:
        try:
            runs = json.loads(args.runs.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"modelled_speedup: cannot read runs from {args.runs}: {e}")
    else:
        runs = record(args.questions, args.limit_per_category, args.max_new_tokens)
        if args.record:
            args.record.parent.mkdir(parents=True, exist_ok=True)
            args.record.write_text(json.dumps(runs))
    variants(args)
    print_table(modelled(runs, fixed_curve(args.curve_from), max(1, args.passes), drafting, args.pool))
    return 0


if __name__ == "__main__":
    sys.exit(main())
