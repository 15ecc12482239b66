"""SuffixDecoding's output tree across requests: the same questions decoded twice in one process.

    .venv/bin/python scripts/suffix_second_pass.py --questions data/spec_bench_subset.jsonl \
        --categories coding,extraction --limit-per-category 1

The first pass starts from an empty output tree (a fresh profile); the second finds the first
pass's answers there. For each pass: tokens per forward pass, and the share of accepted draft
tokens drawn from each tree; every run is checked equal to vanilla greedy, token for token.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from logitspec.bench.questions import load_questions
from logitspec.core.profile import fresh_profile
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.drafters.suffix import OUTPUT_TREE, PROMPT_TREE
from logitspec.models import load_model


def one_pass(lm, prompts: list[list[int]], s: DecodeSettings, want: list[list[int]]) -> dict:
    tokens = passes = 0
    origins = {PROMPT_TREE: 0, OUTPUT_TREE: 0}
    for prompt, ref in zip(prompts, want):
        steps = list(decode(lm.model, prompt, "suffix", s, lm.eos_ids))
        got = [t for st in steps for t in st.tokens]
        if got != ref:
            raise SystemExit("SuffixDecoding differs from vanilla greedy: not lossless")
        tokens += len(got)
        passes += sum(st.forward for st in steps)
        for st in steps:
            for i in st.accepted_path[1:]:
                origins[st.tree[i].origin] += 1
    drafted = sum(origins.values()) or 1
    return {"tokens_per_pass": tokens / passes, "prompt_tree": origins[PROMPT_TREE] / drafted,
            "output_tree": origins[OUTPUT_TREE] / drafted}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", required=True)
    p.add_argument("--categories")
    p.add_argument("--limit-per-category", type=int, default=1)
    p.add_argument("--max-new-tokens", type=int, default=128)
    a = p.parse_args()
    from pathlib import Path

    qs = load_questions(Path(a.questions), a.categories.split(",") if a.categories else None, a.limit_per_category)
    lm = load_model("bundled")
    s = replace(DecodeSettings(), max_new_tokens=a.max_new_tokens, share_prefill=False)
    prompts = [lm.encode_chat(q["turns"][0]) for q in qs]
    want = [[t for st in decode(lm.model, pr, "vanilla", s, lm.eos_ids) for t in st.tokens] for pr in prompts]
    fresh_profile(lm.model)
    for n in (1, 2):
        r = one_pass(lm, prompts, s, want)
        print(f"pass {n}: {r['tokens_per_pass']:.2f} tokens per pass; accepted drafts from the prompt tree "
              f"{r['prompt_tree']:.0%}, from the output tree {r['output_tree']:.0%} ({len(qs)} questions, lossless)")


if __name__ == "__main__":
    main()
