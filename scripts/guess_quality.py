"""How well can a step know its next-next token before its forward pass?

    python scripts/guess_quality.py [--limit-per-category 3] [--max-new-tokens 128]

Decodes the bench questions with LogitSpec (cost-aware tree, bundled model) and sets every
step's true x_{i+2} against what the step knew before verifying:
- whether it was among the first tokens drafted at all (g1's continuation or any of the k
  guesses), and among those a match backed;
- how often the single guess with the best estimated chance was right, with chances learned
  from the cost model's kinds (rank bucket, g1 and g2 n-gram lengths), from the guess's
  softmax probability in place of its rank, or from both. Rates are fitted on half of the
  steps and scored on the other half, then the other way round;
- the model's own earlier prediction after the root token (its top 4 the last time the root
  was an input, from a full forward pass over prompt and answer): how often it holds the
  right token where no match drafted it.
Prints the shares in percent of the steps that had an x_{i+2}.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RECYCLED = 4  # earlier predictions kept per token


def first_tokens(step) -> list[dict]:
    """The step's drafted first tokens (x_{i+2} guesses) with the evidence behind each."""
    g1 = step.queries[0]
    out: dict[int, dict] = {}
    if g1.continuation:
        out[g1.continuation[0]] = {"rank": None, "prob": None, "g1n": g1.matched_n or 0, "g2n": 0}
    for cand, q in zip(step.candidates, step.queries[1:]):
        d = out.setdefault(cand.token, {"g1n": 0})
        d.update(rank=cand.rank, prob=cand.prob, g2n=q.matched_n or 0)
    return [dict(token=t, **d) for t, d in out.items()]


def prob_bin(p: float | None) -> int:
    return -1 if p is None else min(12, int(-math.log2(max(p, 1e-9))))


def best_guess_right(steps: list[tuple[list[dict], int]], kind) -> float:
    """Share of steps whose best-estimated guess was x_{i+2}, rates cross-fitted on halves."""
    right = 0
    for half in (0, 1):
        seen: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        for i, (guesses, truth) in enumerate(steps):
            if i % 2 != half:
                for g in guesses:
                    c = seen[kind(g)]
                    c[0] += g["token"] == truth
                    c[1] += 1
        for i, (guesses, truth) in enumerate(steps):
            if i % 2 == half and guesses:
                def chance(g):
                    hit, n = seen.get(kind(g), (0, 0))
                    return (hit + 0.5) / (n + 2)
                right += max(guesses, key=chance)["token"] == truth
    return right / len(steps)


def tally(lm, prompt: list[int], settings, rows: list, count: dict) -> None:
    """One prompt's steps: each step's first-token guesses against the true x_(i+2), and what the
    model's own earlier logits at the root's last occurrence said."""
    import torch

    from logitspec.decoders import decode

    steps = [s for s in decode(lm.model, prompt, "logitspec", settings, lm.eos_ids)]
    seq = list(prompt) + [t for s in steps for t in s.tokens]
    with torch.inference_mode():
        earlier = lm.model(input_ids=torch.tensor([seq])).logits[0].topk(RECYCLED, dim=-1).indices.tolist()
    last_seen: dict[int, int] = {}
    pos = 0
    for step in steps:
        while pos < step.context_len:  # positions already in the context before this step
            last_seen[seq[pos]] = pos
            pos += 1
        truth = list(step.tokens) + ([step.bonus] if step.bonus is not None else [])
        if not step.forward or len(truth) < 2:
            continue
        guesses, x2 = first_tokens(step), truth[1]
        rows.append((guesses, x2))
        count["steps"] += 1
        count["drafted"] += any(g["token"] == x2 for g in guesses)
        backed = {g["token"] for g in guesses if g["g1n"] or g["g2n"]}
        count["backed"] += x2 in backed
        j = last_seen.get(step.root)
        if j is not None:
            count["root seen"] += 1
            count["earlier top-1 right"] += earlier[j][0] == x2
            count["earlier top-4 adds it"] += x2 in earlier[j] and x2 not in backed
            g1 = step.queries[0]
            count["g1 right where root seen"] += bool(g1.continuation) and g1.continuation[0] == x2


def report(questions: int, rows: list, count: dict) -> None:
    from logitspec.sizing.costtree import rank_bucket

    n = count["steps"]
    print(f"{questions} questions, {n} steps with a known x_(i+2)")
    print(f"x_(i+2) among the drafted first tokens: {100 * count['drafted'] / n:.1f}%, "
          f"among those a match backed: {100 * count['backed'] / n:.1f}%")
    kinds = {
        "rank, g1 n, g2 n (the cost model's kinds)": lambda g: (rank_bucket(g["rank"]), g["g1n"], g["g2n"]),
        "probability, g1 n, g2 n": lambda g: (prob_bin(g["prob"]), g["g1n"], g["g2n"]),
        "rank, probability, g1 n, g2 n": lambda g: (rank_bucket(g["rank"]), prob_bin(g["prob"]), g["g1n"], g["g2n"]),
    }
    for label, kind in kinds.items():
        print(f"best-estimated guess right, chances from {label}: {100 * best_guess_right(rows, kind):.1f}%")
    seen = count["root seen"]
    print(f"root seen as an input before: {100 * seen / n:.1f}% of steps; there the model's earlier top-1 "
          f"was right {100 * count['earlier top-1 right'] / max(1, seen):.1f}% (g1: "
          f"{100 * count['g1 right where root seen'] / max(1, seen):.1f}%), and its top {RECYCLED} held x_(i+2) "
          f"where no match drafted it in {100 * count['earlier top-4 adds it'] / n:.1f}% of all steps")


def main() -> int:
    from logitspec.bench.questions import load_questions
    from logitspec.sizing.costcurve import warm_up
    from logitspec.models import load_model
    from logitspec.core.settings import DecodeSettings
    from logitspec.runtime.threads import configure_threads

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=Path("data/spec_bench_subset.jsonl"))
    ap.add_argument("--limit-per-category", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    a = ap.parse_args()
    configure_threads(None)
    lm = load_model()
    questions = load_questions(a.questions, None, a.limit_per_category)
    prompts = [lm.encode_chat(q["turns"][0]) for q in questions]
    settings = DecodeSettings(max_new_tokens=a.max_new_tokens)
    warm_up(lm.model, max(map(len, prompts)) + a.max_new_tokens, settings.capacity)
    rows: list[tuple[list[dict], int]] = []
    count: dict[str, int] = defaultdict(int)
    for prompt in prompts:
        tally(lm, prompt, settings, rows, count)
    report(len(prompts), rows, count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
