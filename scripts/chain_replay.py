"""Replay the vLLM proposer's chain rules, and vLLM's `ngram`, over greedy outputs: what each
would have drafted and vLLM accepted at every step, without vLLM.

    python scripts/chain_replay.py --per-category 4 --skip-bench-questions \
        --rules "default;precise;g1=8,g2=2,rank=1"

Under greedy decoding the output is fixed, so a step's acceptance is the draft's agreement
with the output that follows; a step starts after the tokens the last one accepted, as in
vLLM. The rows are the bundled model's own logits over prompt + output (transformers, float32),
the rows vLLM's pass would hand the proposer up to rounding. `ngram` is vLLM's rule rewritten:
the longest suffix match of 5 tokens (its default, min = max = 5), its earliest occurrence, K
tokens after it. The replay chose `precise` on questions the vLLM bench does not use
(docs/engines.md); the bench measures the rules inside vLLM.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logitspec.core.retrieval import NgramPool  # noqa: E402
from logitspec.core.settings import DecodeSettings  # noqa: E402
from logitspec.core.speculation import rank_candidates  # noqa: E402
from logitspec.engines.vllm_proposer import ChainRule, best_chain, rule_of  # noqa: E402

BENCH_IDS = {81, 91, 101, 111, 121, 131, 141, 151, 161, 241, 321, 401, 481}  # the vLLM bench's 13 questions
NGRAM_N = 5  # vLLM's prompt_lookup_min and _max when neither is set


@dataclass
class Case:
    prompt: list[int]
    output: list[int]
    rows: list[tuple[list[int], list[float], list[float]]]  # per position: top-(k + 1) ids, logits, probs


def greedy_cases(questions: list[dict], max_new: int, k: int) -> list[Case]:
    import torch

    from logitspec.models import load_model

    lm, out = load_model("bundled"), []
    for q in questions:
        prompt = lm.encode_chat(q["turns"][0])
        ids = torch.tensor([prompt])
        with torch.no_grad():
            full = lm.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=max_new)
            logits = lm.model(full).logits[0].float()
            top = torch.topk(logits, k + 1, dim=-1)
            probs = torch.softmax(logits, -1).gather(-1, top.indices)
        rows = list(zip(top.indices.tolist(), top.values.tolist(), probs.tolist()))
        out.append(Case(prompt, full[0, len(prompt):].tolist(), rows))
    return out


def ngram_draft(ctx: list[int], k: int) -> list[int]:
    n = NGRAM_N
    if len(ctx) <= n:
        return []
    tail = ctx[-n:]
    for i in range(len(ctx) - n):
        if ctx[i:i + n] == tail:
            return ctx[i + n:i + n + k]
    return []


def proposer(rule: ChainRule, s: DecodeSettings, k: int):
    """The proposer's draft for one request (a fresh pool per case, grown as the request is)."""
    pools: dict[int, NgramPool] = {}

    def draft(case_id: int, ctx: list[int], row) -> list[int]:
        pool = pools.setdefault(case_id, NgramPool(s.ngram_sizes, keep=s.pool, span=s.continuation))
        pool.extend(ctx[len(pool):-1])
        n = rule.candidates(s.k)
        cands, _ = rank_candidates(row[0][:n + 1], row[1][:n + 1], row[2][:n + 1], ctx[-1], n)
        return best_chain(ctx[-1], cands, pool, s, k, rule)[0]
    return draft


def replay(cases: list[Case], draft, k: int) -> dict:
    """vLLM's mean accepted length (drafted steps), tokens per step (all steps), drafted steps."""
    drafted = accepted = steps = tokens = 0
    for cid, c in enumerate(cases):
        full, p = c.prompt + c.output, len(c.prompt) + 1  # the prefill sampled the first token
        steps += 1
        while p < len(full):
            d = draft(cid, full[:p], c.rows[p - 2])  # row p - 2 chose token p - 1, the last one
            a = next((j for j, (x, y) in enumerate(zip(d, full[p:p + k])) if x != y), min(len(d), len(full) - p))
            drafted, accepted, steps, p = drafted + bool(d), accepted + a, steps + 1, p + a + 1
        tokens += len(c.output)
    return {"mean_accepted_length": 1 + accepted / drafted if drafted else None,
            "tokens_per_step": tokens / steps, "drafted_steps": drafted}


def questions_of(path: Path, per_category: int, skip_bench: bool) -> list[dict]:
    per, out = defaultdict(int), []
    for line in path.read_text().splitlines():
        q = json.loads(line)
        if (skip_bench and q["question_id"] in BENCH_IDS) or per[q["category"]] >= per_category:
            continue
        per[q["category"]] += 1
        out.append(q)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/chain_replay.py")
    p.add_argument("--questions", default=str(ROOT.parent / "shared" / "data" / "spec_bench" / "question.jsonl"))
    p.add_argument("--per-category", type=int, default=4)
    p.add_argument("--skip-bench-questions", action="store_true", help="leave out the vLLM bench's 13")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--k", type=int, default=5, help="num_speculative_tokens")
    p.add_argument("--rules", default="default;precise", help="proposer rules, ';' between them")
    args = p.parse_args(argv)
    s = DecodeSettings()
    cases = greedy_cases(questions_of(Path(args.questions), args.per_category, args.skip_bench_questions),
                         args.max_new_tokens, s.k)
    base = replay(cases, lambda cid, ctx, row: ngram_draft(ctx, args.k), args.k)
    print(f"{len(cases)} questions, {args.max_new_tokens} tokens, K = {args.k}\n")
    print("| drafter | mean accepted length | x ngram | tokens/step | x ngram | drafted steps |\n|---|---|---|---|---|---|")
    for name, r in [("ngram", base)] + [(t, replay(cases, proposer(rule_of(t), s, args.k), args.k))
                                        for t in args.rules.split(";")]:
        mal = r["mean_accepted_length"] or 0
        print(f"| {name} | {mal:.3f} | {mal / base['mean_accepted_length']:.3f} | {r['tokens_per_step']:.3f} "
              f"| {r['tokens_per_step'] / base['tokens_per_step']:.3f} | {r['drafted_steps']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
